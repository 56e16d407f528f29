package crash

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/testkit/pgserver"
	"github.com/sundial-run/sundial/tests/internal/proc"
)

// TestPostgresFailover kills the primary PostgreSQL server (SIGKILL to its
// postmaster) while hooks are being created, claimed and delivered, then
// promotes its streaming standby, as an operator or a failover manager
// would. Every service is a process given a connection string that names
// both servers with target_session_attrs=read-write (docs/operations.md,
// "PostgreSQL: failover, backups and restore"), and none is restarted.
//
// While no server takes writes, a create must be answered 503 with
// Retry-After, promptly; the clients retry it with the same
// Idempotency-Key, as the 503 invites, so that a create committed just
// before the kill but never answered is answered with its hook rather
// than created twice. Replication is synchronous, so nothing answered 201
// is lost in the switch; every hook answered 201 must then arrive, none
// early, and none the API did not answer for.
//
// Duplicates allowed: one per delivery that can be in flight at the kill
// (the dispatcher's concurrency), as in TestPostgresRestarted.
func TestPostgresFailover(t *testing.T) {
	useBinaries(t)
	t.Parallel()
	const (
		concurrency = 16
		perPhase    = 60
		// maxLatency bounds every answer: a create must never hang while
		// the database is away.
		maxLatency = 10 * time.Second
		refusals   = 40
	)
	ctx := context.Background()
	dbURL, primary, standby := startReplicatedPostgres(t)

	b := setup(t, options{dbURL: dbURL, gatewayProcess: true})
	services := []*proc.Process{b.startScheduler(t, nil), b.startDispatcher(t, concurrency)}
	l := b.startRetryingLoad(t, 4, 100*time.Millisecond)
	require.Eventually(t, func() bool { return b.receiver.Distinct() >= perPhase }, 60*time.Second, 10*time.Millisecond,
		"hooks were not delivered before the failover")

	killedAt := time.Now()
	require.NoError(t, primary.Kill())
	// The outage lasts until the clients have been refused for a while
	// (each retries every 100 ms), so every service meets it too.
	require.Eventually(t, func() bool { return l.snapshot().refused >= refusals }, 30*time.Second, 10*time.Millisecond,
		"creates were not refused with a 503 while no server took writes")
	promotedAt := time.Now()
	require.NoError(t, standby.Promote(ctx))
	promoted := b.acceptedCount()
	require.Eventually(t, func() bool { return b.acceptedCount() >= promoted+perPhase }, 60*time.Second, 10*time.Millisecond,
		"the API did not accept hooks again after the promotion")
	s := l.stop(t)

	require.Empty(t, s.errs, "every create must be answered 201, or 503 with Retry-After")
	require.Less(t, s.maxLatency, maxLatency, "a create took too long to be answered")
	for _, p := range append(services, b.gateway) {
		select {
		case <-p.Done():
			t.Fatalf("%s exited during the failover (code %d); services must carry on by themselves", p.Name, p.ExitCode())
		default:
		}
	}
	report := b.settle(t, 120*time.Second)
	b.requireClean(t, report, concurrency)

	firstCreate, ok := s.firstCreatedAfter(killedAt)
	require.True(t, ok)
	firstDelivery, ok := b.firstArrivalOf(s.createdAfter(killedAt))
	require.True(t, ok)
	t.Logf("failover: kill -> promote %s; kill -> first 201 %s (promote -> %s); kill -> first delivery of a hook created after the kill %s (promote -> %s)",
		promotedAt.Sub(killedAt).Round(time.Millisecond), firstCreate.Sub(killedAt).Round(time.Millisecond),
		firstCreate.Sub(promotedAt).Round(time.Millisecond), firstDelivery.Sub(killedAt).Round(time.Millisecond),
		firstDelivery.Sub(promotedAt).Round(time.Millisecond))
	t.Logf("%d hooks accepted, %d creates answered 503 with Retry-After meanwhile, slowest answer %s; %d duplicates (bound %d)",
		report.Accepted, s.refused, s.maxLatency.Round(time.Millisecond), report.TotalDuplicates(), concurrency)
}

// startReplicatedPostgres starts a primary of the test's own whose commits
// wait for its streaming standby, creates and migrates a database on it,
// and returns that database's URL naming both servers.
func startReplicatedPostgres(t *testing.T) (string, *pgserver.Server, *pgserver.Server) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	primary, err := pgserver.Ensure(ctx, pgserver.Options{ForceCluster: true, Durable: true, SynchronousStandby: true,
		DataDir: filepath.Join(dir, "primary")})
	require.NoError(t, err, "this test fails over between PostgreSQL servers of its own, started with the machine's "+
		"initdb, pg_ctl and pg_basebackup (never the shared server); it cannot run without them: %s", pgserver.InstallHint)
	t.Cleanup(func() { require.NoError(t, primary.Stop(context.Background())) })
	standby, err := primary.StartStandby(ctx, filepath.Join(dir, "standby"), pgserver.Options{Durable: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, standby.Stop(context.Background())) })
	_, err = pgserver.EnsureDatabase(ctx, primary.URL, "sundial")
	require.NoError(t, err)
	dbURL := fmt.Sprintf("postgres://postgres@%s,%s/sundial?sslmode=disable&target_session_attrs=read-write",
		primary.Addr(), standby.Addr())
	_, err = postgres.Migrate(ctx, dbURL)
	require.NoError(t, err)
	return dbURL, primary, standby
}

// firstArrivalOf is when the first of ids arrived at the receiver.
func (b *bundle) firstArrivalOf(ids map[string]bool) (time.Time, bool) {
	var first time.Time
	for _, a := range b.receiver.Arrivals() {
		if ids[a.ID] && (first.IsZero() || a.At.Before(first)) {
			first = a.At
		}
	}
	return first, !first.IsZero()
}
