package result_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/retry"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
)

// deferred is the OUTCOME_DEFERRED result a dispatcher reports for the
// hook's current lease when it could not start the delivery.
func deferred(h storetest.Hook, wait time.Duration) *eventv1.AttemptResult {
	r := resultFor(h, eventv1.Outcome_OUTCOME_DEFERRED, 0, "")
	r.Duration, r.ResponseExcerpt = nil, ""
	r.DeferFor = durationpb.New(wait)
	return r
}

func TestDeferralPutsTheHookBackWithoutAnAttempt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		suggested time.Duration
		want      time.Duration
	}{
		{"as suggested", 700 * time.Millisecond, 700 * time.Millisecond},
		{"none suggested: the least", 0, event.MinDefer},
		{"too long: the most", time.Hour, event.MaxDefer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			hook := b.leased(t, fixed30, time.Minute)
			require.NoError(t, b.handle(t, deferred(hook, tc.suggested)))
			now := fixture.DBNow(t, b.q)

			row := fixture.Get(t, b.q, hook.ID)
			require.Equal(t, "pending", row.Status, "a hook never attempted stays pending")
			require.Zero(t, row.Attempts, "no attempt counted")
			require.Nil(t, row.LeaseExpiresAt, "the lease is released")
			require.Nil(t, row.FailureError)
			require.Nil(t, row.TryAt)
			require.NotNil(t, row.RunAt)
			require.WithinDuration(t, now.Add(tc.want), *row.RunAt, 500*time.Millisecond)
			require.Equal(t, hook.UpdatedAt, row.UpdatedAt, "not a user-visible update")
			require.Empty(t, fixture.Attempts(t, b.q, hook.ID), "no attempt recorded")

			// Applied once: the same result again is stale.
			require.NoError(t, b.handle(t, deferred(hook, tc.suggested)))
			require.Equal(t, row, fixture.Get(t, b.q, hook.ID))
		})
	}
}

func TestDeferralResetsTheRedriveCount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	hook := b.leased(t, fixed30, 200*time.Millisecond)
	c := b.claimer(t, 200*time.Millisecond)
	// No result for the first lease: the next claim re-drives the hook.
	require.Eventually(t, func() bool {
		n, err := c.ClaimOnce(ctx)
		require.NoError(t, err)
		return n == 1
	}, 10*time.Second, 10*time.Millisecond)
	redriven := fixture.Get(t, b.q, hook.ID)
	require.EqualValues(t, 1, redriven.Redrives)

	// A deferral of the old lease is stale and changes nothing.
	require.NoError(t, b.handle(t, deferred(hook, time.Second)))
	require.Equal(t, redriven, fixture.Get(t, b.q, hook.ID))

	require.NoError(t, b.handle(t, deferred(redriven, event.MinDefer)))
	row := fixture.Get(t, b.q, hook.ID)
	require.Zero(t, row.Redrives, "a dispatcher had the hook: no loss")
	require.Nil(t, row.LeaseExpiresAt)

	// The next claim is a first delivery again, not a re-drive.
	require.Eventually(t, func() bool {
		n, err := c.ClaimOnce(ctx)
		require.NoError(t, err)
		return n == 1
	}, 10*time.Second, 10*time.Millisecond)
	row = fixture.Get(t, b.q, hook.ID)
	require.Zero(t, row.Redrives)
	require.EqualValues(t, 1, row.Attempts+1, "still its first attempt")
}

func TestDeferralOfARetryKeepsItARetry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	oneSecond := retry.Policy{MinRetries: 2, DelaySecs: 1, Strategy: retry.StrategyFixed, BackoffFactor: 2, MaxDelaySecs: 3600}
	hook := b.leased(t, oneSecond, time.Minute)
	require.NoError(t, b.handle(t, resultFor(hook, eventv1.Outcome_OUTCOME_FAILURE, 503, "HTTP 503")))
	c := b.claimer(t, time.Minute)
	require.Eventually(t, func() bool {
		n, err := c.ClaimOnce(ctx)
		require.NoError(t, err)
		return n == 1
	}, 10*time.Second, 20*time.Millisecond)
	second := fixture.Get(t, b.q, hook.ID)
	require.Equal(t, "pending", second.Status)

	require.NoError(t, b.handle(t, deferred(second, 2*time.Second)))
	row := fixture.Get(t, b.q, hook.ID)
	require.Equal(t, "retry", row.Status, "back to waiting for its retry")
	require.EqualValues(t, 1, row.Attempts, "the deferral is not an attempt")
	require.Equal(t, "HTTP 503", *row.FailureError, "the last real attempt's error stays")
	require.Equal(t, row.RunAt, row.TryAt, "tryAt says when it is tried")
	require.Len(t, fixture.Attempts(t, b.q, hook.ID), 1)
}
