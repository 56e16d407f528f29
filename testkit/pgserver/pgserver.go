// Package pgserver finds a PostgreSQL server for local runs and tests, or
// starts a throwaway cluster with the machine's own PostgreSQL binaries when
// there is none, so that `make run` and `make test` work on a machine that
// has PostgreSQL installed but not running (a fresh CI machine).
//
// The order is: a URL from the environment, then the server on
// 127.0.0.1:5432 (user postgres, trust auth), then a cluster of our own.
// Tests that must take PostgreSQL away (tests/crash) force a cluster of
// their own and Restart it, or Kill it and Promote its standby
// (StartStandby), or back it up and restore it into a new cluster
// (BaseBackup, RestoreBackup), never touching a shared server.
package pgserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sundial-run/sundial/pkg/envconf"
)

// DefaultLocalURL is the administrative URL of the machine's usual server.
const DefaultLocalURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// InstallHint tells people what to do when no server can be found or started.
const InstallHint = "install PostgreSQL server binaries, e.g. apt-get install postgresql"

// Source says where a Server came from.
type Source int

const (
	// FromEnv is a URL taken from an environment variable, used as given.
	FromEnv Source = iota
	// Local is the server already running at Options.LocalURL.
	Local
	// Cluster is a cluster that this package started (or found running in
	// Options.DataDir) and that Stop shuts down.
	Cluster
)

func (s Source) String() string {
	switch s {
	case FromEnv:
		return "environment"
	case Local:
		return "local server"
	case Cluster:
		return "throwaway cluster"
	default:
		return "unknown"
	}
}

// Options say where to look and, failing that, where to start a cluster.
type Options struct {
	// EnvVars are tried in order; the first one set is used as is.
	EnvVars []string
	// Lookup reads the environment; nil means os.LookupEnv.
	Lookup envconf.Lookup
	// LocalURL is the server tried after the environment; default
	// DefaultLocalURL.
	LocalURL string
	// ForceCluster skips EnvVars and LocalURL and always uses a cluster.
	ForceCluster bool
	// DataDir holds the cluster. A cluster already in it is reused (and
	// adopted if it is running), so a caller may keep it between runs.
	DataDir string
	// Durable keeps fsync on. Off (the default) makes tests faster; a crash
	// of the machine may then lose the cluster's data.
	Durable bool
	// SynchronousStandby makes every commit of the cluster wait until a
	// standby (StartStandby) has flushed it: a cluster for failover tests,
	// whose commits block until its standby runs.
	SynchronousStandby bool
	// ArchiveDir turns on continuous archiving: the archiver copies every
	// completed WAL segment there (archive_command), so that a base backup
	// (BaseBackup) can be restored up to the last segment archived
	// (RestoreBackup). The path may hold only letters, digits and / . _ + -:
	// it is written into a shell command.
	ArchiveDir string
	// Log receives one line per step taken; nil discards.
	Log *slog.Logger

	// searchPath and libRoot replace $PATH and /usr/lib/postgresql in tests.
	searchPath string
	libRoot    string
}

// Server is a PostgreSQL server to use.
type Server struct {
	// URL is the administrative URL: for Local and Cluster, user postgres
	// and database postgres; for FromEnv, whatever the variable said.
	URL    string
	Source Source
	// EnvVar names the variable the URL came from (FromEnv only).
	EnvVar string
	// DataDir is the cluster's folder (Cluster only).
	DataDir string

	cluster  *cluster
	stopOnce sync.Once
	stopErr  error
}

// Stop shuts down a cluster that Ensure started or adopted; for other
// sources it does nothing. It is safe to call more than once.
func (s *Server) Stop(ctx context.Context) error {
	if s == nil || s.cluster == nil {
		return nil
	}
	s.stopOnce.Do(func() { s.stopErr = s.cluster.stop(ctx) })
	return s.stopErr
}

// StopMode is how Restart stops the server (pg_ctl stop -m).
type StopMode string

const (
	// Fast rolls back open transactions and closes every session.
	Fast StopMode = "fast"
	// Immediate aborts the server like a crash: sessions vanish without a
	// word and the next start recovers from the write-ahead log.
	Immediate StopMode = "immediate"
)

// Restart stops a cluster that Ensure started, in mode, runs whileDown (nil
// for nothing) while the server is down, and starts it again on the same
// port with the same data, for tests of how clients live through a
// restart. It refuses other sources: a server this package did not start
// is not its to stop.
func (s *Server) Restart(ctx context.Context, mode StopMode, whileDown func()) error {
	if s == nil || s.cluster == nil {
		return errors.New("pgserver: only a cluster started by Ensure can be restarted")
	}
	if mode != Fast && mode != Immediate {
		return fmt.Errorf("pgserver: stop mode %q: want fast or immediate", mode)
	}
	return s.cluster.restart(ctx, mode, whileDown)
}

// Ensure returns a server following the order in the package comment.
func Ensure(ctx context.Context, opts Options) (*Server, error) {
	opts = opts.withDefaults()
	var tried []string
	if !opts.ForceCluster {
		if srv := fromEnv(opts); srv != nil {
			opts.Log.Info("postgres: using the server named in the environment", "var", srv.EnvVar)
			return srv, nil
		}
		if len(opts.EnvVars) > 0 {
			tried = append(tried, strings.Join(opts.EnvVars, ", ")+": not set")
		}
		err := Ping(ctx, opts.LocalURL)
		if err == nil {
			opts.Log.Info("postgres: using the local server", "url", Redact(opts.LocalURL))
			return &Server{URL: opts.LocalURL, Source: Local}, nil
		}
		tried = append(tried, fmt.Sprintf("%s: %v", Redact(opts.LocalURL), err))
	}
	if opts.DataDir == "" {
		return nil, fmt.Errorf("no PostgreSQL server (tried %s) and no data folder to start one in", strings.Join(tried, "; "))
	}
	c, err := startCluster(ctx, opts)
	if err != nil {
		tried = append(tried, "a throwaway cluster in "+opts.DataDir)
		return nil, fmt.Errorf("no PostgreSQL server: tried %s: %w", strings.Join(tried, "; "), err)
	}
	return &Server{URL: c.url(), Source: Cluster, DataDir: c.dataDir, cluster: c}, nil
}

func (o Options) withDefaults() Options {
	if o.Lookup == nil {
		o.Lookup = os.LookupEnv
	}
	if o.LocalURL == "" {
		o.LocalURL = DefaultLocalURL
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.searchPath == "" {
		o.searchPath = os.Getenv("PATH")
	}
	if o.libRoot == "" {
		o.libRoot = "/usr/lib/postgresql"
	}
	return o
}

func fromEnv(opts Options) *Server {
	for _, name := range opts.EnvVars {
		if v, ok := opts.Lookup(name); ok && strings.TrimSpace(v) != "" {
			return &Server{URL: strings.TrimSpace(v), Source: FromEnv, EnvVar: name}
		}
	}
	return nil
}

// Ping connects to dbURL and closes the connection; a server that does not
// answer within a few seconds counts as absent.
func Ping(ctx context.Context, dbURL string) error {
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return fmt.Errorf("database url: %w", err)
	}
	cfg.ConnectTimeout = 3 * time.Second
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// EnsureDatabase returns the URL of database name on the server at adminURL,
// creating the database when it does not exist yet.
func EnsureDatabase(ctx context.Context, adminURL, name string) (string, error) {
	dbURL, err := WithDatabase(adminURL, name)
	if err != nil {
		return "", err
	}
	err = Ping(ctx, dbURL)
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return dbURL, nil
	case !errors.As(err, &pgErr) || pgErr.Code != "3D000": // invalid_catalog_name
		return "", fmt.Errorf("connect to database %s: %w", name, err)
	}
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", fmt.Errorf("connect to %s: %w", Redact(adminURL), err)
	}
	defer conn.Close(ctx)
	// DDL cannot take parameters; the name is quoted as an identifier.
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	if err != nil && (!errors.As(err, &pgErr) || pgErr.Code != "42P04") { // duplicate_database: created meanwhile
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return dbURL, nil
}

// WithDatabase returns serverURL with its database replaced by name.
func WithDatabase(serverURL, name string) (string, error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", fmt.Errorf("database url: %w", err)
	}
	u.Path = "/" + name
	u.RawPath = ""
	return u.String(), nil
}

// Redact hides the password of a URL, for logs and banners.
func Redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable url)"
	}
	return u.Redacted()
}
