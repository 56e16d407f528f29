package pgserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// confFile holds the settings of the current run; postgresql.conf includes
// it, and every start rewrites it (the port changes from run to run).
const confFile = "sundial.conf"

const includeLine = "include_if_exists = '" + confFile + "'"

// maxSocketPath leaves room for "/.s.PGSQL.65535" in the 108 bytes that a
// unix socket path may have.
const maxSocketPath = 90

type cluster struct {
	dataDir string
	bin     binaries
	user    *osUser // nil: run as ourselves
	port    int
	log     *slog.Logger
	// syncStandby makes commits wait for a standby (Options.SynchronousStandby).
	syncStandby bool
	// archiveDir receives the completed WAL segments (Options.ArchiveDir).
	archiveDir string
	// killed says Kill ended the postmaster: there is nothing left to stop,
	// though pg_ctl may think otherwise (see Kill).
	killed atomic.Bool
}

func (c *cluster) url() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// startCluster prepares opts.DataDir (initdb when empty) and starts the
// server on a free port, or adopts it when it is already running.
func startCluster(ctx context.Context, opts Options) (*cluster, error) {
	dir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, err
	}
	c := &cluster{dataDir: dir, log: opts.Log, syncStandby: opts.SynchronousStandby}
	if c.archiveDir, err = archiveDir(opts.ArchiveDir); err != nil {
		return nil, err
	}
	if c.bin, err = findBinaries(ctx, opts.searchPath, opts.libRoot, c.existingVersion()); err != nil {
		return nil, err
	}
	if err := c.launch(ctx, opts.Durable, func() error { return c.initdb(ctx, opts.Durable) }); err != nil {
		return nil, err
	}
	return c, nil
}

// launch prepares the data folder, fills it with create when it holds no
// cluster yet, and starts the server (or adopts the running one).
func (c *cluster) launch(ctx context.Context, durable bool, create func() error) error {
	if err := c.prepareDir(ctx); err != nil {
		return err
	}
	if c.archiveDir != "" {
		if err := c.privateDir(ctx, c.archiveDir); err != nil {
			return fmt.Errorf("WAL archive: %w", err)
		}
	}
	if c.existingVersion() == "" {
		if err := create(); err != nil {
			return err
		}
	}
	if port, ok := c.runningPort(ctx); ok {
		c.port = port
		c.log.Info("postgres: adopted the cluster already running", "dir", c.dataDir, "port", port)
	} else if err := c.start(ctx, durable); err != nil {
		return err
	}
	if err := Ping(ctx, c.url()); err != nil {
		return fmt.Errorf("cluster in %s started but does not answer: %w", c.dataDir, err)
	}
	return nil
}

// existingVersion is the major version of the cluster in dataDir, or "".
func (c *cluster) existingVersion() string {
	b, err := os.ReadFile(filepath.Join(c.dataDir, "PG_VERSION"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func (c *cluster) prepareDir(ctx context.Context) error {
	if err := c.privateDir(ctx, c.dataDir); err != nil {
		return fmt.Errorf("data folder: %w", err)
	}
	return nil
}

// privateDir creates dir, private, for the user that runs the cluster:
// the data folder, the WAL archive the archiver writes, the folder
// pg_basebackup writes a backup into.
func (c *cluster) privateDir(ctx context.Context, dir string) error {
	// Parents stay open to others (the cluster may run as another user);
	// the folder itself must be private, or postgres refuses a data folder.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	u, err := serviceUser(ctx, c.log)
	if err != nil || u == nil {
		return err
	}
	c.user = u
	if err := u.reach(dir, c.log); err != nil {
		return err
	}
	if err := u.chownTree(dir); err != nil {
		return fmt.Errorf("give %s to user %s: %w", dir, u.name, err)
	}
	return nil
}

func (c *cluster) initdb(ctx context.Context, durable bool) error {
	c.log.Info("postgres: creating a cluster", "dir", c.dataDir, "version", c.bin.major, "bin", c.bin.dir)
	args := []string{"-D", c.dataDir, "--username=postgres", "--auth=trust", "--encoding=UTF8", "--locale=C"}
	if !durable {
		args = append(args, "--no-sync") // saves seconds; a throwaway cluster need not survive a crash
	}
	_, err := c.run(ctx, "initdb", args...)
	return err
}

// includeConf makes postgresql.conf read confFile, once.
func (c *cluster) includeConf() error {
	path := filepath.Join(c.dataDir, "postgresql.conf")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if bytes.Contains(b, []byte(includeLine)) {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "\n# Added by Sundial: the settings of each run, rewritten at every start.\n%s\n", includeLine)
	return errors.Join(err, f.Close())
}

// runningPort reports the port of a server already running on dataDir
// (left over by a run that was killed), read from postmaster.pid.
func (c *cluster) runningPort(ctx context.Context) (int, bool) {
	if _, err := c.run(ctx, "pg_ctl", "status", "-D", c.dataDir); err != nil {
		return 0, false
	}
	b, err := os.ReadFile(filepath.Join(c.dataDir, "postmaster.pid"))
	if err != nil {
		return 0, false
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 4 {
		return 0, false
	}
	port, err := strconv.Atoi(strings.TrimSpace(lines[3]))
	return port, err == nil
}

// startAttempts bounds the starts on a fresh port: the free port found is
// released before the server binds it, and another process on the machine
// may take it in between.
const startAttempts = 5

func (c *cluster) start(ctx context.Context, durable bool) error {
	if err := c.includeConf(); err != nil {
		return err
	}
	logFile := filepath.Join(c.dataDir, "server.log")
	var err error
	for range startAttempts {
		var port int
		if port, err = freePort(); err != nil {
			return err
		}
		c.port = port
		if err = c.writeConf(durable); err != nil {
			return err
		}
		logged := fileSize(logFile)
		if _, err = c.run(ctx, "pg_ctl", "start", "-D", c.dataDir, "-l", logFile, "-w", "-t", "60", "-s"); err == nil {
			c.log.Info("postgres: started a cluster", "dir", c.dataDir, "port", port, "durable", durable)
			return nil
		}
		err = fmt.Errorf("%w\nlast lines of %s:\n%s", err, logFile, tail(logFile, 20))
		if !portTaken(logFile, logged) {
			return err
		}
		c.log.Info("postgres: the port was taken before the server bound it; trying another", "port", port)
	}
	return err
}

// portTaken reports whether the server's log, after offset, says another
// process holds its port.
func portTaken(logFile string, offset int64) bool {
	b, err := os.ReadFile(logFile)
	if err != nil || int64(len(b)) < offset {
		return false
	}
	return bytes.Contains(b[offset:], []byte("Address already in use"))
}

func fileSize(path string) int64 {
	info, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return info.Size()
}

func (c *cluster) writeConf(durable bool) error {
	socketDir := c.dataDir
	if len(socketDir) > maxSocketPath {
		socketDir = "" // TCP only: the path would not fit in a socket address.
	}
	sync := "off"
	if durable {
		sync = "on"
	}
	conf := fmt.Sprintf(`# Written by Sundial at every start; edits are lost.
listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = '%s'
fsync = %s
synchronous_commit = %s
full_page_writes = %s
# Test suites run many packages at once, each with its own pools.
max_connections = 300
# A standby may copy the cluster and stream its log (replica is the
# default; written out because failover relies on it).
wal_level = replica
`, c.port, strings.ReplaceAll(socketDir, "'", "''"), sync, sync, sync)
	if c.syncStandby {
		// A commit returns once a standby has flushed it, so a failover to
		// that standby loses nothing the server answered for.
		conf += "synchronous_standby_names = '*'\n"
	}
	if c.archiveDir != "" {
		conf += archiveConf(c.archiveDir)
	}
	path := filepath.Join(c.dataDir, confFile)
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		return err
	}
	if c.user != nil {
		return os.Chown(path, int(c.user.uid), int(c.user.gid))
	}
	return nil
}

func (c *cluster) stop(ctx context.Context) error {
	if _, running := c.runningPort(ctx); !running || c.killed.Load() {
		return nil // stopped by someone else, e.g. another Server that adopted it
	}
	if _, err := c.run(ctx, "pg_ctl", "stop", "-D", c.dataDir, "-m", "fast", "-w", "-t", "60", "-s"); err != nil {
		return err
	}
	c.log.Info("postgres: stopped the cluster", "dir", c.dataDir)
	return nil
}

// restart stops the server in the given mode, calls whileDown, and starts
// it again with the settings of the last start, so it comes back on the
// same port.
func (c *cluster) restart(ctx context.Context, mode StopMode, whileDown func()) error {
	if _, err := c.run(ctx, "pg_ctl", "stop", "-D", c.dataDir, "-m", string(mode), "-w", "-t", "60", "-s"); err != nil {
		return err
	}
	if whileDown != nil {
		whileDown()
	}
	logFile := filepath.Join(c.dataDir, "server.log")
	if _, err := c.run(ctx, "pg_ctl", "start", "-D", c.dataDir, "-l", logFile, "-w", "-t", "60", "-s"); err != nil {
		return fmt.Errorf("%w\nlast lines of %s:\n%s", err, logFile, tail(logFile, 20))
	}
	c.log.Info("postgres: restarted the cluster", "dir", c.dataDir, "port", c.port)
	return nil
}

// run runs one of PostgreSQL's programs as the cluster's user and returns
// its output; the error carries the output, which says what went wrong.
func (c *cluster) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin.dir, name), args...)
	cmd.Dir = "/" // the user may not be allowed into our working folder
	cmd.Env = postgresEnv()
	if c.user != nil {
		cmd.SysProcAttr = c.user.credential()
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// The server inherits nothing of ours (pg_ctl redirects it to its log),
	// but never hang on a pipe that something might keep open.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.Bytes(), nil
}

// postgresEnv is our environment without the PG* variables, which would
// otherwise change where pg_ctl and postgres look.
func postgresEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			env = append(env, kv)
		}
	}
	return append(env, "LC_ALL=C")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail returns the last n lines of a file, for error messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
