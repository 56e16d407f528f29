package holdrelease_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/retry"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/holdrelease"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const domain = "receiver.example.com"

type bundle struct {
	pool    *pgxpool.Pool
	q       *store.Queries
	tq      *storetest.Queries
	project uuid.UUID
	log     *slog.Logger
}

func setup(t *testing.T) bundle {
	t.Helper()
	pool, _ := pgtest.NewPool(t)
	tq := storetest.New(pool)
	project := fixture.Project(t, tq, domain, retry.Policy{MinRetries: 3, DelaySecs: 5,
		Strategy: retry.StrategyFixed, BackoffFactor: 2, MaxDelaySecs: 60})
	return bundle{pool: pool, q: store.New(pool), tq: tq, project: project,
		log: slog.New(slog.NewTextHandler(t.Output(), nil))}
}

func (b bundle) presence(t *testing.T, connected bool) {
	t.Helper()
	require.NoError(t, b.tq.UpsertPresenceForTest(context.Background(), storetest.UpsertPresenceForTestParams{
		ProjectID: b.project, GatewayID: "gw-1", Connected: connected, ResumeInSeconds: 900,
	}))
}

// held makes n hooks of the project due and has the claim hold them (the
// project's listener is away, in its window).
func (b bundle) held(t *testing.T, n int) []storetest.Hook {
	t.Helper()
	b.presence(t, false)
	var hooks []storetest.Hook
	for i := range n {
		hooks = append(hooks, fixture.Insert(t, b.tq, fixture.Hook{ProjectID: b.project, Domain: domain,
			DueIn: -time.Duration(i+1) * time.Second}))
	}
	ids, err := b.q.LockDueHooks(context.Background(), int32(n))
	require.NoError(t, err)
	rows, err := b.q.ClaimHooks(context.Background(), store.ClaimHooksParams{LeaseSeconds: 30, Ids: ids})
	require.NoError(t, err)
	require.Len(t, rows, n)
	for _, r := range rows {
		require.True(t, r.Deferred)
	}
	return hooks
}

// released reports whether h was given back: no longer held, due again
// (paced from the release on, not at the window's end).
func (b bundle) released(t *testing.T, h storetest.Hook) bool {
	t.Helper()
	row := fixture.Get(t, b.tq, h.ID)
	return row.HeldDueAt == nil && row.RunAt != nil && row.RunAt.Before(fixture.DBNow(t, b.tq).Add(time.Minute))
}

func run(t *testing.T, r *holdrelease.Releaser) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// TestAPassIsBounded: a pass stops at MaxBatches statements and says more
// may be held; the next takes the rest.
func TestAPassIsBounded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hooks := b.held(t, 5)
	b.presence(t, true)
	r := holdrelease.New(b.q, holdrelease.Config{BatchSize: 2, MaxBatches: 2}, b.log)

	n, more, err := r.ReleaseOnce(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, 4, n)
	require.True(t, more)
	n, more, err = r.ReleaseOnce(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.False(t, more)
	for _, h := range hooks {
		require.True(t, b.released(t, h))
	}
}

// TestAHoldingProjectKeepsItsHooks: nothing is released while the project
// is not listening.
func TestAHoldingProjectKeepsItsHooks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hooks := b.held(t, 2)
	r := holdrelease.New(b.q, holdrelease.Config{}, b.log)

	n, more, err := r.ReleaseOnce(context.Background())

	require.NoError(t, err)
	require.Zero(t, n)
	require.False(t, more)
	for _, h := range hooks {
		require.NotNil(t, fixture.Get(t, b.tq, h.ID).HeldDueAt)
	}
}

// TestAListenerBackWakesTheRelease: with an interval of an hour, a
// project that listens again gets its held hooks back at once, woken by
// the gateway's notification (or, for one sent before the releaser
// listened, by the pass that follows its LISTEN).
func TestAListenerBackWakesTheRelease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hooks := b.held(t, 3)
	run(t, holdrelease.New(b.q, holdrelease.Config{Interval: time.Hour, Listen: b.pool.Config().ConnConfig.Copy()}, b.log))

	b.presence(t, true)
	require.NoError(t, b.tq.NotifyListenerForTest(context.Background(), b.project))

	require.Eventually(t, func() bool {
		for _, h := range hooks {
			if !b.released(t, h) {
				return false
			}
		}
		return true
	}, 10*time.Second, 5*time.Millisecond)
}
