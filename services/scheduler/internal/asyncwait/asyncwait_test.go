package asyncwait_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/retry"
	"github.com/sundial-run/sundial/services/scheduler/internal/asyncwait"
	"github.com/sundial-run/sundial/services/scheduler/internal/claim"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/result"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type bundle struct {
	pool    *pgxpool.Pool
	q       *storetest.Queries
	claimer *claim.Claimer
	applier *result.Applier
	batcher *result.Batcher
	log     *slog.Logger
}

var policy = retry.Policy{MinRetries: 3, DelaySecs: 30, Strategy: retry.StrategyFixed, BackoffFactor: 2, MaxDelaySecs: 3600}

func setup(t testing.TB) bundle {
	t.Helper()
	pool, _ := pgtest.NewPool(t)
	_, js := natstest.Start(t, natstest.Options{}).Connect(t)
	require.NoError(t, event.EnsureStreams(context.Background(), js, event.DefaultReplicas))
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	applier, err := result.New(pool, js, event.DefaultReplicas, log, nil)
	require.NoError(t, err)
	c, err := claim.New(pool, js, claim.Config{BatchSize: 100, Lease: time.Minute, PollInterval: time.Second}, log)
	require.NoError(t, err)
	batcher, err := applier.NewBatcher(result.BatchConfig{MaxBatch: 100, InFlight: 2})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); batcher.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-stopped })
	return bundle{pool: pool, q: storetest.New(pool), claimer: c, applier: applier, batcher: batcher, log: log}
}

// run runs s until the test ends.
func run(t testing.TB, s *asyncwait.Sweeper) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// waiting creates n hooks answered 202 and returns them.
func (b bundle) waiting(t testing.TB, n int) []storetest.Hook {
	t.Helper()
	project := fixture.Project(t, b.q, "receiver.example.com", policy)
	var hooks []storetest.Hook
	for range n {
		hooks = append(hooks, fixture.Insert(t, b.q, fixture.Hook{ProjectID: project, Domain: "receiver.example.com", DueIn: -time.Second}))
	}
	for claimed := 0; claimed < n; {
		c, err := b.claimer.ClaimOnce(context.Background())
		require.NoError(t, err)
		require.Positive(t, c, "claimed %d of %d", claimed, n)
		claimed += c
	}
	for i, h := range hooks {
		h = fixture.Get(t, b.q, h.ID)
		require.NoError(t, b.batcher.Handle(context.Background(), fixture.Results(t, &eventv1.AttemptResult{
			HookId: h.ID.String(), ProjectId: h.ProjectID.String(), Attempt: 1, LeaseSeq: h.LeaseSeq,
			Outcome: eventv1.Outcome_OUTCOME_ASYNC, StatusCode: 202, StartedAt: timestamppb.Now(),
			Duration: durationpb.New(time.Millisecond),
		})))
		hooks[i] = fixture.Get(t, b.q, h.ID)
		require.NotNil(t, hooks[i].AsyncDeadline)
	}
	return hooks
}

func TestSweeperSettlesEndedWaitsOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hooks := b.waiting(t, 5)
	// Three waits end (two by timeout, one by a nack); two go on.
	for _, h := range hooks[:2] {
		n, err := b.q.ExpireAsyncWaitForTest(context.Background(), h.ID)
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
	}
	n, err := b.q.NackForTest(context.Background(), storetest.NackForTestParams{HookID: hooks[2].ID, LeaseSeq: hooks[2].LeaseSeq})
	require.NoError(t, err)
	require.EqualValues(t, 1, n)

	// A batch of 2 makes the sweeper take a second batch at once.
	s, err := asyncwait.New(store.New(b.pool), b.applier, asyncwait.Config{Interval: 20 * time.Millisecond, BatchSize: 2}, b.log)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	require.Eventually(t, func() bool {
		for _, h := range hooks[:3] {
			if fixture.Get(t, b.q, h.ID).Status != "retry" {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("sweeper did not stop with its context")
	}

	require.Contains(t, *fixture.Get(t, b.q, hooks[0].ID).FailureError, "async timeout")
	require.Equal(t, result.ErrNacked, *fixture.Get(t, b.q, hooks[2].ID).FailureError)
	for _, h := range hooks[3:] {
		row := fixture.Get(t, b.q, h.ID)
		require.Equal(t, "pending", row.Status)
		require.NotNil(t, row.AsyncDeadline)
	}
	settled, err := s.SweepOnce(context.Background())
	require.NoError(t, err)
	require.Zero(t, settled, "nothing left to settle")
}

// TestAnswersWakeTheSweeper: an ack or nack recorded by the gateway is
// applied at once, long before the sweep interval, woken by its
// notification (or, for one recorded before the sweeper listened, by the
// sweep that follows the LISTEN).
func TestAnswersWakeTheSweeper(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hooks := b.waiting(t, 2)
	s, err := asyncwait.New(store.New(b.pool), b.applier, asyncwait.Config{
		Interval: time.Hour, BatchSize: 10, Listen: b.pool.Config().ConnConfig.Copy(),
	}, b.log)
	require.NoError(t, err)
	run(t, s)

	n, err := b.q.AckForTest(context.Background(), storetest.AckForTestParams{HookID: hooks[0].ID, LeaseSeq: hooks[0].LeaseSeq})
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.Eventually(t, func() bool { return fixture.Get(t, b.q, hooks[0].ID).Status == "completed" },
		10*time.Second, 5*time.Millisecond)
	n, err = b.q.NackForTest(context.Background(), storetest.NackForTestParams{HookID: hooks[1].ID, LeaseSeq: hooks[1].LeaseSeq})
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.Eventually(t, func() bool { return fixture.Get(t, b.q, hooks[1].ID).Status == "retry" },
		10*time.Second, 5*time.Millisecond)
}

func TestNewRefusesAnUnboundedLoop(t *testing.T) {
	t.Parallel()
	_, err := asyncwait.New(nil, nil, asyncwait.Config{Interval: 0, BatchSize: 1}, slog.Default())
	require.Error(t, err)
	_, err = asyncwait.New(nil, nil, asyncwait.Config{Interval: time.Second, BatchSize: 0}, slog.Default())
	require.Error(t, err)
}

// TestConcurrentSweepersSettleEachWaitOnce: scheduler replicas sweep the
// same waits at once; SKIP LOCKED and the re-check under the lock make each
// wait settle exactly once.
func TestConcurrentSweepersSettleEachWaitOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hooks := b.waiting(t, 40)
	for _, h := range hooks {
		_, err := b.q.ExpireAsyncWaitForTest(context.Background(), h.ID)
		require.NoError(t, err)
	}
	const replicas = 4
	settled := make(chan int, replicas)
	start := make(chan struct{})
	for range replicas {
		s, err := asyncwait.New(store.New(b.pool), b.applier, asyncwait.Config{Interval: time.Millisecond, BatchSize: 7}, b.log)
		require.NoError(t, err)
		go func() {
			<-start
			total := 0
			for {
				n, err := s.SweepOnce(context.Background())
				if err != nil || n == 0 {
					settled <- total
					return
				}
				total += n
			}
		}()
	}
	close(start)
	total := 0
	for range replicas {
		total += <-settled
	}
	// A replica stops when it finds nothing left for it; the others may
	// have taken the rest, so sweep once more to be sure none is left.
	s, err := asyncwait.New(store.New(b.pool), b.applier, asyncwait.Config{Interval: time.Millisecond, BatchSize: 100}, b.log)
	require.NoError(t, err)
	n, err := s.SweepOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, len(hooks), total+n, "every wait settled exactly once")
	for _, h := range hooks {
		row := fixture.Get(t, b.q, h.ID)
		require.Equal(t, "retry", row.Status)
		require.EqualValues(t, 1, row.Attempts)
		attempts := fixture.Attempts(t, b.q, h.ID)
		require.Len(t, attempts, 1)
		require.Equal(t, "expired", *attempts[0].AsyncState)
	}
}
