package result_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/retry"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/result"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
	"github.com/sundial-run/sundial/testkit/natstest"
)

var noRetries = retry.Policy{MinRetries: 0, DelaySecs: 30, Strategy: retry.StrategyFixed, BackoffFactor: 2, MaxDelaySecs: 3600}

// accepted reports a 202 for the hook's current lease, asking for timeout
// seconds (0: none asked), and returns the hook as it then is.
func (b bundle) accepted(t *testing.T, hook storetest.Hook, timeout int32) storetest.Hook {
	t.Helper()
	r := resultFor(hook, eventv1.Outcome_OUTCOME_ASYNC, 202, "")
	r.AsyncTimeoutSeconds = timeout
	require.NoError(t, b.handle(t, r))
	return fixture.Get(t, b.q, hook.ID)
}

func (b bundle) endWait(t *testing.T, id uuid.UUID) bool {
	t.Helper()
	n, err := b.applier.EndWaits(context.Background(), []uuid.UUID{id})
	require.NoError(t, err)
	return n == 1
}

func (b bundle) ack(t *testing.T, h storetest.Hook) {
	t.Helper()
	n, err := b.q.AckForTest(context.Background(), storetest.AckForTestParams{HookID: h.ID, LeaseSeq: h.LeaseSeq})
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
}

// answerFirst records an answer (acked or nacked) for the hook's delivery
// in flight, as the gateway does when it comes before the 202 is applied.
func (b bundle) answerFirst(t *testing.T, h storetest.Hook, state string) {
	t.Helper()
	require.NoError(t, b.q.AnswerBeforeResultForTest(context.Background(),
		storetest.AnswerBeforeResultForTestParams{HookID: h.ID, State: state}))
}

// pendingAnswers lists the hooks with an answer or a timeout to settle.
func (b bundle) pendingAnswers(t *testing.T) []uuid.UUID {
	t.Helper()
	ids, err := store.New(b.pool).EndedAsyncWaits(context.Background(), 100)
	require.NoError(t, err)
	return ids
}

func (b bundle) expire(t *testing.T, id uuid.UUID) {
	t.Helper()
	n, err := b.q.ExpireAsyncWaitForTest(context.Background(), id)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
}

func (b bundle) nack(t *testing.T, h storetest.Hook) {
	t.Helper()
	n, err := b.q.NackForTest(context.Background(), storetest.NackForTestParams{HookID: h.ID, LeaseSeq: h.LeaseSeq})
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
}

func TestAsyncAnswerHoldsTheHookPendingUntilItsDeadline(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct {
		name  string
		asked int32
		want  time.Duration
	}{
		{"the project's timeout", 0, 300 * time.Second},
		{"the receiver's Sundial-Async-Timeout", 40, 40 * time.Second},
		{"a day, the longest a receiver may ask for", 86400, 24 * time.Hour},
		{"the project's timeout, when the receiver asks for more than a day", 86401, 300 * time.Second},
	} {
		hook := b.leased(t, fixed30, time.Minute)
		row := b.accepted(t, hook, tc.asked)
		now := fixture.DBNow(t, b.q)

		require.Equal(t, "pending", row.Status, tc.name)
		require.EqualValues(t, 1, row.Attempts, tc.name)
		require.Nil(t, row.RunAt, "%s: no claim re-drives a waiting hook", tc.name)
		require.Nil(t, row.LeaseExpiresAt, tc.name)
		require.Equal(t, hook.LeaseSeq, row.LeaseSeq, tc.name)
		require.NotNil(t, row.AsyncDeadline, tc.name)
		require.WithinDuration(t, now.Add(tc.want), *row.AsyncDeadline, 2*time.Second, tc.name)
		require.Nil(t, row.FailureError, tc.name)

		attempts := fixture.Attempts(t, b.q, hook.ID)
		require.Len(t, attempts, 1, tc.name)
		a := attempts[0]
		require.Equal(t, "async", a.Outcome, tc.name)
		require.EqualValues(t, 202, *a.StatusCode, tc.name)
		require.Equal(t, "waiting", *a.AsyncState, tc.name)
		require.EqualValues(t, tc.want.Seconds(), *a.AsyncTimeoutSecs, tc.name)
		require.True(t, row.AsyncDeadline.Equal(*a.AsyncDeadline), tc.name)
	}

	// A waiting hook is not due: a claim takes nothing, and the wait has
	// not ended, so there is nothing to settle either.
	n, err := b.claimer(t, time.Minute).ClaimOnce(context.Background())
	require.NoError(t, err)
	require.Zero(t, n)
	ids, err := store.New(b.pool).EndedAsyncWaits(context.Background(), 10)
	require.NoError(t, err)
	require.Empty(t, ids)
	require.Zero(t, fixture.CountMessages(b.js, event.StreamAlerts))
}

func TestRepeatedAsyncResultIsStale(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hook := b.leased(t, fixed30, time.Minute)
	waiting := b.accepted(t, hook, 60)
	// The same result again, or a success for the same lease: the lease
	// ended with the first 202.
	require.Equal(t, waiting, b.accepted(t, hook, 5))
	require.NoError(t, b.handle(t, resultFor(hook, eventv1.Outcome_OUTCOME_SUCCESS, 200, "")))
	require.Equal(t, waiting, fixture.Get(t, b.q, hook.ID))
	require.Len(t, fixture.Attempts(t, b.q, hook.ID), 1)
}

func TestAsyncResultOfAnExpiredLeaseIsStale(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hook := b.leased(t, fixed30, 300*time.Millisecond)
	c := b.claimer(t, time.Minute)
	require.Eventually(t, func() bool {
		n, err := c.ClaimOnce(context.Background())
		return err == nil && n == 1
	}, 10*time.Second, 20*time.Millisecond)
	redriven := fixture.Get(t, b.q, hook.ID)
	require.EqualValues(t, 2, redriven.LeaseSeq)

	require.Equal(t, redriven, b.accepted(t, hook, 0), "the 202 of lease 1 comes too late")
	require.Empty(t, fixture.Attempts(t, b.q, hook.ID))
}

func TestAsyncTimeoutIsAFailedAttemptThatRetries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hook := b.leased(t, fixed30, time.Minute)
	b.accepted(t, hook, 7)
	require.False(t, b.endWait(t, hook.ID), "the wait has not ended yet")

	b.expire(t, hook.ID)
	require.True(t, b.endWait(t, hook.ID))
	require.False(t, b.endWait(t, hook.ID), "settled once")
	now := fixture.DBNow(t, b.q)

	row := fixture.Get(t, b.q, hook.ID)
	require.Equal(t, "retry", row.Status)
	require.EqualValues(t, 1, row.Attempts)
	require.Equal(t, "async timeout: no ack or nack within 7 s", *row.FailureError)
	require.Nil(t, row.AsyncDeadline)
	require.Equal(t, row.TryAt, row.RunAt)
	require.WithinDuration(t, now.Add(30*time.Second), *row.TryAt, 2*time.Second)
	a := fixture.Attempts(t, b.q, hook.ID)[0]
	require.Equal(t, "failure", a.Outcome)
	require.Equal(t, "expired", *a.AsyncState)
	require.Equal(t, *row.FailureError, *a.Error)
	require.EqualValues(t, 202, *a.StatusCode)

	// The retry is an ordinary attempt: the next claim delivers attempt 2.
	b.makeDue(t, hook)
	n, err := b.claimer(t, time.Minute).ClaimOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	msgs := natstest.StreamMessages(t, b.js, event.StreamDue)
	require.EqualValues(t, 2, fixture.DueHook(t, msgs[len(msgs)-1]).GetAttempt())
	require.Zero(t, fixture.CountMessages(b.js, event.StreamAlerts))
}

func TestAsyncTimeoutOfTheLastAttemptFailsTheHookAndAlerts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hook := b.leased(t, noRetries, time.Minute)
	b.accepted(t, hook, 0)
	b.expire(t, hook.ID)
	require.True(t, b.endWait(t, hook.ID))

	row := fixture.Get(t, b.q, hook.ID)
	require.Equal(t, "failed", row.Status)
	require.Equal(t, "async timeout: no ack or nack within 300 s", *row.FailureError)
	require.Nil(t, row.RunAt)
	require.Nil(t, row.AsyncDeadline)
	msgs := natstest.StreamMessages(t, b.js, event.StreamAlerts)
	require.Len(t, msgs, 1)
	alert := fixture.Alert(t, msgs[0])
	require.Equal(t, eventv1.AlertKind_ALERT_KIND_HOOK_FAILED, alert.GetKind())
	require.Equal(t, hook.ID.String(), alert.GetHookId())
	require.Equal(t, *row.FailureError, alert.GetError())
	require.Equal(t, event.HookFailedAlertID(hook.ID, hook.LeaseSeq), alert.GetAlertId())
}

func TestNackRetriesOrFails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct {
		policy retry.Policy
		want   string
	}{{fixed30, "retry"}, {noRetries, "failed"}} {
		hook := b.leased(t, tc.policy, time.Minute)
		waiting := b.accepted(t, hook, 3600)
		b.nack(t, waiting)
		require.True(t, b.endWait(t, hook.ID), tc.want)

		row := fixture.Get(t, b.q, hook.ID)
		require.Equal(t, tc.want, row.Status)
		require.Equal(t, result.ErrNacked, *row.FailureError)
		require.Nil(t, row.AsyncDeadline)
		a := fixture.Attempts(t, b.q, hook.ID)[0]
		require.Equal(t, "failure", a.Outcome)
		require.Equal(t, "nacked", *a.AsyncState, "a repeated nack is told it was nacked")
		require.Equal(t, result.ErrNacked, *a.Error)
	}
	require.Len(t, natstest.StreamMessages(t, b.js, event.StreamAlerts), 1, "the hook out of retries alerts")
}

func TestAckCompletesTheHook(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hook := b.leased(t, fixed30, time.Minute)
	waiting := b.accepted(t, hook, 3600)
	b.ack(t, waiting)
	require.Contains(t, b.pendingAnswers(t), hook.ID, "the ack waits for a scheduler")
	require.True(t, b.endWait(t, hook.ID))
	require.False(t, b.endWait(t, hook.ID), "settled once")

	row := fixture.Get(t, b.q, hook.ID)
	require.Equal(t, "completed", row.Status)
	require.EqualValues(t, 1, row.Attempts)
	require.Nil(t, row.FailureError)
	require.Nil(t, row.AsyncDeadline)
	require.Nil(t, row.RunAt)
	require.Equal(t, waiting.TryAt, row.TryAt, "tryAt keeps the attempt's time")
	a := fixture.Attempts(t, b.q, hook.ID)[0]
	require.Equal(t, "success", a.Outcome)
	require.Equal(t, "acked", *a.AsyncState)
	require.Nil(t, a.Error)
	require.False(t, a.AnswerPending)
	require.NotContains(t, b.pendingAnswers(t), hook.ID)
	require.Zero(t, fixture.CountMessages(b.js, event.StreamAlerts), "the endpoint was not failing")
}

// TestAckRecoversTheFailingEndpoint: an ack is the endpoint's successful
// delivery, and ends its failing spell like any other success, in the
// transaction that completes the hook.
func TestAckRecoversTheFailingEndpoint(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := fixture.Project(t, b.q, domain, noRetries)
	for _, h := range b.leasedTo(t, project, "/p", 2) {
		require.NoError(t, b.handle(t, resultFor(h, eventv1.Outcome_OUTCOME_FAILURE, 500, "HTTP 500")))
	}
	other := b.leasedTo(t, project, "/other", 1)[0]
	require.NoError(t, b.handle(t, resultFor(other, eventv1.Outcome_OUTCOME_FAILURE, 500, "HTTP 500")))
	failing := natstest.StreamMessages(t, b.js, event.StreamAlerts)
	require.Len(t, failing, 3)

	hook := b.leasedTo(t, project, "/p", 1)[0]
	b.ack(t, b.accepted(t, hook, 0))
	require.True(t, b.endWait(t, hook.ID))
	require.Equal(t, "completed", fixture.Get(t, b.q, hook.ID).Status)
	msgs := natstest.StreamMessages(t, b.js, event.StreamAlerts)
	require.Len(t, msgs, 4, "only the acked hook's endpoint recovers")
	got := fixture.Alert(t, msgs[3])
	require.Equal(t, eventv1.AlertKind_ALERT_KIND_ENDPOINT_RECOVERED, got.GetKind())
	require.Equal(t, hook.ID.String(), got.GetHookId())
	require.Equal(t, "/p", got.GetPath())
	require.Equal(t, int32(2), got.GetAttempts(), "the hooks that failed in the spell")

	// A nack on the failing endpoint recovers nothing.
	nacked := b.leasedTo(t, project, "/other", 1)[0]
	b.nack(t, b.accepted(t, nacked, 0))
	require.True(t, b.endWait(t, nacked.ID))
	require.Len(t, natstest.StreamMessages(t, b.js, event.StreamAlerts), 5, "its hook.failed alert only")
	require.Equal(t, eventv1.AlertKind_ALERT_KIND_HOOK_FAILED,
		fixture.Alert(t, natstest.StreamMessages(t, b.js, event.StreamAlerts)[4]).GetKind())
}

// TestAnswerBeforeTheResult: the receiver acks or nacks before the
// scheduler has applied the delivery's 202; the gateway recorded the
// attempt with the answer. The scheduler settles it whichever comes first,
// its sweep or the 202, and the other then finds nothing to do.
func TestAnswerBeforeTheResult(t *testing.T) {
	t.Parallel()
	b := setup(t)

	// The sweep first: the hook is still in flight; the 202 then is stale.
	hook := b.leased(t, fixed30, time.Minute)
	b.answerFirst(t, hook, "acked")
	require.True(t, b.endWait(t, hook.ID))
	row := fixture.Get(t, b.q, hook.ID)
	require.Equal(t, "completed", row.Status)
	require.EqualValues(t, 1, row.Attempts)
	require.Nil(t, row.LeaseExpiresAt)
	require.Equal(t, row, b.accepted(t, hook, 0), "the 202 comes too late")
	attempts := fixture.Attempts(t, b.q, hook.ID)
	require.Len(t, attempts, 1)
	require.Equal(t, "success", attempts[0].Outcome)
	require.False(t, attempts[0].AnswerPending)

	// The 202 first: its transaction finds the answer and settles it.
	for _, tc := range []struct{ state, status, outcome string }{
		{"acked", "completed", "success"}, {"nacked", "retry", "failure"},
	} {
		hook := b.leased(t, fixed30, time.Minute)
		b.answerFirst(t, hook, tc.state)
		row := b.accepted(t, hook, 0)
		require.Equal(t, tc.status, row.Status, tc.state)
		require.EqualValues(t, 1, row.Attempts, tc.state)
		require.Nil(t, row.AsyncDeadline, tc.state)
		a := fixture.Attempts(t, b.q, hook.ID)[0]
		require.Equal(t, tc.outcome, a.Outcome, tc.state)
		require.Equal(t, tc.state, *a.AsyncState, tc.state)
		require.False(t, a.AnswerPending, tc.state)
		require.False(t, b.endWait(t, hook.ID), "%s: settled once", tc.state)
	}
	require.Empty(t, b.pendingAnswers(t))
}

// TestAnAnswerThatCanNoLongerApplyIsForgotten: the claim re-drove a hook
// whose receiver had answered first, and the new delivery's own result was
// applied before any sweep: the old answer no longer applies, and a sweep
// clears it so that no sweep lists it again.
func TestAnAnswerThatCanNoLongerApplyIsForgotten(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hook := b.leased(t, fixed30, 300*time.Millisecond)
	b.answerFirst(t, hook, "acked")
	c := b.claimer(t, time.Minute)
	require.Eventually(t, func() bool {
		n, err := c.ClaimOnce(context.Background())
		return err == nil && n == 1
	}, 10*time.Second, 20*time.Millisecond)
	redriven := fixture.Get(t, b.q, hook.ID)
	require.NoError(t, b.handle(t, resultFor(redriven, eventv1.Outcome_OUTCOME_FAILURE, 500, "HTTP 500")))
	require.Equal(t, "retry", fixture.Get(t, b.q, hook.ID).Status)

	require.Contains(t, b.pendingAnswers(t), hook.ID)
	require.False(t, b.endWait(t, hook.ID), "nothing to settle")
	require.Empty(t, b.pendingAnswers(t), "forgotten")
	require.Equal(t, "retry", fixture.Get(t, b.q, hook.ID).Status)
}

func TestEndWaitOfAHookNotWaitingChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hook := b.leased(t, fixed30, time.Minute)
	require.False(t, b.endWait(t, hook.ID), "in flight")
	require.False(t, b.endWait(t, uuid.Must(uuid.NewV7())), "no such hook")
	require.Equal(t, hook, fixture.Get(t, b.q, hook.ID))
}
