package natstest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ClusterName is the name of every test cluster.
const ClusterName = "sundial-test"

// Node is one server of a JetStream cluster on this machine. Its ports are
// fixed before any server starts, so that each can be given every route.
type Node struct {
	Name        string
	Port        int
	ClusterPort int
	// MonitorPort serves /jsz and /healthz.
	MonitorPort int
	StoreDir    string
}

// ClientURL is the node's client address.
func (n Node) ClientURL() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.Port) }

// MonitorURL is the base of the node's monitoring endpoints.
func (n Node) MonitorURL() string { return fmt.Sprintf("http://127.0.0.1:%d", n.MonitorPort) }

// routeURL is where the other nodes reach this one.
func (n Node) routeURL() string { return fmt.Sprintf("nats-route://127.0.0.1:%d", n.ClusterPort) }

// PlanCluster names n nodes (n1, n2, ...) and gives them free ports and
// store folders in the test's temporary directory.
func PlanCluster(t testing.TB, n int) []Node {
	t.Helper()
	ports := freePorts(t, 3*n)
	nodes := make([]Node, n)
	for i := range nodes {
		nodes[i] = Node{
			Name: fmt.Sprintf("n%d", i+1), Port: ports[3*i], ClusterPort: ports[3*i+1], MonitorPort: ports[3*i+2],
			StoreDir: t.TempDir(),
		}
	}
	return nodes
}

// freePorts finds n ports free at once on 127.0.0.1. Another process may
// take one before the server listens on it: StartCluster then starts its
// cluster again on other ports; a test that runs nats-server processes on
// a plan sees the process exit.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("natstest: free port: %v", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// ClientURLs is every node's client address, comma-separated: what
// SUNDIAL_NATS_URL holds for a cluster.
func ClientURLs(nodes []Node) string {
	urls := make([]string, len(nodes))
	for i, n := range nodes {
		urls[i] = n.ClientURL()
	}
	return strings.Join(urls, ",")
}

// routes is every node's route URL.
func routes(nodes []Node) []string {
	urls := make([]string, len(nodes))
	for i, n := range nodes {
		urls[i] = n.routeURL()
	}
	return urls
}

// Config is the nats-server configuration file of node in the cluster of
// nodes, for a server run as a process.
func Config(node Node, nodes []Node) string {
	return fmt.Sprintf(`server_name: %q
listen: "127.0.0.1:%d"
http: "127.0.0.1:%d"
max_payload: %d
jetstream {
  store_dir: %q
}
cluster {
  name: %q
  listen: "127.0.0.1:%d"
  routes: [%s]
}
`, node.Name, node.Port, node.MonitorPort, DefaultMaxPayload, node.StoreDir, ClusterName, node.ClusterPort,
		`"`+strings.Join(routes(nodes), `", "`)+`"`)
}

// Cluster is a JetStream cluster of in-process servers.
type Cluster struct {
	Nodes   []Node
	Servers []*server.Server
}

// StartCluster runs a cluster of n in-process servers, waits until
// JetStream has elected a meta leader, and shuts it down when t ends. The
// ports are found free before any server starts (each is given every
// route), so another process may take one meanwhile: a cluster whose
// nodes do not all come up is shut down and started again on new ports,
// up to clusterAttempts times.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	for attempt := 1; ; attempt++ {
		c, err := startCluster(t, PlanCluster(t, n))
		if err == nil {
			c.waitForMetaLeader(t)
			return c
		}
		if attempt == clusterAttempts {
			t.Fatalf("natstest: %v", err)
		}
		t.Logf("natstest: %v; starting the cluster again on other ports", err)
	}
}

// clusterAttempts bounds StartCluster's tries.
const clusterAttempts = 3

// startCluster starts the planned nodes' servers and waits until each
// takes connections; if one does not, it shuts them all down.
func startCluster(t testing.TB, nodes []Node) (*Cluster, error) {
	t.Helper()
	c := &Cluster{Nodes: nodes}
	var fatals []<-chan string
	shutdown := func() {
		for _, s := range c.Servers {
			s.Shutdown()
			s.WaitForShutdown()
		}
	}
	for _, node := range c.Nodes {
		s, err := server.NewServer(&server.Options{
			ServerName: node.Name,
			Host:       "127.0.0.1",
			Port:       node.Port,
			HTTPHost:   "127.0.0.1",
			HTTPPort:   node.MonitorPort,
			JetStream:  true,
			StoreDir:   node.StoreDir,
			MaxPayload: DefaultMaxPayload,
			Cluster:    server.ClusterOpts{Name: ClusterName, Host: "127.0.0.1", Port: node.ClusterPort},
			Routes:     server.RoutesFromStr(strings.Join(routes(c.Nodes), ",")),
			NoLog:      true,
			NoSigs:     true,
		})
		if err != nil {
			shutdown()
			return nil, fmt.Errorf("cluster node %s: %w", node.Name, err)
		}
		c.Servers = append(c.Servers, s)
		fatals = append(fatals, launch(t, s))
	}
	for i, s := range c.Servers {
		if err := awaitReady(s, fatals[i]); err != nil {
			shutdown()
			return nil, fmt.Errorf("cluster node %s: %w", s.Name(), err)
		}
	}
	return c, nil
}

// launch starts s with a logger that reports its fatal error on the
// channel it returns, and shuts s down when t ends.
func launch(t testing.TB, s *server.Server) <-chan string {
	fatal := &fatalLogger{failed: make(chan string, 1)}
	s.SetLogger(fatal, false, false)
	go s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return fatal.failed
}

// awaitReady waits until s takes connections, at most readyTimeout, or
// until it reports that it cannot start (a port it cannot listen on).
func awaitReady(s *server.Server, failed <-chan string) error {
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) {
		if s.ReadyForConnections(100 * time.Millisecond) {
			return nil
		}
		select {
		case msg := <-failed:
			return errors.New(msg)
		default:
		}
	}
	return fmt.Errorf("not ready within %s", readyTimeout)
}

// fatalLogger keeps a server quiet but for the first fatal error, which a
// server that cannot start reports (and then stops starting).
type fatalLogger struct {
	failed chan string
}

func (l *fatalLogger) Fatalf(format string, v ...any) {
	select {
	case l.failed <- fmt.Sprintf(format, v...):
	default:
	}
}
func (*fatalLogger) Noticef(string, ...any) {}
func (*fatalLogger) Warnf(string, ...any)   {}
func (*fatalLogger) Errorf(string, ...any)  {}
func (*fatalLogger) Debugf(string, ...any)  {}
func (*fatalLogger) Tracef(string, ...any)  {}

// waitForMetaLeader waits, at most 30 s, until a JetStream request
// succeeds: the meta group has a leader.
func (c *Cluster) waitForMetaLeader(t testing.TB) {
	t.Helper()
	_, js := c.Connect(t)
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-deadline:
			t.Fatalf("natstest: no JetStream meta leader within 30s: %v", err)
		case <-tick.C:
		}
	}
}

// ClientURL is every server's address, comma-separated.
func (c *Cluster) ClientURL() string { return ClientURLs(c.Nodes) }

// Connect opens a client connection to the cluster and its JetStream
// context, closed when t ends.
func (c *Cluster) Connect(t testing.TB) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	return connect(t, c.ClientURL())
}
