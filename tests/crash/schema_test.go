package crash

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for goose
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/migrations"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/testkit/admintest"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
	"github.com/sundial-run/sundial/tests/internal/proc"
)

// TestServicesRefuseAnOlderSchema: each of the four services, started on
// a database whose schema lacks the build's last migration, waits
// SUNDIAL_SCHEMA_WAIT for it, then exits with an error naming both
// versions, instead of serving statements the schema does not fit. A
// scheduler already running whose database goes behind (a restore of an
// older backup) is not ready until it is migrated again.
func TestServicesRefuseAnOlderSchema(t *testing.T) {
	useBinaries(t)
	t.Parallel()
	dbURL := pgtest.NewDB(t)
	ns := natstest.Start(t, natstest.Options{})
	env := map[string]string{
		"SUNDIAL_DATABASE_URL":          dbURL,
		"SUNDIAL_SECRET_KEYS":           secrettest.Keys,
		"SUNDIAL_NATS_URL":              ns.ClientURL(),
		"SUNDIAL_SCHEMA_WAIT":           "1s",
		"SUNDIAL_HTTP_ADDR":             "127.0.0.1:0",
		"SUNDIAL_GATEWAY_ADMIN_ADDR":    "127.0.0.1:0",
		"SUNDIAL_SCHEDULER_ADMIN_ADDR":  "127.0.0.1:0",
		"SUNDIAL_DISPATCHER_ADMIN_ADDR": "127.0.0.1:0",
		"SUNDIAL_NOTIFIER_ADMIN_ADDR":   "127.0.0.1:0",
		"SUNDIAL_DATABASE_MAX_CONNS":    "2",
	}
	current, target := rollBackOne(t, dbURL)
	want := fmt.Sprintf("it is at migration %d, this build needs %d", current, target)

	services := map[string][]string{"gateway": {"serve"}, "scheduler": nil, "dispatcher": nil, "notifier": nil}
	procs := map[string]*proc.Process{}
	for name, args := range services {
		procs[name] = proc.Start(t, name, binaries.Path(t, name), []map[string]string{env}, args...)
	}
	for name, p := range procs {
		select {
		case <-p.Done():
		case <-time.After(time.Minute):
			t.Fatalf("%s kept running on a schema older than its build", name)
		}
		require.NotZero(t, p.ExitCode(), "%s exits with an error", name)
		require.NotEmpty(t, p.Lines(want, 1), "%s names both versions (%q)", name, want)
	}

	_, err := postgres.Migrate(context.Background(), dbURL)
	require.NoError(t, err)
	admin := freeAddr(t)
	p := proc.Start(t, "scheduler", binaries.Path(t, "scheduler"), []map[string]string{env, {"SUNDIAL_SCHEDULER_ADMIN_ADDR": admin}})
	require.Eventually(t, func() bool { return listening(admin) }, time.Minute, 20*time.Millisecond,
		"the scheduler's admin listener never opened")
	admintest.AwaitReady(t, admin, http.StatusOK)
	rollBackOne(t, dbURL)
	require.Contains(t, admintest.AwaitReady(t, admin, http.StatusServiceUnavailable), "database")
	require.Eventually(t, func() bool { return len(p.Lines(want, 1)) > 0 }, time.Minute, 50*time.Millisecond,
		"the scheduler's log names both versions")
	_, err = postgres.Migrate(context.Background(), dbURL)
	require.NoError(t, err)
	admintest.AwaitReady(t, admin, http.StatusOK)
}

// rollBackOne undoes the database's last migration and returns the
// versions before (the build's) and after.
func rollBackOne(t *testing.T, dbURL string) (current, target int64) {
	t.Helper()
	db, err := sql.Open("pgx", dbURL)
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS)
	require.NoError(t, err)
	_, err = provider.Down(t.Context())
	require.NoError(t, err)
	current, target, err = provider.GetVersions(t.Context())
	require.NoError(t, err)
	require.Less(t, current, target)
	return current, target
}

// freeAddr is a loopback address with a port free a moment ago, for a
// process whose address the test must know beforehand.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// listening reports whether something accepts connections at addr.
func listening(addr string) bool {
	c, err := net.Dial("tcp", addr)
	if err == nil {
		_ = c.Close()
	}
	return err == nil
}
