package claim_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/services/scheduler/internal/claim"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
	"github.com/sundial-run/sundial/testkit/natstest"
)

// presence writes the project's presence row: connected (listening) or
// not (holding, its window 15 minutes ahead).
func (b bundle) presence(t *testing.T, connected bool) {
	t.Helper()
	require.NoError(t, b.q.UpsertPresenceForTest(context.Background(), storetest.UpsertPresenceForTestParams{
		ProjectID: b.project, GatewayID: "gw-1", Connected: connected, ResumeInSeconds: 900,
	}))
}

func TestAListeningProjectsDueHookSaysListener(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.presence(t, true)
	hook := b.hook(t, -time.Second)
	c := b.claimer(t, claim.Config{})

	n, err := c.ClaimOnce(context.Background())

	require.NoError(t, err)
	require.Equal(t, 1, n)
	msgs := natstest.StreamMessages(t, b.js, event.StreamDue)
	require.Len(t, msgs, 1)
	due := fixture.DueHook(t, msgs[0])
	require.Equal(t, hook.ID.String(), due.GetHookId())
	require.True(t, due.GetListener())
}

func TestADomainsDueHookDoesNotSayListener(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.hook(t, -time.Second)
	c := b.claimer(t, claim.Config{})

	n, err := c.ClaimOnce(context.Background())

	require.NoError(t, err)
	require.Equal(t, 1, n)
	msgs := natstest.StreamMessages(t, b.js, event.StreamDue)
	require.Len(t, msgs, 1)
	require.False(t, fixture.DueHook(t, msgs[0]).GetListener())
}

func TestAHoldingProjectsHookIsHeldNotPublished(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.presence(t, false)
	hook := b.hook(t, -time.Second)
	c := b.claimer(t, claim.Config{})

	n, err := c.ClaimOnce(context.Background())

	require.NoError(t, err)
	require.Zero(t, n, "a held hook is left out")
	require.Empty(t, natstest.StreamMessages(t, b.js, event.StreamDue))
	row := fixture.Get(t, b.q, hook.ID)
	require.NotNil(t, row.HeldDueAt)
	require.Zero(t, row.LeaseSeq)
}

// TestWindowHoldsThenTakesReleasedHooksForTheListener: the just-in-time
// window (no poll, a prefetch read only at start) claims a holding
// project's hooks as they fall due, which holds them and publishes
// nothing; once the project listens and its hooks are released, the
// release's notifications bring them back to the window, which claims them
// for the listener.
func TestWindowHoldsThenTakesReleasedHooksForTheListener(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.presence(t, false)
	c := b.claimer(t, claim.Config{})
	b.startWindow(t, c, claim.WindowConfig{Ahead: 200 * time.Millisecond, Refresh: time.Hour})
	hooks := []storetest.Hook{b.hook(t, 300*time.Millisecond), b.hook(t, 400*time.Millisecond)}
	require.Eventually(t, func() bool {
		for _, h := range hooks {
			if fixture.Get(t, b.q, h.ID).HeldDueAt == nil {
				return false
			}
		}
		return true
	}, 15*time.Second, 5*time.Millisecond, "the window's claims hold them")
	require.Empty(t, natstest.StreamMessages(t, b.js, event.StreamDue))

	b.presence(t, true)
	released, err := store.New(b.pool).ReleaseListenerHeldHooks(context.Background(), store.ReleaseListenerHeldHooksParams{BatchSize: 100})
	require.NoError(t, err)
	require.EqualValues(t, 2, released)

	require.Eventually(t, func() bool { return len(b.waitDue(t, 1)) == 2 }, 15*time.Second, 5*time.Millisecond)
	got := b.waitDue(t, 1)
	for _, h := range hooks {
		require.Contains(t, got, h.ID.String())
	}
	for _, m := range natstest.StreamMessages(t, b.js, event.StreamDue) {
		for _, d := range fixture.DueHooks(t, m) {
			require.True(t, d.GetListener())
		}
	}
}
