package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/tests/internal/proc"
)

// natsCluster is three nats-server processes forming one JetStream
// cluster, each with its own store, ports and configuration file.
type natsCluster struct {
	nodes []natstest.Node
	confs []string
	procs []*proc.Process
	// nc is the test's own connection, to every server; it waits for
	// them to listen, and reconnects to the survivors of a kill.
	nc *nats.Conn
	js jetstream.JetStream
}

// startNATS writes the configuration files, starts the servers and waits
// until JetStream answers (a meta leader is elected).
func startNATS(t *testing.T) *natsCluster {
	t.Helper()
	c := &natsCluster{nodes: natstest.PlanCluster(t, 3)}
	dir := t.TempDir()
	for _, n := range c.nodes {
		conf := filepath.Join(dir, n.Name+".conf")
		require.NoError(t, os.WriteFile(conf, []byte(natstest.Config(n, c.nodes)), 0o600))
		c.confs = append(c.confs, conf)
	}
	c.procs = make([]*proc.Process, len(c.nodes))
	for i := range c.nodes {
		c.start(t, i)
	}
	var err error
	c.nc, err = nats.Connect(c.URL(), nats.Name("cluster-test"), nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(c.nc.Close)
	c.js, err = jetstream.New(c.nc)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := c.js.AccountInfo(ctx)
		return err == nil
	}, 60*time.Second, 100*time.Millisecond, "the cluster never elected a JetStream meta leader")
	return c
}

// URL is every server's client address: SUNDIAL_NATS_URL.
func (c *natsCluster) URL() string { return natstest.ClientURLs(c.nodes) }

// start runs node i's server on its configuration (and its store, kept
// across a kill).
func (c *natsCluster) start(t *testing.T, i int) {
	t.Helper()
	c.procs[i] = proc.Start(t, "nats-"+c.nodes[i].Name, binaries.Path(t, "nats-server"), nil, "-c", c.confs[i])
}

// kill sends SIGKILL to node i's server and waits for it to be gone.
func (c *natsCluster) kill(i int) { c.procs[i].Kill() }

// index returns the index of the node named name.
func (c *natsCluster) index(t *testing.T, name string) int {
	t.Helper()
	for i, n := range c.nodes {
		if n.Name == name {
			return i
		}
	}
	t.Fatalf("no node named %q", name)
	return -1
}

// getJSON reads a monitoring endpoint of node i.
func (c *natsCluster) getJSON(i int, path string, out any) (int, error) {
	client := http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(c.nodes[i].MonitorURL() + path)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if out == nil {
		return resp.StatusCode, nil
	}
	return resp.StatusCode, json.NewDecoder(resp.Body).Decode(out)
}

// healthy reports whether node i's /healthz says its JetStream is current
// (it has caught up with the meta group and its streams and consumers).
func (c *natsCluster) healthy(i int) bool {
	status, err := c.getJSON(i, "/healthz", nil)
	return err == nil && status == http.StatusOK
}

// metaLeader asks the live nodes' /jsz which server leads the JetStream
// meta group.
func (c *natsCluster) metaLeader() (string, error) {
	var lastErr error
	for i := range c.nodes {
		var jsz struct {
			Meta *struct {
				Leader string `json:"leader"`
			} `json:"meta_cluster"`
		}
		if _, err := c.getJSON(i, "/jsz", &jsz); err != nil {
			lastErr = err
			continue
		}
		if jsz.Meta != nil && jsz.Meta.Leader != "" {
			return jsz.Meta.Leader, nil
		}
	}
	return "", fmt.Errorf("no node names a meta leader: %v", lastErr)
}

// group is a stream, or a durable consumer of it, each a Raft group with
// its own leader.
type group struct {
	stream, consumer string
}

func (g group) String() string {
	if g.consumer == "" {
		return "stream " + g.stream
	}
	return "consumer " + g.stream + "/" + g.consumer
}

// groups are Sundial's streams and the consumers this suite runs (no
// notifier runs: no alerts consumer).
var groups = []group{
	{stream: event.StreamDue}, {stream: event.StreamResults}, {stream: event.StreamAlerts},
	{stream: event.StreamDue, consumer: event.ConsumerDispatcher},
	{stream: event.StreamResults, consumer: event.ConsumerScheduler},
}

// leader reads a group's leader with the JetStream API (STREAM.INFO,
// CONSUMER.INFO).
func (c *natsCluster) leader(ctx context.Context, g group) (string, error) {
	s, err := c.js.Stream(ctx, g.stream)
	if err != nil {
		return "", err
	}
	if g.consumer == "" {
		info := s.CachedInfo()
		if info.Cluster == nil {
			return "", fmt.Errorf("%s: no cluster info", g)
		}
		return info.Cluster.Leader, nil
	}
	cons, err := s.Consumer(ctx, g.consumer)
	if err != nil {
		return "", err
	}
	info := cons.CachedInfo()
	if info.Cluster == nil {
		return "", fmt.Errorf("%s: no cluster info", g)
	}
	return info.Cluster.Leader, nil
}

// moveLeader asks a group's leader to step down in favour of server name
// ($JS.API.STREAM.LEADER.STEPDOWN and CONSUMER.LEADER.STEPDOWN with a
// preferred placement), unless name leads it already.
func (c *natsCluster) moveLeader(ctx context.Context, g group, name string) error {
	leader, err := c.leader(ctx, g)
	if err != nil || leader == name {
		return err
	}
	subject := "$JS.API.STREAM.LEADER.STEPDOWN." + g.stream
	if g.consumer != "" {
		subject = "$JS.API.CONSUMER.LEADER.STEPDOWN." + g.stream + "." + g.consumer
	}
	msg, err := c.nc.RequestWithContext(ctx, subject, []byte(`{"placement":{"preferred":"`+name+`"}}`))
	if err != nil {
		return fmt.Errorf("%s step down: %w", g, err)
	}
	var resp struct {
		Success bool `json:"success"`
		Error   *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return fmt.Errorf("%s step down: %w", g, err)
	}
	if !resp.Success {
		return fmt.Errorf("%s step down: %s", g, msg.Data)
	}
	return nil
}

// lead makes server name the leader of every group and waits until each
// reports it.
func (c *natsCluster) lead(t *testing.T, name string) {
	t.Helper()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, g := range groups {
			if err := c.moveLeader(ctx, g, name); err != nil {
				t.Logf("move leader: %v", err)
				return false
			}
		}
		for _, g := range groups {
			if leader, err := c.leader(ctx, g); err != nil || leader != name {
				return false
			}
		}
		return true
	}, 30*time.Second, 200*time.Millisecond, "server %s never led every stream and consumer", name)
}

// leaders describes who leads what, for the log.
func (c *natsCluster) leaders() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	meta, err := c.metaLeader()
	out := fmt.Sprintf("meta %s", meta)
	if err != nil {
		out = fmt.Sprintf("meta ? (%v)", err)
	}
	for _, g := range groups {
		leader, err := c.leader(ctx, g)
		if err != nil {
			leader = fmt.Sprintf("? (%v)", err)
		}
		out += fmt.Sprintf(", %s %s", g, leader)
	}
	return out
}

// dueMessages is how many messages the due stream holds: once zero, with
// every hook completed, no delivery can come any more.
func (c *natsCluster) dueMessages(ctx context.Context) (uint64, error) {
	s, err := c.js.Stream(ctx, event.StreamDue)
	if err != nil {
		return 0, err
	}
	return s.CachedInfo().State.Msgs, nil
}
