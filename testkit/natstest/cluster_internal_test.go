package natstest

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// A node whose client port another process took before it started does
// not come up: startCluster says which node and why at once, and leaves
// none of the cluster's servers running, so that StartCluster can start
// it again on other ports.
func TestStartClusterReportsANodeThatCannotListen(t *testing.T) {
	t.Parallel()
	nodes := PlanCluster(t, 3)
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(nodes[1].Port))
	require.NoError(t, err, "take node n2's port")
	defer l.Close()

	c, err := startCluster(t, nodes)
	require.Error(t, err, "a cluster started with node n2's port taken: %v", c)
	require.ErrorContains(t, err, "cluster node n2")
	require.ErrorContains(t, err, "address already in use")
	for _, n := range []Node{nodes[0], nodes[2]} {
		free, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(n.Port))
		require.NoError(t, err, "node %s still holds its port", n.Name)
		require.NoError(t, free.Close())
	}
}
