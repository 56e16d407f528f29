// Package natstest runs a real NATS server with JetStream inside the test
// process, with its store in the test's temporary directory, or a
// JetStream cluster of them; and plans clusters (names, ports, store
// folders, configuration files) for tests that run nats-server processes.
package natstest

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Server is a running in-process NATS server.
type Server struct {
	*server.Server
	StoreDir string
	// maxPayload is kept across restarts.
	maxPayload int32
}

// Options for Start.
type Options struct {
	// StoreDir keeps JetStream's files; default t.TempDir(). Pass the same
	// folder to a restarted server to keep its data, or a new one to lose it.
	StoreDir string
	// Port to listen on; 0 picks a free one (-1 in nats-server terms).
	Port int
	// MaxPayload is the server's max_payload in bytes; 0 means
	// DefaultMaxPayload. Pass server.MAX_PAYLOAD_SIZE (1 MiB) for
	// nats-server's own default.
	MaxPayload int32
}

// readyTimeout bounds the wait for a server to take connections: a node of
// a JetStream cluster, on a machine busy with every package's tests at once
// as CI runs them, may take many seconds; the bound is there to end a test
// whose server will never start, not to judge the machine's speed.
const readyTimeout = 30 * time.Second

// DefaultMaxPayload is the max_payload of a test server unless Options say
// otherwise: that of make run and docker-compose.
const DefaultMaxPayload = 8 << 20

// Start runs a JetStream server on 127.0.0.1 and shuts it down when t ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.StoreDir == "" {
		opts.StoreDir = t.TempDir()
	}
	port := opts.Port
	if port == 0 {
		port = server.RANDOM_PORT
	}
	maxPayload := opts.MaxPayload
	if maxPayload == 0 {
		maxPayload = DefaultMaxPayload
	}
	s, err := server.NewServer(&server.Options{
		Host:       "127.0.0.1",
		Port:       port,
		JetStream:  true,
		StoreDir:   opts.StoreDir,
		MaxPayload: maxPayload,
		NoLog:      true,
		NoSigs:     true,
	})
	if err != nil {
		t.Fatalf("natstest: %v", err)
	}
	if err := awaitReady(s, launch(t, s)); err != nil {
		t.Fatalf("natstest: server on port %d: %v", port, err)
	}
	return &Server{Server: s, StoreDir: opts.StoreDir, maxPayload: maxPayload}
}

// Restart shuts the server down and starts a new one on the same port, so
// that clients reconnect to the address they know. With wipe the JetStream
// store is deleted in between, as if the server had lost its disk: streams,
// consumers and messages are gone. It returns the new server (the old value
// must not be used any more), shut down when t ends like Start's.
func (s *Server) Restart(t testing.TB, wipe bool) *Server {
	t.Helper()
	addr, ok := s.Addr().(*net.TCPAddr)
	if !ok {
		t.Fatalf("natstest: restart: server has no TCP address")
	}
	s.Shutdown()
	s.WaitForShutdown()
	if wipe {
		if err := os.RemoveAll(s.StoreDir); err != nil {
			t.Fatalf("natstest: wipe store: %v", err)
		}
	}
	return Start(t, Options{StoreDir: s.StoreDir, Port: addr.Port, MaxPayload: s.maxPayload})
}

// Connect opens a client connection and its JetStream context, closed when t ends.
func (s *Server) Connect(t testing.TB) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	return connect(t, s.ClientURL())
}

// connect opens a client connection to url and its JetStream context,
// closed when t ends.
func connect(t testing.TB, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatalf("natstest: connect: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("natstest: jetstream: %v", err)
	}
	return nc, js
}

// StreamMessages returns every message a stream holds, oldest first.
func StreamMessages(t testing.TB, js jetstream.JetStream, stream string) []*jetstream.RawStreamMsg {
	t.Helper()
	ctx := context.Background()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatalf("natstest: stream %s: %v", stream, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatalf("natstest: stream %s info: %v", stream, err)
	}
	if info.State.Msgs == 0 {
		return nil
	}
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		// A work queue has gaps where messages were acknowledged.
		if msg, err := s.GetMsg(ctx, seq); err == nil {
			out = append(out, msg)
		}
	}
	return out
}
