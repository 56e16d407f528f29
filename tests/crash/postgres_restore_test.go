package crash

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgserver"
	"github.com/sundial-run/sundial/tests/internal/checker"
	"github.com/sundial-run/sundial/tests/internal/proc"
)

// TestPostgresRestoredFromBackup backs up the PostgreSQL server Sundial
// runs on and restores it into a new server, as docs/operations.md says
// ("Backups", "Restore"): the primary archives every completed WAL segment
// (archive_command), pg_basebackup copies it while clients create hooks,
// and pg_switch_wal closes the segment holding the last commits so that
// the archive holds them too. The services are then killed, and so is
// the primary, as one that is lost (a clean shutdown would archive what it
// wrote after the switch too). The backup is unpacked into a new data
// folder with a restore_command reading the archive and recovery.signal,
// and the new server, on a port of its own, replays the archive and
// promotes itself. `gateway migrate` and the services then run on it,
// with a NATS server of their own: what waited in the old one is gone,
// and the database's leases re-drive it.
//
// Nothing the API answered 201 for before the WAL switch may be lost (the
// hooks answered before the backup ended among them): each must be on the
// restored server, and every hook there must be delivered, none early,
// those still pending by the services running on it. Half the hooks are
// due half a second after their create, and are delivered before the
// backup; the others are due well after the restore.
//
// Duplicates allowed: one per restored hook that had arrived before the
// restore. The restore rewinds to the switch, so a hook whose delivery was
// recorded after it is pending again, and delivered again.
func TestPostgresRestoredFromBackup(t *testing.T) {
	useBinaries(t)
	t.Parallel()
	const (
		concurrency = 16
		// lead puts the later half of the hooks past the restore (backup,
		// stop, unpack, replay, migrate: a few seconds), with room for a
		// slow machine.
		lead = 15 * time.Second
		// tail is how many hooks are answered 201 between the backup's end
		// and the WAL switch: only the archive holds them.
		tail = 20
	)
	ctx := context.Background()
	dir := t.TempDir()
	archive, backup := filepath.Join(dir, "wal"), filepath.Join(dir, "backup")
	primary, dbURL := startArchivingPostgres(t, filepath.Join(dir, "primary"), archive)

	b := setup(t, options{dbURL: dbURL, gatewayProcess: true})
	services := []*proc.Process{b.gateway, b.startScheduler(t, nil), b.startDispatcher(t, concurrency)}
	l := b.startRetryingLoadOf(t, 4, 50*time.Millisecond, func(n int) map[string]any {
		if n%2 == 0 {
			return dueAt(time.Now().Add(lead))
		}
		return dueSoon()
	})
	require.Eventually(t, func() bool { return b.receiver.Distinct() >= tail }, 60*time.Second, 10*time.Millisecond,
		"hooks were not delivered before the backup")

	backupStarted := time.Now()
	require.NoError(t, primary.BaseBackup(ctx, backup))
	backupEnded := time.Now()
	atBackupEnd := b.acceptedCount()
	require.Eventually(t, func() bool { return b.acceptedCount() >= atBackupEnd+tail }, 60*time.Second, 10*time.Millisecond,
		"the API did not accept hooks after the backup")
	switched := time.Now()
	_, err := primary.ArchiveWAL(ctx)
	require.NoError(t, err)
	s := l.stop(t)
	require.Empty(t, s.errs, "every create must be answered 201")
	for _, p := range services {
		p.Kill()
	}
	b.stopAll()
	require.NoError(t, primary.Kill())

	opts := pgserver.Options{Durable: true, DataDir: filepath.Join(dir, "restored")}
	unpackStarted := time.Now()
	require.NoError(t, pgserver.UnpackBackup(ctx, backup, archive, opts))
	restoreStarted := time.Now()
	restored, err := pgserver.RestoreBackup(ctx, backup, archive, opts)
	require.NoError(t, err)
	restoreTook := time.Since(restoreStarted)
	t.Cleanup(func() { require.NoError(t, restored.Stop(context.Background())) })
	require.NotEqual(t, primary.Addr(), restored.Addr())
	restoredURL, err := pgserver.WithDatabase(restored.URL, "sundial")
	require.NoError(t, err)
	b.migrate(t, restoredURL)

	hooks := restoredHooks(t, restoredURL)
	beforeBackup, beforeSwitch := s.answeredBefore(backupEnded), s.answeredBefore(switched)
	var lost, unknown []string
	for id := range beforeSwitch {
		if _, ok := hooks[id]; !ok {
			lost = append(lost, id)
		}
	}
	for id := range hooks {
		if _, ok := s.created[id]; !ok {
			unknown = append(unknown, id)
		}
	}
	require.Empty(t, lost, "hooks answered 201 before the WAL switch are missing from the restored server")
	require.Empty(t, unknown, "the restored server holds hooks the API never answered 201 for")

	servicesStarted := time.Now()
	b.runOn(t, restoredURL)
	b.startScheduler(t, nil)
	b.startDispatcher(t, concurrency)
	b.awaitCompleted(t, len(hooks), 90*time.Second)

	report, deliveredBefore := b.checkRestored(t, hooks, s, servicesStarted)
	b.requireClean(t, report, deliveredBefore)
	d := restoredDelivered(t, hooks, b.receiver.Arrivals(), servicesStarted)
	lastBeforeBackup := servicesStarted
	for id := range beforeBackup {
		if at, ok := d.first[id]; ok && hooks[id].status != "completed" && at.After(lastBeforeBackup) {
			lastBeforeBackup = at
		}
	}
	segments, err := os.ReadDir(archive)
	require.NoError(t, err)
	t.Logf("backup: %d hooks answered 201 before the base backup ended (it took %s), %d before the WAL switch, %d in all; "+
		"%d on the restored server (%d answered after the switch rewound away), %d of them pending (%d leased, %d due before the services started)",
		len(beforeBackup), backupEnded.Sub(backupStarted).Round(time.Millisecond), len(beforeSwitch), len(s.created),
		len(hooks), len(s.created)-len(hooks), d.pending, d.leased, d.overdue)
	t.Logf("restore: unpack %s; start, replay of %d archived files and promotion until it took writes %s; services start -> "+
		"last pending hook answered before the backup's end delivered %s, last pending hook %s; worst delivery after the hook "+
		"was due, its lease expired and the services started %s; %d duplicates (bound %d, the restored hooks delivered before the restore)",
		restoreStarted.Sub(unpackStarted).Round(time.Millisecond), len(segments), restoreTook.Round(time.Millisecond),
		lastBeforeBackup.Sub(servicesStarted).Round(time.Millisecond), d.last.Sub(servicesStarted).Round(time.Millisecond),
		d.worstLate.Round(time.Millisecond), report.TotalDuplicates(), deliveredBefore)
}

// startArchivingPostgres starts a durable cluster of the test's own in
// dataDir that archives its WAL into archive, creates and migrates a
// database on it, and returns the server and that database's URL.
func startArchivingPostgres(t *testing.T, dataDir, archive string) (*pgserver.Server, string) {
	t.Helper()
	ctx := context.Background()
	srv, err := pgserver.Ensure(ctx, pgserver.Options{ForceCluster: true, Durable: true, DataDir: dataDir, ArchiveDir: archive})
	require.NoError(t, err, "this test backs up and restores PostgreSQL servers of its own, started with the machine's "+
		"initdb, pg_ctl and pg_basebackup (never the shared server); it cannot run without them: %s", pgserver.InstallHint)
	t.Cleanup(func() { require.NoError(t, srv.Stop(context.Background())) })
	dbURL, err := pgserver.EnsureDatabase(ctx, srv.URL, "sundial")
	require.NoError(t, err)
	_, err = postgres.Migrate(ctx, dbURL)
	require.NoError(t, err)
	return srv, dbURL
}

// dueAt is a hook due at at.
func dueAt(at time.Time) map[string]any {
	return map[string]any{"path": "/restore", "postAt": at.UTC().Format(time.RFC3339Nano), "data": map[string]any{}}
}

// migrate runs `gateway migrate` on dbURL, as an operator does after a
// restore, and requires it to succeed.
func (b *bundle) migrate(t *testing.T, dbURL string) {
	t.Helper()
	p := b.start(t, "gateway", map[string]string{"SUNDIAL_DATABASE_URL": dbURL}, "migrate")
	require.Eventually(t, func() bool {
		select {
		case <-p.Done():
			return true
		default:
			return false
		}
	}, 60*time.Second, 10*time.Millisecond, "gateway migrate did not finish")
	require.Zero(t, p.ExitCode(), "gateway migrate failed:\n%s", p.Output.String())
}

// runOn points the suite at the database dbURL and a new NATS server, and
// starts the gateway's process and the notifier on them. The projects and
// the receiver stay: they are in the database.
func (b *bundle) runOn(t *testing.T, dbURL string) {
	t.Helper()
	ns := natstest.Start(t, natstest.Options{})
	b.mu.Lock()
	b.nats = ns
	b.env["SUNDIAL_DATABASE_URL"] = dbURL
	b.env["SUNDIAL_NATS_URL"] = ns.ClientURL()
	b.mu.Unlock()
	b.startGatewayProcess(t)
	b.startNotifier(t)
}

// restoredHook is a hook as the restored server holds it.
type restoredHook struct {
	status string
	// runAt is when the scheduler may next act on the hook: its postAt,
	// or its lease's expiry while it is leased (nil once finished).
	runAt  *time.Time
	leased bool
}

// restoredHooks reads every hook in the database.
func restoredHooks(t *testing.T, dbURL string) map[string]restoredHook {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT id::text, status, run_at, lease_expires_at IS NOT NULL FROM hooks")
	require.NoError(t, err)
	hooks := map[string]restoredHook{}
	var id string
	var h restoredHook
	_, err = pgx.ForEachRow(rows, []any{&id, &h.status, &h.runAt, &h.leased}, func() error {
		hooks[id] = h
		return nil
	})
	require.NoError(t, err)
	return hooks
}

// awaitCompleted waits until the projects hold n completed hooks and no
// DueHook that a dispatcher could still deliver is left in NATS: from then
// on no arrival can come.
func (b *bundle) awaitCompleted(t *testing.T, n int, within time.Duration) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.Equal(c, n, b.completed(t), "restored hooks completed")
		live, err := b.liveDueHooks()
		require.NoError(c, err)
		require.Zero(c, live, "deliverable DueHooks left in NATS")
	}, within, 100*time.Millisecond, "the restored hooks were not all delivered")
	require.Equal(t, n, b.count(t, "?limit=1"), "the projects hold hooks that were not restored")
}

// checkRestored judges the arrivals of the restored hooks against the
// postAt the API answered with, and requires every other arrival to be of
// a hook answered 201 that the restore rewound away, delivered before the
// restore. It also returns how many restored hooks arrived before the
// restored services started: each may arrive once more.
func (b *bundle) checkRestored(t *testing.T, hooks map[string]restoredHook, s loadStats, servicesStarted time.Time) (checker.Report, int) {
	t.Helper()
	b.mu.Lock()
	want := make(map[string]time.Time, len(hooks))
	for id := range hooks {
		want[id] = b.accepted[id]
	}
	b.mu.Unlock()
	var ofRestored []checker.Arrival
	before := map[string]bool{}
	for _, a := range b.receiver.Arrivals() {
		if _, ok := want[a.ID]; ok {
			ofRestored = append(ofRestored, a)
			if a.At.Before(servicesStarted) {
				before[a.ID] = true
			}
			continue
		}
		_, answered := s.created[a.ID]
		require.True(t, answered, "hook %s arrived but the API never answered 201 for it", a.ID)
		require.True(t, a.At.Before(servicesStarted), "hook %s, not restored, arrived after the restore", a.ID)
	}
	r := checker.Check(want, ofRestored)
	t.Log(r.String())
	return r, len(before)
}

// deliveries is what became of the hooks pending on the restored server.
type deliveries struct {
	pending, leased, overdue int
	// first is each hook's first arrival after the services started.
	first map[string]time.Time
	// last is the last of those first arrivals of a pending hook.
	last time.Time
	// worstLate is the longest wait of a pending hook from when the
	// restored services could deliver it (due, lease expired, services
	// started) to its arrival.
	worstLate time.Duration
}

// restoredDelivered requires each hook pending on the restored server to
// arrive after the restored services started, and says when.
func restoredDelivered(t *testing.T, hooks map[string]restoredHook, arrivals []checker.Arrival, servicesStarted time.Time) deliveries {
	t.Helper()
	d := deliveries{first: map[string]time.Time{}, last: servicesStarted}
	for _, a := range arrivals {
		if at, ok := d.first[a.ID]; !a.At.Before(servicesStarted) && (!ok || a.At.Before(at)) {
			d.first[a.ID] = a.At
		}
	}
	for id, h := range hooks {
		if h.status == "completed" {
			continue
		}
		d.pending++
		at, ok := d.first[id]
		require.True(t, ok, "hook %s, %s on the restored server, was not delivered by the services running on it", id, h.status)
		d.last = later(d.last, at)
		ready := servicesStarted
		if h.runAt != nil {
			ready = later(ready, *h.runAt)
			if h.runAt.Before(servicesStarted) {
				d.overdue++
			}
		}
		if h.leased {
			d.leased++
		}
		d.worstLate = max(d.worstLate, at.Sub(ready))
	}
	require.Positive(t, d.pending, "no hook was pending on the restored server: the test delivered nothing from it")
	return d
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
