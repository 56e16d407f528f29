package claim_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/retry"
	"github.com/sundial-run/sundial/services/scheduler/internal/claim"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type bundle struct {
	pool    *pgxpool.Pool
	q       *storetest.Queries
	js      jetstream.JetStream
	log     *slog.Logger
	domain  string
	project uuid.UUID
}

// defaults has 5 retries, so a hook without override may make 6 attempts.
var defaults = retry.Policy{MinRetries: 5, DelaySecs: 30, Strategy: retry.StrategyExponential, BackoffFactor: 2, MaxDelaySecs: 3600, Jitter: true}

func setup(t *testing.T) bundle {
	t.Helper()
	pool, _ := pgtest.NewPool(t)
	_, js := natstest.Start(t, natstest.Options{}).Connect(t)
	require.NoError(t, event.EnsureStreams(context.Background(), js, event.DefaultReplicas))
	q := storetest.New(pool)
	b := bundle{pool: pool, q: q, js: js, domain: "receiver.example.com",
		log: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))}
	b.project = fixture.Project(t, q, b.domain, defaults)
	return b
}

func (b bundle) claimer(t *testing.T, cfg claim.Config) *claim.Claimer {
	t.Helper()
	if cfg.BatchSize == 0 {
		cfg.BatchSize = 100
	}
	if cfg.Lease == 0 {
		cfg.Lease = time.Minute
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 10 * time.Millisecond
	}
	if cfg.MaxRedrives == 0 {
		cfg.MaxRedrives = 5
	}
	c, err := claim.New(b.pool, b.js, cfg, b.log)
	require.NoError(t, err)
	return c
}

// dueMsgID is the Nats-Msg-Id of the DueHooks batch of one that carries a
// hook under a lease.
func dueMsgID(hookID uuid.UUID, leaseSeq int64) string {
	return event.DuesMsgID([]string{hookID.String()}, []int64{leaseSeq})
}

func (b bundle) hook(t *testing.T, dueIn time.Duration) storetest.Hook {
	t.Helper()
	return fixture.Insert(t, b.q, fixture.Hook{ProjectID: b.project, Domain: b.domain, DueIn: dueIn})
}

func TestDueHookIsClaimedOnceAndPublished(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hook := fixture.Insert(t, b.q, fixture.Hook{
		ProjectID: b.project, Domain: b.domain, Path: "/jobs/remind?user=7",
		Data: json.RawMessage(`{"user": 7, "kind": "reminder"}`), DueIn: -time.Second,
	})
	c := b.claimer(t, claim.Config{Lease: 30 * time.Second})
	ctx := context.Background()

	n, err := c.ClaimOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	n, err = c.ClaimOnce(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "a leased hook is not due again before its lease expires")

	row := fixture.Get(t, b.q, hook.ID)
	require.Equal(t, "pending", row.Status)
	require.EqualValues(t, 1, row.LeaseSeq)
	require.Zero(t, row.Attempts)
	require.NotNil(t, row.LeaseExpiresAt)
	require.Equal(t, row.LeaseExpiresAt, row.RunAt, "run_at follows the lease")
	require.WithinDuration(t, fixture.DBNow(t, b.q).Add(30*time.Second), *row.LeaseExpiresAt, 2*time.Second)
	require.Equal(t, hook.UpdatedAt, row.UpdatedAt, "a claim is not a user-visible update")

	msgs := natstest.StreamMessages(t, b.js, event.StreamDue)
	require.Len(t, msgs, 1)
	require.Equal(t, event.SubjectDue, msgs[0].Subject)
	require.Equal(t, event.TypeDueHooks, msgs[0].Header.Get(event.TypeHeader), "a hook alone is a DueHooks batch of one")
	require.Equal(t, dueMsgID(hook.ID, 1), fixture.MsgID(msgs[0]))
	due := fixture.DueHook(t, msgs[0])
	require.Equal(t, hook.ID.String(), due.GetHookId())
	require.Equal(t, b.project.String(), due.GetProjectId())
	require.EqualValues(t, 1, due.GetAttempt())
	require.EqualValues(t, 1, due.GetLeaseSeq())
	require.True(t, row.LeaseExpiresAt.Equal(due.GetLeaseExpiresAt().AsTime()))
	require.Equal(t, "https://receiver.example.com/jobs/remind?user=7", due.GetUrl())
	require.Equal(t, "/jobs/remind?user=7", due.GetPath())
	require.JSONEq(t, `{"user": 7, "kind": "reminder"}`, string(due.GetData()))
	require.True(t, hook.PostAt.Equal(due.GetPostAt().AsTime()))
	require.True(t, hook.CreatedAt.Equal(due.GetCreatedAt().AsTime()))
	require.True(t, hook.UpdatedAt.Equal(due.GetUpdatedAt().AsTime()))
	require.EqualValues(t, 6, due.GetMaxAttempts(), "1 + the project's 5 retries")
	require.Equal(t, 30*time.Second, due.GetLeaseDuration().AsDuration())
}

func TestMaxAttemptsComesFromTheOverride(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hook := fixture.Insert(t, b.q, fixture.Hook{
		ProjectID: b.project, Domain: b.domain, DueIn: -time.Second,
		RetryOverride: json.RawMessage(`{"minRetries": 2, "delaySecs": 5, "strategy": "fixed"}`),
	})
	n, err := b.claimer(t, claim.Config{}).ClaimOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	msgs := natstest.StreamMessages(t, b.js, event.StreamDue)
	require.Len(t, msgs, 1)
	due := fixture.DueHook(t, msgs[0])
	require.Equal(t, hook.ID.String(), due.GetHookId())
	require.EqualValues(t, 3, due.GetMaxAttempts())
}

func TestFutureHookIsNotClaimed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hook := b.hook(t, time.Hour)
	n, err := b.claimer(t, claim.Config{}).ClaimOnce(context.Background())
	require.NoError(t, err)
	require.Zero(t, n)
	row := fixture.Get(t, b.q, hook.ID)
	require.Zero(t, row.LeaseSeq)
	require.Nil(t, row.LeaseExpiresAt)
	require.Empty(t, natstest.StreamMessages(t, b.js, event.StreamDue))
}

func TestBatchSizeBoundsAClaim(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for range 5 {
		b.hook(t, -time.Second)
	}
	c := b.claimer(t, claim.Config{BatchSize: 2})
	for _, want := range []int{2, 2, 1, 0} {
		n, err := c.ClaimOnce(context.Background())
		require.NoError(t, err)
		require.Equal(t, want, n)
	}
	require.Len(t, natstest.StreamMessages(t, b.js, event.StreamDue), 5)
}

func TestConcurrentClaimersNeverClaimTheSameHook(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const hooks, claimers = 300, 6
	want := map[string]bool{}
	for range hooks {
		want[b.hook(t, -time.Second).ID.String()] = true
	}
	var wg sync.WaitGroup
	errs := make(chan error, claimers)
	for range claimers {
		c := b.claimer(t, claim.Config{BatchSize: 7})
		wg.Go(func() {
			// A claimer stops when it finds nothing left to take; the last
			// one running can only find nothing once every hook is claimed.
			for {
				n, err := c.ClaimOnce(context.Background())
				if err != nil {
					errs <- err
					return
				}
				if n == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	msgs := natstest.StreamMessages(t, b.js, event.StreamDue)
	require.Len(t, msgs, hooks)
	got := map[string]bool{}
	for _, m := range msgs {
		due := fixture.DueHook(t, m)
		require.EqualValues(t, 1, due.GetLeaseSeq())
		require.False(t, got[due.GetHookId()], "hook %s claimed twice", due.GetHookId())
		got[due.GetHookId()] = true
	}
	require.Equal(t, want, got)
	for id := range want {
		require.EqualValues(t, 1, fixture.Get(t, b.q, uuid.MustParse(id)).LeaseSeq)
	}
}

func TestExpiredLeaseIsReclaimedWithTheSameAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hook := b.hook(t, -time.Second)
	c := b.claimer(t, claim.Config{Lease: 300 * time.Millisecond})
	n, err := c.ClaimOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)

	// No result comes back: once the lease expires the hook is due again.
	require.Eventually(t, func() bool {
		n, err := c.ClaimOnce(context.Background())
		return err == nil && n == 1
	}, 10*time.Second, 20*time.Millisecond)

	row := fixture.Get(t, b.q, hook.ID)
	require.EqualValues(t, 2, row.LeaseSeq)
	require.Zero(t, row.Attempts)
	require.Equal(t, "pending", row.Status)
	msgs := natstest.StreamMessages(t, b.js, event.StreamDue)
	require.Len(t, msgs, 2)
	for i, m := range msgs {
		seq := int64(i + 1)
		require.Equal(t, dueMsgID(hook.ID, seq), fixture.MsgID(m), "each claim's batch has an id of its own")
		due := fixture.DueHook(t, m)
		require.Equal(t, seq, due.GetLeaseSeq())
		require.EqualValues(t, 1, due.GetAttempt(), "a re-drive repeats the attempt it never heard back from")
	}
}

func TestAttemptRedrivenTooOftenIsRecordedAsFailed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	hook := b.hook(t, -time.Second)
	c := b.claimer(t, claim.Config{Lease: 200 * time.Millisecond, MaxRedrives: 2})

	// No result ever comes back (as when the hook's delivery crashes every
	// dispatcher): the first delivery and two re-drives go out, then the
	// next claim ends the attempt with a failed result instead.
	require.Eventually(t, func() bool {
		_, err := c.ClaimOnce(ctx)
		require.NoError(t, err)
		return fixture.CountMessages(b.js, event.StreamResults) == 1
	}, 20*time.Second, 20*time.Millisecond)

	dues := natstest.StreamMessages(t, b.js, event.StreamDue)
	require.Len(t, dues, 3, "one delivery and MaxRedrives re-drives")
	for i, m := range dues {
		require.EqualValues(t, i+1, fixture.DueHook(t, m).GetLeaseSeq())
	}
	results := natstest.StreamMessages(t, b.js, event.StreamResults)
	require.Equal(t, event.ResultsMsgID([]string{hook.ID.String()}, []int64{4}), fixture.MsgID(results[0]))
	res := fixture.AttemptResult(t, results[0])
	require.Equal(t, hook.ID.String(), res.GetHookId())
	require.Equal(t, b.project.String(), res.GetProjectId())
	require.EqualValues(t, 1, res.GetAttempt(), "the attempt that never got a result")
	require.EqualValues(t, 4, res.GetLeaseSeq(), "under the claim's own lease, so the applier accepts it")
	require.Equal(t, eventv1.Outcome_OUTCOME_FAILURE, res.GetOutcome())
	require.Contains(t, res.GetError(), "no result after 3 deliveries of this attempt")
	require.Equal(t, eventv1.FailureClass_FAILURE_CLASS_LOST, res.GetFailureClass())

	row := fixture.Get(t, b.q, hook.ID)
	require.EqualValues(t, 3, row.Redrives)
	require.EqualValues(t, 4, row.LeaseSeq)
	require.Equal(t, "pending", row.Status, "the applier, not the claim, moves the hook on")
}

func TestClaimsPauseWhileTheQueuesAreFull(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for range 5 {
		b.hook(t, -time.Second)
	}
	c := b.claimer(t, claim.Config{MaxInFlight: 3})

	// Nothing takes the DueHooks: after three, the queue is at its bound
	// and the remaining due hooks stay unclaimed in the database.
	n, err := c.ClaimOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, n, "the claim is cut to the room left")
	n, err = c.ClaimOnce(ctx)
	require.Error(t, err)
	require.Zero(t, n)
	require.Equal(t, 3, fixture.CountMessages(b.js, event.StreamDue))

	// Once the dispatchers have taken them, claiming resumes.
	stream, err := b.js.Stream(ctx, event.StreamDue)
	require.NoError(t, err)
	require.NoError(t, stream.Purge(ctx))
	require.Eventually(t, func() bool {
		n, err := c.ClaimOnce(ctx)
		return err == nil && n == 2
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, 2, fixture.CountMessages(b.js, event.StreamDue))
}

func TestLostStreamIsRecreatedAndLeaseRedrives(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	hook := b.hook(t, -time.Second)
	require.NoError(t, b.js.DeleteStream(ctx, event.StreamDue))
	c := b.claimer(t, claim.Config{Lease: 300 * time.Millisecond})

	// The claim commits although nothing can take its DueHook.
	n, err := c.ClaimOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.EqualValues(t, 1, fixture.Get(t, b.q, hook.ID).LeaseSeq)
	require.Equal(t, -1, fixture.CountMessages(b.js, event.StreamDue), "the stream is still gone")

	// The next cycles re-create the stream, and the expired lease re-drives
	// the hook into it.
	require.Eventually(t, func() bool {
		_, err := c.ClaimOnce(ctx)
		return err == nil && fixture.CountMessages(b.js, event.StreamDue) == 1
	}, 10*time.Second, 20*time.Millisecond)
	msgs := natstest.StreamMessages(t, b.js, event.StreamDue)
	require.Len(t, msgs, 1)
	require.Equal(t, dueMsgID(hook.ID, 2), fixture.MsgID(msgs[0]))
}

func TestRunClaimsFullBatchesBackToBackAndStops(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for range 5 {
		b.hook(t, -time.Second)
	}
	// With an hour between polls, all five are published only if a full
	// batch is followed at once by another claim.
	c := b.claimer(t, claim.Config{BatchSize: 2, PollInterval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()

	require.Eventually(t, func() bool {
		return fixture.CountMessages(b.js, event.StreamDue) == 5
	}, 10*time.Second, 10*time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not stop with its context")
	}
}

func TestRunPicksUpHooksThatBecomeDue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.claimer(t, claim.Config{PollInterval: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	defer func() { cancel(); <-done }()

	hook := b.hook(t, 200*time.Millisecond)
	require.Eventually(t, func() bool {
		return fixture.CountMessages(b.js, event.StreamDue) == 1
	}, 10*time.Second, 10*time.Millisecond)
	row := fixture.Get(t, b.q, hook.ID)
	require.EqualValues(t, 1, row.LeaseSeq)
	require.False(t, row.LeaseExpiresAt.Add(-time.Minute).Before(hook.PostAt), "never claimed before post_at")
}

func TestConfigIsValidated(t *testing.T) {
	t.Parallel()
	for _, cfg := range []claim.Config{
		{BatchSize: 0, Lease: time.Second, PollInterval: time.Second},
		{BatchSize: claim.MaxBatchSize + 1, Lease: time.Second, PollInterval: time.Second},
		{BatchSize: 1, Lease: 0, PollInterval: time.Second},
		{BatchSize: 1, Lease: time.Second, PollInterval: 0},
		{BatchSize: 1, Lease: time.Second, PollInterval: time.Second, MaxRedrives: -1},
		{BatchSize: 1, Lease: time.Second, PollInterval: time.Second, MaxInFlight: -1},
	} {
		_, err := claim.New(nil, nil, cfg, slog.Default())
		require.Error(t, err, "%+v", cfg)
	}
}

// TestClaimsWaitWhileTheStreamsCannotBeReached loses NATS after a publish
// found no stream: claims then fail without claiming, so that the hooks
// stay unclaimed in PostgreSQL instead of waiting for a lease, and resume
// once NATS is back.
func TestClaimsWaitWhileTheStreamsCannotBeReached(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := natstest.Start(t, natstest.Options{})
	nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	b.js = js
	ctx := context.Background()
	first := b.hook(t, -time.Second)
	// A short lease: a publish to no stream fails within it.
	c := b.claimer(t, claim.Config{Lease: 2 * time.Second})

	// No stream: the claim commits, its publish fails.
	n, err := c.ClaimOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	port := srv.Addr().(*net.TCPAddr).Port
	srv.Shutdown()
	srv.WaitForShutdown()

	second := b.hook(t, -time.Second)
	n, err = c.ClaimOnce(ctx)
	require.ErrorContains(t, err, "streams unavailable, claims wait")
	require.Zero(t, n)
	require.Zero(t, fixture.Get(t, b.q, second.ID).LeaseSeq, "left unclaimed")

	natstest.Start(t, natstest.Options{Port: port, StoreDir: srv.StoreDir})
	require.Eventually(t, func() bool {
		n, err := c.ClaimOnce(ctx)
		return err == nil && n >= 1
	}, 20*time.Second, 20*time.Millisecond)
	require.EqualValues(t, 1, fixture.Get(t, b.q, second.ID).LeaseSeq, "claimed once, when the streams answered")
	require.Positive(t, fixture.Get(t, b.q, first.ID).LeaseSeq)
	require.Positive(t, fixture.CountMessages(b.js, event.StreamDue), "published")
}
