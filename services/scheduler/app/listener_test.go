package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/retry"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
)

// TestAHeldHookGoesToTheListenerWhenItIsBack: while a project's listener
// is away within its resume window, its due hook is held; when the
// listener is back (the gateway's notification), the scheduler releases it
// and hands it out for the listener, as its first attempt.
func TestAHeldHookGoesToTheListenerWhenItIsBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.dispatcher(t)
	b.start(t)
	project := fixture.Project(t, b.q, "receiver.example.com",
		retry.Policy{MinRetries: 1, DelaySecs: 1, Strategy: retry.StrategyFixed, BackoffFactor: 2, MaxDelaySecs: 3600})
	presence := func(connected bool) {
		require.NoError(t, b.q.UpsertPresenceForTest(context.Background(), storetest.UpsertPresenceForTestParams{
			ProjectID: project, GatewayID: "gw-1", Connected: connected, ResumeInSeconds: 900,
		}))
	}
	presence(false)
	hook := fixture.Insert(t, b.q, fixture.Hook{ProjectID: project, Domain: "receiver.example.com", Path: "/x", DueIn: 0})
	require.Eventually(t, func() bool { return fixture.Get(t, b.q, hook.ID).HeldDueAt != nil },
		10*time.Second, 10*time.Millisecond)

	presence(true)
	require.NoError(t, b.q.NotifyListenerForTest(context.Background(), project))

	due := d.next()
	require.Equal(t, hook.ID.String(), due.GetHookId())
	require.True(t, due.GetListener())
	require.EqualValues(t, 1, due.GetAttempt())
	require.EqualValues(t, 1, due.GetLeaseSeq(), "the hold took no lease")
	require.Nil(t, fixture.Get(t, b.q, hook.ID).HeldDueAt)
}
