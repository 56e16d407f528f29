package result_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/retry"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
	"github.com/sundial-run/sundial/testkit/natstest"
)

// claimAndFail claims the hook's next attempt, checks the DueHook the
// dispatcher would get, and reports a failure for it.
func (b bundle) claimAndFail(t *testing.T, hook storetest.Hook, wantAttempt, wantMax int32) storetest.Hook {
	t.Helper()
	n, err := b.claimer(t, time.Minute).ClaimOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	msgs := natstest.StreamMessages(t, b.js, event.StreamDue)
	due := fixture.DueHook(t, msgs[len(msgs)-1])
	require.Equal(t, wantAttempt, due.GetAttempt())
	require.Equal(t, wantMax, due.GetMaxAttempts())

	leased := fixture.Get(t, b.q, hook.ID)
	require.NoError(t, b.handle(t, resultFor(leased, eventv1.Outcome_OUTCOME_FAILURE, 503, "HTTP 503")))
	return fixture.Get(t, b.q, hook.ID)
}

// makeDue brings a waiting retry forward so the test need not wait for it.
func (b bundle) makeDue(t *testing.T, hook storetest.Hook) {
	t.Helper()
	n, err := b.q.MakeDueForTest(context.Background(), hook.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
}

func TestBulkRetriedHookGetsAFreshBudgetAndKeepsItsHistory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Two retries, exponential from 10 s: retry 1 waits 10 s, retry 2 20 s.
	policy := retry.Policy{MinRetries: 2, DelaySecs: 10, Strategy: retry.StrategyExponential, BackoffFactor: 2, MaxDelaySecs: 3600}
	project := fixture.Project(t, b.q, domain, policy)
	hook := fixture.Insert(t, b.q, fixture.Hook{ProjectID: project, Domain: domain, Path: "/p", DueIn: -time.Second})

	// The first budget: attempts 1 to 3, then the hook fails.
	row := b.claimAndFail(t, hook, 1, 3)
	require.Equal(t, "retry", row.Status)
	b.makeDue(t, hook)
	row = b.claimAndFail(t, hook, 2, 3)
	require.Equal(t, "retry", row.Status)
	b.makeDue(t, hook)
	row = b.claimAndFail(t, hook, 3, 3)
	require.Equal(t, "failed", row.Status)
	require.Len(t, natstest.StreamMessages(t, b.js, event.StreamAlerts), 1)

	// The gateway's bulk retry: a fresh budget from attempt 3, due now.
	n, err := b.q.RetryFailedHookForTest(context.Background(), hook.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	row = fixture.Get(t, b.q, hook.ID)
	require.Equal(t, "pending", row.Status)
	require.EqualValues(t, 3, row.RetryBudgetBase)
	require.EqualValues(t, 3, row.Attempts, "the attempts made stay counted")

	// The second budget: attempts 4 to 6, numbered after the first ones,
	// and its first retry waits the policy's first delay again.
	row = b.claimAndFail(t, hook, 4, 6)
	require.Equal(t, "retry", row.Status, "a fresh budget, not an instant failure")
	now := fixture.DBNow(t, b.q)
	require.WithinDuration(t, now.Add(10*time.Second), *row.TryAt, 2*time.Second, "retry 1 of the new budget")
	b.makeDue(t, hook)
	row = b.claimAndFail(t, hook, 5, 6)
	require.Equal(t, "retry", row.Status)
	now = fixture.DBNow(t, b.q)
	require.WithinDuration(t, now.Add(20*time.Second), *row.TryAt, 2*time.Second, "retry 2 of the new budget")
	b.makeDue(t, hook)
	row = b.claimAndFail(t, hook, 6, 6)
	require.Equal(t, "failed", row.Status)
	require.EqualValues(t, 6, row.Attempts)
	require.Len(t, natstest.StreamMessages(t, b.js, event.StreamAlerts), 2, "the new budget's failure alerts again")

	attempts := fixture.Attempts(t, b.q, hook.ID)
	require.Len(t, attempts, 6, "the whole history is kept")
	for i, a := range attempts {
		require.EqualValues(t, i+1, a.Attempt)
		require.Equal(t, "failure", a.Outcome)
	}
}
