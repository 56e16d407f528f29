// Package broker runs an embedded NATS server with JetStream for running
// Sundial on one machine, so that `make run` needs no NATS installation.
package broker

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// DefaultPort is NATS's usual client port, tried first.
const DefaultPort = 4222

// portsTried bounds the search for a free port after the preferred one.
const portsTried = 100

// Options for Start.
type Options struct {
	// StoreDir keeps JetStream's streams between runs.
	StoreDir string
	// Port is tried first, then the next ones up; 0 takes any free port.
	Port int
}

// Server is a running embedded NATS server.
type Server struct {
	srv *server.Server
	// URL is where clients connect: nats://127.0.0.1:<port>.
	URL string
}

// Start runs the server on 127.0.0.1 and waits until it accepts clients.
func Start(opts Options) (*Server, error) {
	port, err := pickPort(opts.Port)
	if err != nil {
		return nil, err
	}
	srv, err := server.NewServer(&server.Options{
		ServerName: "sundial-local",
		Host:       "127.0.0.1",
		Port:       port,
		JetStream:  true,
		StoreDir:   opts.StoreDir,
		MaxPayload: 8 << 20, // a 1 MiB hook payload plus headers fits with room to spare
		NoLog:      true,
		NoSigs:     true, // the runner handles signals and shuts us down in order
	})
	if err != nil {
		return nil, fmt.Errorf("nats server: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return nil, errors.New("nats server: not ready within 10s")
	}
	return &Server{srv: srv, URL: srv.ClientURL()}, nil
}

// Shutdown stops the server and waits until it has stopped.
func (s *Server) Shutdown() {
	s.srv.Shutdown()
	s.srv.WaitForShutdown()
}

// pickPort returns preferred if it is free, else the next free one above
// it, else any free port.
func pickPort(preferred int) (int, error) {
	if preferred > 0 {
		for p := preferred; p < preferred+portsTried && p <= 65535; p++ {
			if free(p) {
				return p, nil
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port for nats: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func free(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}
