package crash

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/testkit/pgserver"
)

// TestPostgresRestarted restarts PostgreSQL while hooks are being created,
// claimed and delivered: once with a fast shutdown (every session is told
// and cut), once with an immediate one (the server vanishes as in a crash
// and recovers from its log). It runs clusters of its own, never the
// machine's shared server. While the server
// is down the API must refuse new hooks with a 5xx (a fault of the
// service, not of the request) and create nothing; afterwards every
// service must carry on by itself (pools reconnect, the scheduler listens
// for notifications again) and every hook the API accepted must arrive.
//
// The client retries a create answered 503 with the same Idempotency-Key,
// as the 503 invites: an immediate shutdown can make a commit durable
// whose answer never reached the gateway (the gateway answers 503, it
// cannot know), and only the retry, answered with that hook, tells the
// client it exists. The projects must then hold exactly the hooks
// answered 201.
//
// Duplicates allowed: one per delivery that can be in flight at the
// restart (the dispatcher's concurrency). Results wait in NATS while the
// database is down and are applied once it is back; only one applied after
// its lease expired can cause a second delivery, and the 15 s lease leaves
// the outage and the services' back-off far behind.
func TestPostgresRestarted(t *testing.T) {
	useBinaries(t)
	t.Parallel()
	for _, mode := range []pgserver.StopMode{pgserver.Fast, pgserver.Immediate} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			testPostgresRestart(t, mode)
		})
	}
}

func testPostgresRestart(t *testing.T, mode pgserver.StopMode) {
	const (
		concurrency = 16
		perPhase    = 60
	)
	ctx := context.Background()
	// Durable: the throwaway default (fsync and synchronous_commit off)
	// loses the last commits in an immediate shutdown, hooks the API had
	// already answered 201 for, which no service could help.
	srv, err := pgserver.Ensure(ctx, pgserver.Options{ForceCluster: true, Durable: true, DataDir: filepath.Join(t.TempDir(), "pg")})
	require.NoError(t, err, "this test restarts a PostgreSQL server of its own, started with the machine's "+
		"initdb and pg_ctl (never the shared server); it cannot run without them: %s", pgserver.InstallHint)
	t.Cleanup(func() { require.NoError(t, srv.Stop(context.Background())) })
	dbURL, err := pgserver.EnsureDatabase(ctx, srv.URL, "sundial")
	require.NoError(t, err)
	_, err = postgres.Migrate(ctx, dbURL)
	require.NoError(t, err)

	b := setup(t, options{dbURL: dbURL})
	b.startScheduler(t, nil)
	b.startDispatcher(t, concurrency)

	l := b.startRetryingLoad(t, 1, 20*time.Millisecond)
	require.Eventually(t, func() bool { return b.receiver.Distinct() >= perPhase }, 60*time.Second, 10*time.Millisecond,
		"hooks were not delivered before the restart")

	var downStatuses []int
	require.NoError(t, srv.Restart(ctx, mode, func() {
		for range 3 {
			status, err := b.create(0, dueSoon())
			require.NoError(t, err)
			downStatuses = append(downStatuses, status)
		}
	}))
	restarted := b.acceptedCount()
	require.Eventually(t, func() bool { return b.acceptedCount() >= restarted+perPhase }, 60*time.Second, 10*time.Millisecond,
		"the API did not accept hooks again after the restart")
	loadStats := l.stop(t)
	require.Empty(t, loadStats.errs, "every create must be answered 201, or 503 with Retry-After")

	for _, s := range downStatuses {
		require.GreaterOrEqual(t, s, 500, "a hook created while PostgreSQL was down must be refused with a 5xx")
	}
	report := b.settle(t, 120*time.Second)
	b.requireClean(t, report, concurrency)
	t.Logf("%d hooks accepted (%d after the restart), %d refused while the database was down (statuses %v); %d duplicates (bound %d)",
		report.Accepted, report.Accepted-restarted, loadStats.refused+len(downStatuses), downStatuses, report.TotalDuplicates(), concurrency)
}

// dueSoon is a hook due half a second from now.
func dueSoon() map[string]any {
	return map[string]any{
		"path":   "/steady",
		"postAt": time.Now().Add(500 * time.Millisecond).UTC().Format(time.RFC3339Nano),
		"data":   map[string]any{},
	}
}
