package retention_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sundial-run/sundial/pkg/retry"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/retention"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const (
	domain = "receiver.example.com"
	day    = 24 * time.Hour
	// margin keeps a hook clear of its window's edge whatever the time
	// between its insert and the pass.
	margin = time.Hour
)

type bundle struct {
	pool *pgxpool.Pool
	q    *store.Queries
	tq   *storetest.Queries
	log  *slog.Logger
}

func setup(t *testing.T) bundle {
	t.Helper()
	pool, _ := pgtest.NewPool(t)
	return bundle{pool: pool, q: store.New(pool), tq: storetest.New(pool), log: slog.New(slog.NewTextHandler(t.Output(), nil))}
}

// project makes a project whose retentionDays and plan bound are given.
func (b bundle) project(t *testing.T, days, planMax int32) uuid.UUID {
	t.Helper()
	id := fixture.Project(t, b.tq, domain, retry.Policy{MinRetries: 3, DelaySecs: 5,
		Strategy: retry.StrategyFixed, BackoffFactor: 2, MaxDelaySecs: 60})
	n, err := b.tq.SetRetentionForTest(context.Background(), storetest.SetRetentionForTestParams{
		ID: id, RetentionDays: days, PlanMaxRetentionDays: planMax})
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	return id
}

// hook makes a hook of the project in status, last changed age ago, with
// two attempt rows.
func (b bundle) hook(t *testing.T, project uuid.UUID, status string, age time.Duration) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	id := fixture.Insert(t, b.tq, fixture.Hook{ProjectID: project, Domain: domain, DueIn: time.Hour}).ID
	n, err := b.tq.AgeHookForTest(ctx, storetest.AgeHookForTestParams{ID: id, Status: status, Attempts: 2, AgeSeconds: age.Seconds()})
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	for attempt := range int32(2) {
		require.NoError(t, b.tq.InsertAttemptForTest(ctx, storetest.InsertAttemptForTestParams{HookID: id, Attempt: attempt + 1}))
	}
	return id
}

// expired makes n completed hooks of a fresh project (1 day retention)
// two days old.
func (b bundle) expired(t *testing.T, n int) []uuid.UUID {
	t.Helper()
	project := b.project(t, 1, 90)
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = b.hook(t, project, "completed", 2*day)
	}
	return ids
}

func (b bundle) existing(t *testing.T, ids []uuid.UUID) []uuid.UUID {
	t.Helper()
	left, err := b.tq.ExistingHooksForTest(context.Background(), ids)
	require.NoError(t, err)
	return left
}

func (b bundle) attempts(t *testing.T, ids []uuid.UUID) int64 {
	t.Helper()
	n, err := b.tq.CountAttemptsForTest(context.Background(), ids)
	require.NoError(t, err)
	return n
}

func (b bundle) cleaner(t *testing.T, cfg retention.Config) *retention.Cleaner {
	t.Helper()
	c, err := retention.New(b.q, cfg, b.log)
	require.NoError(t, err)
	return c
}

// TestDeletesExactlyTheExpiredFinishedHooks: per project, by its own
// retention (capped by its plan's bound), completed and failed hooks past
// it go with their attempts; those inside it, and pending and retry hooks
// of any age, stay with theirs.
func TestDeletesExactlyTheExpiredFinishedHooks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var gone, kept []uuid.UUID
	for _, p := range []struct {
		days, planMax int32
		window        time.Duration // the retention that applies
	}{
		{30, 90, 30 * day},
		{5, 90, 5 * day},
		{60, 10, 10 * day}, // the plan's bound, lowered below the setting, wins
	} {
		project := b.project(t, p.days, p.planMax)
		for _, status := range []string{"completed", "failed"} {
			gone = append(gone, b.hook(t, project, status, p.window+margin), b.hook(t, project, status, 100*day))
			kept = append(kept, b.hook(t, project, status, p.window-margin), b.hook(t, project, status, time.Minute))
		}
		for _, status := range []string{"pending", "retry"} {
			kept = append(kept, b.hook(t, project, status, 100*day), b.hook(t, project, status, p.window+margin))
		}
	}

	p, err := b.cleaner(t, retention.Config{Pause: 0}).CleanOnce(context.Background())

	require.NoError(t, err)
	require.EqualValues(t, len(gone), p.Hooks)
	require.EqualValues(t, 2*len(gone), p.Attempts)
	require.False(t, p.More)
	require.Empty(t, b.existing(t, gone))
	require.Zero(t, b.attempts(t, gone), "the attempts went with their hooks")
	require.ElementsMatch(t, kept, b.existing(t, kept))
	require.EqualValues(t, 2*len(kept), b.attempts(t, kept))
}

// TestAPassIsBounded: a pass deletes at most BatchSize x MaxBatches hooks
// and says more may have expired; the next pass goes on with the rest.
func TestAPassIsBounded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.expired(t, 7)
	c := b.cleaner(t, retention.Config{BatchSize: 2, MaxBatches: 2, Pause: 0})

	p, err := c.CleanOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, retention.Pass{Hooks: 4, Attempts: 8, Batches: 2, More: true}, p)
	require.Len(t, b.existing(t, ids), 3)

	p, err = c.CleanOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, retention.Pass{Hooks: 3, Attempts: 6, Batches: 2, More: false}, p)
	require.Empty(t, b.existing(t, ids))

	p, err = c.CleanOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, retention.Pass{Batches: 1}, p)
}

// TestCleanersSideBySideShareTheWork: two cleaners (two schedulers) at
// once delete every expired hook once between them, neither failing.
func TestCleanersSideBySideShareTheWork(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.expired(t, 40)
	passes := make([]retention.Pass, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range passes {
		c := b.cleaner(t, retention.Config{BatchSize: 3, MaxBatches: 100, Pause: 0})
		wg.Go(func() { passes[i], errs[i] = c.CleanOnce(context.Background()) })
	}
	wg.Wait()

	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.EqualValues(t, len(ids), passes[0].Hooks+passes[1].Hooks)
	require.EqualValues(t, 2*len(ids), passes[0].Attempts+passes[1].Attempts)
	require.Empty(t, b.existing(t, ids))
}

// TestDeletionsAreCounted: the counters add what the passes deleted.
func TestDeletionsAreCounted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.expired(t, 3)
	reader := sdkmetric.NewManualReader()
	c := b.cleaner(t, retention.Config{BatchSize: 2, Pause: 0,
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})

	_, err := c.CleanOnce(context.Background())
	require.NoError(t, err)

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			require.True(t, ok, m.Name)
			for _, dp := range sum.DataPoints {
				got[m.Name] += dp.Value
			}
		}
	}
	require.Equal(t, map[string]int64{"sundial.retention.hooks_deleted": 3, "sundial.retention.attempts_deleted": 6}, got)
}

// TestRunCleansUntilStopped: Run's first pass comes at once, a pass that
// reached its cap is followed by another (here after no pause, with an
// interval of an hour), and Run returns when its context ends.
func TestRunCleansUntilStopped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.expired(t, 5)
	c := b.cleaner(t, retention.Config{Interval: time.Hour, BatchSize: 1, MaxBatches: 2, Pause: 0})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()

	require.Eventually(t, func() bool { return len(b.existing(t, ids)) == 0 }, 10*time.Second, 5*time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

// TestIdleOrderingKeysWhoseHeadIsGoneGo: a key row whose head is gone (or
// that has none) and that no claim touched for an hour goes; a key whose
// head is still there, finished or not, and one touched recently stay.
func TestIdleOrderingKeysWhoseHeadIsGoneGo(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	project := b.project(t, 30, 90)
	finished := b.hook(t, project, "failed", time.Hour)
	waiting := b.hook(t, project, "pending", time.Hour)
	gone := uuid.Must(uuid.NewV7())
	for _, k := range []struct {
		key  string
		head *uuid.UUID
		age  time.Duration
	}{
		{"head-gone", &gone, 2 * time.Hour},
		{"no-head", nil, 2 * time.Hour},
		{"head-gone-recently-taken", &gone, time.Minute},
		{"head-finished", &finished, 2 * time.Hour},
		{"head-waiting", &waiting, 2 * time.Hour},
	} {
		require.NoError(t, b.tq.InsertOrderingKeyForTest(ctx, storetest.InsertOrderingKeyForTestParams{
			ProjectID: project, OrderingKey: k.key, Head: k.head, AgeSeconds: k.age.Seconds()}))
	}

	p, err := b.cleaner(t, retention.Config{Pause: 0}).CleanOnce(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2, p.OrderingKeys)
	left, err := b.tq.ListOrderingKeysForTest(ctx, project)
	require.NoError(t, err)
	require.Equal(t, []string{"head-finished", "head-gone-recently-taken", "head-waiting"}, left)
}
