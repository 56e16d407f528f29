// Package pgtest gives tests a real, migrated PostgreSQL database of their
// own. The first call in a test binary creates a migrated template database;
// every NewDB clones it (CREATE DATABASE ... TEMPLATE, a file copy), so each
// test starts from the exact schema in microseconds-to-milliseconds and
// can run in parallel with the others.
//
// The server comes from SUNDIAL_TEST_DATABASE_URL, else SUNDIAL_DATABASE_URL,
// else postgres://postgres@127.0.0.1:5432/postgres. `make test` sets the
// first one (and starts a throwaway cluster when no server is reachable).
// Call Main from TestMain so the template is dropped when the tests end.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sundial-run/sundial/pkg/postgres"
)

// DefaultURL is the server tried when no environment variable names one.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// ServerURL is the administrative URL of the test server.
func ServerURL() string {
	for _, k := range []string{"SUNDIAL_TEST_DATABASE_URL", "SUNDIAL_DATABASE_URL"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return DefaultURL
}

var (
	// mu serialises CREATE DATABASE: PostgreSQL refuses to copy a template
	// that another session is copying at the same moment.
	mu           sync.Mutex
	templateName string
	templateErr  error
)

// Main runs the tests, drops the template database and exits.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main without the exit, for a TestMain that has more to close
// (a browser, say) before it exits with the code Run returns.
func Run(m *testing.M) int {
	code := m.Run()
	mu.Lock()
	if templateName != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := exec(ctx, ServerURL(), "DROP DATABASE IF EXISTS "+pgx.Identifier{templateName}.Sanitize()+" WITH (FORCE)"); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest: drop template:", err)
		}
		cancel()
	}
	mu.Unlock()
	return code
}

func randomName(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// withDatabase returns base with its database name replaced.
func withDatabase(base, name string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("test database url: %w", err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

func exec(ctx context.Context, dbURL, stmt string, args ...any) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, stmt, args...)
	return err
}

func ensureTemplate(ctx context.Context) (string, error) {
	if templateName != "" || templateErr != nil {
		return templateName, templateErr
	}
	name := randomName("sundial_tpl_")
	if err := exec(ctx, ServerURL(), "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		templateErr = fmt.Errorf("create template database on %s: %w", redact(ServerURL()), err)
		return "", templateErr
	}
	tplURL, err := withDatabase(ServerURL(), name)
	if err == nil {
		_, err = postgres.Migrate(ctx, tplURL)
	}
	if err != nil {
		templateErr = fmt.Errorf("migrate template database: %w", err)
		_ = exec(ctx, ServerURL(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
		return "", templateErr
	}
	templateName = name
	return name, nil
}

// NewDB creates a fresh migrated database for t, drops it when t ends, and
// returns its URL.
func NewDB(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	mu.Lock()
	tpl, err := ensureTemplate(ctx)
	name := randomName("sundial_test_")
	if err == nil {
		err = exec(ctx, ServerURL(), "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+pgx.Identifier{tpl}.Sanitize())
	}
	mu.Unlock()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := exec(ctx, ServerURL(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Logf("pgtest: drop %s: %v", name, err)
		}
	})
	dbURL, err := withDatabase(ServerURL(), name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return dbURL
}

// Refuse makes the database of dbURL (one NewDB made) refuse new
// connections and ends those it has, as an outage of that database would
// for its clients; allow lets connections in again.
func Refuse(t testing.TB, dbURL string) (allow func()) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	setAllow := func(allow bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		stmt := fmt.Sprintf("ALTER DATABASE %s ALLOW_CONNECTIONS %t", pgx.Identifier{name}.Sanitize(), allow)
		if err := exec(ctx, ServerURL(), stmt); err != nil {
			t.Fatalf("pgtest: %v", err)
		}
		if allow {
			return
		}
		err := exec(ctx, ServerURL(), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", name)
		if err != nil {
			t.Fatalf("pgtest: %v", err)
		}
	}
	setAllow(false)
	return func() { setAllow(true) }
}

// NewPool creates a fresh migrated database for t and returns a pool on it,
// closed when t ends.
func NewPool(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	dbURL := NewDB(t)
	pool, err := postgres.Connect(context.Background(), dbURL, 8)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool, dbURL
}

// redact hides a password in a URL for error messages.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable url)"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return strings.TrimSpace(u.String())
}
