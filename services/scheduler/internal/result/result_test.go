package result_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/retry"
	"github.com/sundial-run/sundial/services/scheduler/internal/claim"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/result"
	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const domain = "receiver.example.com"

type bundle struct {
	pool    *pgxpool.Pool
	url     string
	q       *storetest.Queries
	nc      *nats.Conn
	js      jetstream.JetStream
	log     *slog.Logger
	applier *result.Applier
	// batcher applies results through b.handle; it runs until the test ends.
	batcher *result.Batcher
}

// lowJitter makes every jittered delay its lower bound, 0.8 times the delay.
func lowJitter() float64 { return 0 }

func setup(t *testing.T) bundle {
	t.Helper()
	pool, url := pgtest.NewPool(t)
	nc, js := natstest.Start(t, natstest.Options{}).Connect(t)
	require.NoError(t, event.EnsureStreams(context.Background(), js, event.DefaultReplicas))
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	applier, err := result.New(pool, js, event.DefaultReplicas, log, lowJitter)
	require.NoError(t, err)
	return bundle{pool: pool, url: url, q: storetest.New(pool), nc: nc, js: js, log: log, applier: applier,
		batcher: runBatcher(t, applier, result.BatchConfig{MaxBatch: 500, Linger: 2 * time.Millisecond, InFlight: 4})}
}

// runBatcher runs a Batcher until the test ends, and checks that Run
// returns once its context is cancelled.
func runBatcher(t *testing.T, applier *result.Applier, cfg result.BatchConfig) *result.Batcher {
	t.Helper()
	batcher, err := applier.NewBatcher(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); batcher.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-stopped:
		case <-time.After(10 * time.Second):
			t.Error("batcher did not stop")
		}
	})
	return batcher
}

// leased creates a due hook in a project with the given policy and claims
// it with the real claimer, as the scheduler does before a delivery.
func (b bundle) leased(t *testing.T, policy retry.Policy, lease time.Duration) storetest.Hook {
	t.Helper()
	project := fixture.Project(t, b.q, domain, policy)
	hook := fixture.Insert(t, b.q, fixture.Hook{ProjectID: project, Domain: domain, Path: "/p", DueIn: -time.Second})
	c := b.claimer(t, lease)
	n, err := c.ClaimOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	return fixture.Get(t, b.q, hook.ID)
}

func (b bundle) claimer(t *testing.T, lease time.Duration) *claim.Claimer {
	t.Helper()
	c, err := claim.New(b.pool, b.js, claim.Config{BatchSize: 10, Lease: lease, PollInterval: time.Second, MaxRedrives: 5}, b.log)
	require.NoError(t, err)
	return c
}

// resultFor is the AttemptResult a dispatcher would report for the hook's
// current lease.
func resultFor(h storetest.Hook, outcome eventv1.Outcome, status int32, errText string) *eventv1.AttemptResult {
	return &eventv1.AttemptResult{
		HookId:          h.ID.String(),
		ProjectId:       h.ProjectID.String(),
		Attempt:         h.Attempts + 1,
		LeaseSeq:        h.LeaseSeq,
		Outcome:         outcome,
		StatusCode:      status,
		Error:           errText,
		StartedAt:       timestamppb.New(time.Now().Add(-time.Second).Truncate(time.Microsecond)),
		Duration:        durationpb.New(1500 * time.Millisecond),
		ResponseExcerpt: "ok then",
	}
}

func (b bundle) handle(t *testing.T, r *eventv1.AttemptResult) error {
	t.Helper()
	return b.batcher.Handle(context.Background(), resultsDelivery(t, nil, r))
}

// resultsBody encodes results as the body of an AttemptResults message.
func resultsBody(t testing.TB, rs ...*eventv1.AttemptResult) []byte {
	t.Helper()
	data, err := proto.Marshal(&eventv1.AttemptResults{Results: rs})
	require.NoError(t, err)
	return data
}

// resultsDelivery is the first delivery of an AttemptResults message
// carrying rs, with header's other headers (a trace context, say).
func resultsDelivery(t testing.TB, header nats.Header, rs ...*eventv1.AttemptResult) bus.Delivery {
	t.Helper()
	h := nats.Header{}
	for k, v := range header {
		h[k] = v
	}
	h.Set(event.TypeHeader, event.TypeAttemptResults)
	return bus.Delivery{Subject: event.SubjectResult, Data: resultsBody(t, rs...), Header: h, NumDelivered: 1}
}

var fixed30 = retry.Policy{MinRetries: 2, DelaySecs: 30, Strategy: retry.StrategyFixed, BackoffFactor: 2, MaxDelaySecs: 3600}

func TestSuccessCompletesTheHook(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hook := b.leased(t, fixed30, time.Minute)
	before := fixture.DBNow(t, b.q)
	r := resultFor(hook, eventv1.Outcome_OUTCOME_SUCCESS, 200, "")
	require.NoError(t, b.handle(t, r))

	row := fixture.Get(t, b.q, hook.ID)
	require.Equal(t, "completed", row.Status)
	require.EqualValues(t, 1, row.Attempts)
	require.InDelta(t, 1.5, row.PostDurationSeconds, 1e-9)
	require.Nil(t, row.FailureError)
	require.NotNil(t, row.TryAt)
	require.True(t, r.GetStartedAt().AsTime().Equal(*row.TryAt), "tryAt is when the attempt was made")
	require.Nil(t, row.RunAt)
	require.Nil(t, row.LeaseExpiresAt)
	require.False(t, row.UpdatedAt.Before(before))

	attempts := fixture.Attempts(t, b.q, hook.ID)
	require.Len(t, attempts, 1)
	a := attempts[0]
	require.EqualValues(t, 1, a.Attempt)
	require.Equal(t, hook.LeaseSeq, a.LeaseSeq)
	require.Equal(t, "success", a.Outcome)
	require.NotNil(t, a.StatusCode)
	require.EqualValues(t, 200, *a.StatusCode)
	require.Nil(t, a.Error)
	require.NotNil(t, a.ResponseExcerpt)
	require.Equal(t, "ok then", *a.ResponseExcerpt)
	require.True(t, r.GetStartedAt().AsTime().Equal(a.StartedAt))
	require.InDelta(t, 1.5, a.DurationSeconds, 1e-9)
	require.Zero(t, fixture.CountMessages(b.js, event.StreamAlerts))
}

func TestFailureSchedulesARetryByTheDatabaseClock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hook := b.leased(t, fixed30, time.Minute)
	require.NoError(t, b.handle(t, resultFor(hook, eventv1.Outcome_OUTCOME_FAILURE, 503, "HTTP 503")))
	now := fixture.DBNow(t, b.q)

	row := fixture.Get(t, b.q, hook.ID)
	require.Equal(t, "retry", row.Status)
	require.EqualValues(t, 1, row.Attempts)
	require.NotNil(t, row.FailureError)
	require.Equal(t, "HTTP 503", *row.FailureError)
	require.NotNil(t, row.TryAt)
	require.Equal(t, row.TryAt, row.RunAt, "the retry is due when tryAt says")
	require.WithinDuration(t, now.Add(30*time.Second), *row.TryAt, 2*time.Second)
	require.Nil(t, row.LeaseExpiresAt)

	attempts := fixture.Attempts(t, b.q, hook.ID)
	require.Len(t, attempts, 1)
	require.Equal(t, "failure", attempts[0].Outcome)
	require.EqualValues(t, 503, *attempts[0].StatusCode)
	require.Equal(t, "HTTP 503", *attempts[0].Error)
	require.Zero(t, fixture.CountMessages(b.js, event.StreamAlerts))
}

func TestRetryDelayFollowsTheOverrideWithJitter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := fixture.Project(t, b.q, domain, fixed30)
	hook := fixture.Insert(t, b.q, fixture.Hook{
		ProjectID: project, Domain: domain, DueIn: -time.Second,
		RetryOverride: json.RawMessage(`{"minRetries": 3, "delaySecs": 50, "strategy": "exponential", "jitter": true}`),
	})
	_, err := b.claimer(t, time.Minute).ClaimOnce(context.Background())
	require.NoError(t, err)
	hook = fixture.Get(t, b.q, hook.ID)
	require.NoError(t, b.handle(t, resultFor(hook, eventv1.Outcome_OUTCOME_FAILURE, 0, "timeout after 10s")))
	now := fixture.DBNow(t, b.q)

	row := fixture.Get(t, b.q, hook.ID)
	require.Equal(t, "retry", row.Status)
	// Retry 1 of the override: 50 s, times the lowest jitter factor 0.8.
	require.WithinDuration(t, now.Add(40*time.Second), *row.TryAt, 2*time.Second)
	require.Nil(t, fixture.Attempts(t, b.q, hook.ID)[0].StatusCode, "no answer, no status code")
}

func TestLastFailureFailsTheHookAndAlerts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	noRetries := retry.Policy{MinRetries: 0, DelaySecs: 30, Strategy: retry.StrategyFixed, BackoffFactor: 2, MaxDelaySecs: 3600}
	hook := b.leased(t, noRetries, time.Minute)
	r := resultFor(hook, eventv1.Outcome_OUTCOME_FAILURE, 500, "HTTP 500")
	require.NoError(t, b.handle(t, r))

	row := fixture.Get(t, b.q, hook.ID)
	require.Equal(t, "failed", row.Status)
	require.EqualValues(t, 1, row.Attempts)
	require.Equal(t, "HTTP 500", *row.FailureError)
	require.Nil(t, row.RunAt)
	require.Nil(t, row.LeaseExpiresAt)
	require.True(t, r.GetStartedAt().AsTime().Equal(*row.TryAt))
	require.Len(t, fixture.Attempts(t, b.q, hook.ID), 1)

	msgs := natstest.StreamMessages(t, b.js, event.StreamAlerts)
	require.Len(t, msgs, 1)
	require.Equal(t, event.SubjectAlert, msgs[0].Subject)
	alertID := "hook.failed:" + hook.ID.String() + ":" + strconv.FormatInt(r.GetLeaseSeq(), 10)
	require.Equal(t, event.MsgID(event.KindAlert, alertID, 0), fixture.MsgID(msgs[0]))
	alert := fixture.Alert(t, msgs[0])
	require.Equal(t, alertID, alert.GetAlertId())
	require.Equal(t, eventv1.AlertKind_ALERT_KIND_HOOK_FAILED, alert.GetKind())
	require.Equal(t, hook.ProjectID.String(), alert.GetProjectId())
	require.Equal(t, hook.ID.String(), alert.GetHookId())
	require.Equal(t, "/p", alert.GetPath())
	require.Equal(t, "HTTP 500", alert.GetError())
	require.EqualValues(t, 1, alert.GetAttempts())
	require.True(t, row.UpdatedAt.Equal(alert.GetOccurredAt().AsTime()), "the alert is dated by the database clock")
}

func TestStaleResultChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hook := b.leased(t, fixed30, 300*time.Millisecond)
	old := resultFor(hook, eventv1.Outcome_OUTCOME_SUCCESS, 200, "")

	// The result is late: the lease expires and the hook is re-driven.
	c := b.claimer(t, time.Minute)
	require.Eventually(t, func() bool {
		n, err := c.ClaimOnce(context.Background())
		return err == nil && n == 1
	}, 10*time.Second, 20*time.Millisecond)
	before := fixture.Get(t, b.q, hook.ID)
	require.EqualValues(t, 2, before.LeaseSeq)

	require.NoError(t, b.handle(t, old), "a stale result is acknowledged")
	require.Equal(t, before, fixture.Get(t, b.q, hook.ID))
	require.Empty(t, fixture.Attempts(t, b.q, hook.ID))

	// The result of the current lease still applies.
	require.NoError(t, b.handle(t, resultFor(before, eventv1.Outcome_OUTCOME_SUCCESS, 200, "")))
	require.Equal(t, "completed", fixture.Get(t, b.q, hook.ID).Status)
	attempts := fixture.Attempts(t, b.q, hook.ID)
	require.Len(t, attempts, 1)
	require.EqualValues(t, 2, attempts[0].LeaseSeq)
}

func TestSameResultTwiceWritesOneAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, outcome := range []eventv1.Outcome{eventv1.Outcome_OUTCOME_SUCCESS, eventv1.Outcome_OUTCOME_FAILURE} {
		hook := b.leased(t, fixed30, time.Minute)
		r := resultFor(hook, outcome, 500, "HTTP 500")
		require.NoError(t, b.handle(t, r))
		after := fixture.Get(t, b.q, hook.ID)
		require.NoError(t, b.handle(t, r))
		require.Equal(t, after, fixture.Get(t, b.q, hook.ID), outcome.String())
		require.Len(t, fixture.Attempts(t, b.q, hook.ID), 1, outcome.String())
	}
}

func TestResultForAMissingHookIsStale(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := &eventv1.AttemptResult{
		HookId: uuid.Must(uuid.NewV7()).String(), Attempt: 1, LeaseSeq: 1,
		Outcome: eventv1.Outcome_OUTCOME_SUCCESS, StatusCode: 200, StartedAt: timestamppb.Now(),
	}
	require.NoError(t, b.handle(t, r))
}

func TestTextPostgresCannotStoreIsCleaned(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hook := b.leased(t, fixed30, time.Minute)
	r := resultFor(hook, eventv1.Outcome_OUTCOME_FAILURE, 500, "bad\x00byte")
	r.ResponseExcerpt = "nul\x00inside"
	require.NoError(t, b.handle(t, r))
	a := fixture.Attempts(t, b.q, hook.ID)[0]
	require.Equal(t, "badbyte", *a.Error)
	require.Equal(t, "nulinside", *a.ResponseExcerpt)

	// Protobuf refuses invalid UTF-8 on the wire, but the batcher may be
	// handed anything once decoded.
	hook = b.leased(t, fixed30, time.Minute)
	r = resultFor(hook, eventv1.Outcome_OUTCOME_FAILURE, 500, "bad \xff")
	require.NoError(t, result.HandleResults(b.batcher, context.Background(), []*eventv1.AttemptResult{r}))
	require.Equal(t, "bad \uFFFD", *fixture.Attempts(t, b.q, hook.ID)[0].Error)
}

// TestMalformedResultsAreDropped runs the real consumer: a message that
// cannot be read (its body, or its Sundial-Type missing or another), or
// whose every result can never be applied, is terminated (bus.Drop, logged)
// rather than redelivered for ever.
func TestMalformedResultsAreDropped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	valid := &eventv1.AttemptResult{HookId: uuid.Must(uuid.NewV7()).String(), Attempt: 1, LeaseSeq: 1, StartedAt: timestamppb.Now()}
	type message struct {
		typ  string
		body []byte
	}
	msgs := []message{{event.TypeAttemptResults, []byte("\xff\xff not protobuf")}}
	for _, mutate := range []func(*eventv1.AttemptResult){
		func(r *eventv1.AttemptResult) { r.Outcome = eventv1.Outcome_OUTCOME_UNSPECIFIED },
		func(r *eventv1.AttemptResult) { r.Outcome, r.HookId = eventv1.Outcome_OUTCOME_SUCCESS, "not-a-uuid" },
		func(r *eventv1.AttemptResult) { r.Outcome, r.Attempt = eventv1.Outcome_OUTCOME_SUCCESS, 0 },
		func(r *eventv1.AttemptResult) { r.Outcome, r.StartedAt = eventv1.Outcome_OUTCOME_SUCCESS, nil },
	} {
		r := proto.Clone(valid).(*eventv1.AttemptResult)
		mutate(r)
		msgs = append(msgs, message{event.TypeAttemptResults, resultsBody(t, r)})
	}
	// Nor is a message without the subject's one type read, whatever its
	// body: a result alone, or a batch under no type or another.
	success := proto.Clone(valid).(*eventv1.AttemptResult)
	success.Outcome = eventv1.Outcome_OUTCOME_SUCCESS
	alone, err := proto.Marshal(success)
	require.NoError(t, err)
	msgs = append(msgs,
		message{"", alone},
		message{"sundial.event.v1.AttemptResult", alone},
		message{"", resultsBody(t, success)},
		message{event.TypeDueHooks, resultsBody(t, success)})
	for i, m := range msgs {
		msg := nats.NewMsg(event.SubjectResult)
		msg.Data = m.body
		if m.typ != "" {
			msg.Header.Set(event.TypeHeader, m.typ)
		}
		_, err := b.js.PublishMsg(context.Background(), msg,
			jetstream.WithMsgID(event.ResultsMsgID([]string{"malformed"}, []int64{int64(i)})))
		require.NoError(t, err)
	}

	outcomes := make(chan bus.Outcome, len(msgs))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = bus.Consume(ctx, b.js, event.SchedulerConsumer(event.DefaultReplicas), b.batcher.Handle, bus.ConsumeOptions{
			Concurrency: 4, Logger: b.log, Settled: func(o bus.Outcome) { outcomes <- o },
		})
	}()
	defer func() { cancel(); <-done }()
	for range msgs {
		select {
		case o := <-outcomes:
			require.Equal(t, bus.OutcomeDrop, o)
		case <-time.After(10 * time.Second):
			t.Fatal("result not settled")
		}
	}
}

func TestLostAlertStreamIsRecreatedForTheAlert(t *testing.T) {
	t.Parallel()
	b := setup(t)
	noRetries := retry.Policy{MinRetries: 0, DelaySecs: 30, Strategy: retry.StrategyFixed, BackoffFactor: 2, MaxDelaySecs: 3600}
	hook := b.leased(t, noRetries, time.Minute)
	require.NoError(t, b.js.DeleteStream(context.Background(), event.StreamAlerts))

	// NATS lost the alert stream: the first publish finds none, the
	// applier re-creates it and the retry delivers the alert.
	require.NoError(t, b.handle(t, resultFor(hook, eventv1.Outcome_OUTCOME_FAILURE, 500, "HTTP 500")))
	require.Equal(t, "failed", fixture.Get(t, b.q, hook.ID).Status)
	msgs := natstest.StreamMessages(t, b.js, event.StreamAlerts)
	require.Len(t, msgs, 1)
	require.Equal(t, hook.ID.String(), fixture.Alert(t, msgs[0]).GetHookId())
}
