package pgserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// StartStandby copies a cluster that Ensure started into dataDir with
// pg_basebackup -R and starts the copy on a port of its own as a hot
// standby streaming from it; Promote turns it into a primary. A folder
// that already holds the copy is started as it is.
func (s *Server) StartStandby(ctx context.Context, dataDir string, opts Options) (*Server, error) {
	if s == nil || s.cluster == nil {
		return nil, errors.New("pgserver: only a cluster started by Ensure can have a standby")
	}
	opts = opts.withDefaults()
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, err
	}
	primary := s.cluster
	c := &cluster{dataDir: dir, bin: primary.bin, log: opts.Log}
	err = c.launch(ctx, opts.Durable, func() error {
		c.log.Info("postgres: copying the primary for a standby", "dir", dir, "primary_port", primary.port)
		_, err := c.run(ctx, "pg_basebackup", "-D", dir, "-h", "127.0.0.1", "-p", strconv.Itoa(primary.port),
			"-U", "postgres", "-R", "-X", "stream", "-c", "fast")
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("standby in %s: %w", dir, err)
	}
	return &Server{URL: c.url(), Source: Cluster, DataDir: dir, cluster: c}, nil
}

// Promote ends a standby's recovery (pg_ctl promote) and waits until it
// accepts writes.
func (s *Server) Promote(ctx context.Context) error {
	if s == nil || s.cluster == nil {
		return errors.New("pgserver: only a standby started by StartStandby can be promoted")
	}
	_, err := s.cluster.run(ctx, "pg_ctl", "promote", "-D", s.cluster.dataDir, "-w", "-t", "60", "-s")
	return err
}

// Kill sends SIGKILL to the server's postmaster, as a crash of the machine
// would end it: nothing is shut down in order. Its sessions end as they
// notice (an idle one at once), and it is not restarted: Stop then does
// nothing. (Where nobody reaps orphans, as in some containers, the dead
// postmaster stays a zombie that pg_ctl takes for a running server.)
func (s *Server) Kill() error {
	if s == nil || s.cluster == nil {
		return errors.New("pgserver: only a cluster started by Ensure can be killed")
	}
	b, err := os.ReadFile(filepath.Join(s.cluster.dataDir, "postmaster.pid"))
	if err != nil {
		return fmt.Errorf("postmaster pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		return fmt.Errorf("postmaster pid: %w", err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill postmaster %d: %w", pid, err)
	}
	s.cluster.killed.Store(true)
	s.cluster.log.Info("postgres: killed the postmaster", "dir", s.cluster.dataDir, "pid", pid)
	return nil
}

// Addr is the server's host:port, for a connection string naming several
// servers.
func (s *Server) Addr() string {
	if s == nil || s.cluster == nil {
		return ""
	}
	return fmt.Sprintf("127.0.0.1:%d", s.cluster.port)
}
