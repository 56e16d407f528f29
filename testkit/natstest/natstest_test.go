package natstest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/testkit/natstest"
)

func TestRestart(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name       string
		wipe       bool
		wantStream bool
	}{
		{name: "keeps the store", wipe: false, wantStream: true},
		{name: "wipes the store", wipe: true, wantStream: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s := natstest.Start(t, natstest.Options{})
			url := s.ClientURL()
			_, js := s.Connect(t)
			_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "KEPT", Subjects: []string{"kept"}})
			require.NoError(t, err)

			restarted := s.Restart(t, tt.wipe)

			require.Equal(t, url, restarted.ClientURL(), "a restarted server listens where the old one did")
			_, js = restarted.Connect(t)
			_, err = js.Stream(ctx, "KEPT")
			if tt.wantStream {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, jetstream.ErrStreamNotFound)
			}
		})
	}
}

func TestMaxPayload(t *testing.T) {
	t.Parallel()
	nc, _ := natstest.Start(t, natstest.Options{}).Connect(t)
	require.Equal(t, int64(natstest.DefaultMaxPayload), nc.MaxPayload())
	s := natstest.Start(t, natstest.Options{MaxPayload: 1 << 20})
	nc, _ = s.Connect(t)
	require.Equal(t, int64(1<<20), nc.MaxPayload(), "nats-server's default")
	nc, _ = s.Restart(t, false).Connect(t)
	require.Equal(t, int64(1<<20), nc.MaxPayload(), "kept across a restart")
}

func TestClusterTakesR3Streams(t *testing.T) {
	t.Parallel()
	c := natstest.StartCluster(t, 3)
	_, js := c.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "R3", Subjects: []string{"r3"}, Replicas: 3})
	require.NoError(t, err)
	info := s.CachedInfo()
	require.Equal(t, natstest.ClusterName, info.Cluster.Name)
	require.Len(t, info.Cluster.Replicas, 2, "a leader and two followers")
}

func TestConfigListsEveryRoute(t *testing.T) {
	t.Parallel()
	nodes := natstest.PlanCluster(t, 3)
	cfg := natstest.Config(nodes[0], nodes)
	for _, n := range nodes {
		require.Contains(t, cfg, fmt.Sprintf("nats-route://127.0.0.1:%d", n.ClusterPort))
	}
	require.Contains(t, cfg, `server_name: "n1"`)
	require.Contains(t, cfg, nodes[0].StoreDir)
	require.Equal(t, 3, strings.Count(natstest.ClientURLs(nodes), "nats://"))
}
