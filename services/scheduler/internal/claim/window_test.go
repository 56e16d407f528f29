package claim_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/services/scheduler/internal/claim"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/testkit/natstest"
)

// startWindow runs a just-in-time window (and no poll) until the test ends,
// and waits until it listens for notifications.
func (b bundle) startWindow(t *testing.T, c *claim.Claimer, cfg claim.WindowConfig) {
	t.Helper()
	w, err := claim.NewWindow(c, b.pool, cfg, b.log)
	require.NoError(t, err)
	runWindow(t, w)
}

// runWindow runs w until the test ends or stop is called (stop returns once
// Run has), and waits until it listens for notifications.
func runWindow(t *testing.T, w *claim.Window) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx)
	}()
	stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(stop)
	select {
	case <-w.Listening():
	case <-time.After(10 * time.Second):
		t.Fatal("the window never listened")
	}
	return stop
}

// waitDue waits until the due stream holds n messages and returns them
// decoded, keyed by hook id.
func (b bundle) waitDue(t *testing.T, n int) map[string]int64 {
	t.Helper()
	require.Eventually(t, func() bool { return fixture.CountMessages(b.js, event.StreamDue) >= n },
		15*time.Second, 5*time.Millisecond)
	out := map[string]int64{}
	for _, m := range natstest.StreamMessages(t, b.js, event.StreamDue) {
		d := fixture.DueHook(t, m)
		out[d.GetHookId()] = d.GetLeaseSeq()
	}
	return out
}

func TestWindowClaimsJustInTimeNeverBeforePostAt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const lease = time.Minute
	c := b.claimer(t, claim.Config{Lease: lease})
	hook := b.hook(t, time.Second)
	b.startWindow(t, c, claim.WindowConfig{Ahead: 5 * time.Second, Refresh: time.Second})

	msgs := natstest.StreamMessages(t, b.js, event.StreamDue)
	require.Eventually(t, func() bool {
		msgs = natstest.StreamMessages(t, b.js, event.StreamDue)
		return len(msgs) == 1
	}, 15*time.Second, 5*time.Millisecond)
	due := fixture.DueHook(t, msgs[0])
	require.Equal(t, hook.ID.String(), due.GetHookId())
	// The claim set lease_expires_at = now() + lease, so this is the
	// database clock when the hook was claimed.
	claimedAt := due.GetLeaseExpiresAt().AsTime().Add(-lease)
	require.False(t, claimedAt.Before(hook.PostAt), "claimed at %s, before its post_at %s", claimedAt, hook.PostAt)
	require.EqualValues(t, 1, fixture.Get(t, b.q, hook.ID).LeaseSeq)
}

func TestWindowIsWokenByNotification(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.claimer(t, claim.Config{})
	// The window reads only 200ms ahead, and once: a hook due in 1s that is
	// created after that read reaches it only by NOTIFY (there is no poll).
	b.startWindow(t, c, claim.WindowConfig{Ahead: 200 * time.Millisecond, Refresh: time.Hour})
	hook := b.hook(t, time.Second)

	got := b.waitDue(t, 1)
	require.Equal(t, map[string]int64{hook.ID.String(): 1}, got)
}

func TestWindowNeverPublishesADeletedHook(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.claimer(t, claim.Config{})
	b.startWindow(t, c, claim.WindowConfig{Ahead: 5 * time.Second, Refresh: 100 * time.Millisecond})
	cancelled := b.hook(t, 500*time.Millisecond)
	n, err := b.q.DeleteHookForTest(context.Background(), cancelled.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	// A later hook shows the window has run past the deleted one's run_at.
	later := b.hook(t, time.Second)

	got := b.waitDue(t, 1)
	require.Equal(t, map[string]int64{later.ID.String(): 1}, got)
}

func TestTwoWindowsClaimEachHookOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const hooks = 50
	ids := map[uuid.UUID]bool{}
	for range hooks {
		ids[b.hook(t, time.Second).ID] = true
	}
	for range 2 {
		b.startWindow(t, b.claimer(t, claim.Config{Lease: time.Minute}),
			claim.WindowConfig{Ahead: 5 * time.Second, Refresh: 200 * time.Millisecond})
	}

	got := b.waitDue(t, hooks)
	require.Len(t, got, hooks)
	for id := range ids {
		require.EqualValues(t, 1, got[id.String()], "hook %s", id)
		// lease_seq counts claims: 1 means no second claim was made.
		require.EqualValues(t, 1, fixture.Get(t, b.q, id).LeaseSeq, "hook %s", id)
	}
}

func TestWindowStopsWithItsContext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w, err := claim.NewWindow(b.claimer(t, claim.Config{}), b.pool,
		claim.WindowConfig{Ahead: time.Second, Refresh: 10 * time.Millisecond}, b.log)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx)
	}()
	<-w.Listening()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

func TestWindowConfigIsValidated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.claimer(t, claim.Config{})
	_, err := claim.NewWindow(c, b.pool, claim.WindowConfig{Ahead: 0, Refresh: time.Second}, b.log)
	require.ErrorContains(t, err, "prefetch window")
	_, err = claim.NewWindow(c, b.pool, claim.WindowConfig{Ahead: time.Second}, b.log)
	require.ErrorContains(t, err, "prefetch interval")
	_, err = claim.NewWindow(c, b.pool, claim.WindowConfig{Ahead: time.Second, Refresh: time.Second, Claims: -1}, b.log)
	require.ErrorContains(t, err, "claims in flight")
	_, err = claim.NewWindow(c, b.pool, claim.WindowConfig{Ahead: time.Second, Refresh: time.Second, Claims: claim.MaxClaims + 1}, b.log)
	require.ErrorContains(t, err, "claims in flight")
	for _, ahead := range []time.Duration{-time.Millisecond, claim.MaxClaimAhead + 1, 5 * time.Second} {
		_, err = claim.NewWindow(c, b.pool, claim.WindowConfig{Ahead: 5 * time.Second, Refresh: time.Second, ClaimAhead: ahead}, b.log)
		require.ErrorContains(t, err, "claim ahead", "claim ahead %s", ahead)
	}
}

func TestWindowOpensItsClaimConnectionsBeforeTheFirstClaim(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.claimer(t, claim.Config{})
	before := b.pool.Stat().TotalConns()
	b.startWindow(t, c, claim.WindowConfig{Ahead: time.Second, Refresh: time.Second, Claims: 3})
	// One per claim in flight and one for the prefetch, open although
	// nothing is due (without the warm-up the prefetch alone opens one).
	require.Eventually(t, func() bool { return b.pool.Stat().TotalConns() >= max(before, 4) },
		5*time.Second, 5*time.Millisecond)
	require.Zero(t, fixture.CountMessages(b.js, event.StreamDue))
}

// TestClaimsInFlightClaimEachHookOnceNeverEarly runs many small claims side
// by side (hooks due every 2 ms, batches of 3, 8 claims in flight): each
// hook is claimed exactly once, none before its post_at by the database
// clock.
func TestClaimsInFlightClaimEachHookOnceNeverEarly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const (
		lease = time.Minute
		hooks = 200
	)
	c := b.claimer(t, claim.Config{Lease: lease, BatchSize: 3, MaxInFlight: 50})
	postAt := map[string]time.Time{}
	for i := range hooks {
		h := b.hook(t, 2*time.Second+time.Duration(i)*2*time.Millisecond)
		postAt[h.ID.String()] = h.PostAt
	}
	b.startWindow(t, c, claim.WindowConfig{Ahead: 5 * time.Second, Refresh: time.Second, Claims: 8})

	// MaxInFlight 50 < 200: the queue is emptied as it fills, so the
	// reservations of the claims in flight are what keeps it bounded.
	ctx := t.Context()
	stream, err := b.js.Stream(ctx, event.StreamDue)
	require.NoError(t, err)
	seen := map[string]int{}
	require.Eventually(t, func() bool {
		msgs := natstest.StreamMessages(t, b.js, event.StreamDue)
		for _, m := range msgs {
			due := fixture.DueHook(t, m)
			seen[due.GetHookId()]++
			claimedAt := due.GetLeaseExpiresAt().AsTime().Add(-lease)
			require.False(t, claimedAt.Before(postAt[due.GetHookId()]),
				"hook %s claimed at %s, before its post_at %s", due.GetHookId(), claimedAt, postAt[due.GetHookId()])
		}
		if len(msgs) > 0 {
			// Only what was read: a message published meanwhile stays.
			require.NoError(t, stream.Purge(ctx, jetstream.WithPurgeSequence(msgs[len(msgs)-1].Sequence+1)))
		}
		return len(seen) == hooks
	}, 20*time.Second, 20*time.Millisecond)
	for id, n := range seen {
		require.Equal(t, 1, n, "hook %s published %d times", id, n)
		require.EqualValues(t, 1, fixture.Get(t, b.q, uuid.MustParse(id)).LeaseSeq)
	}
}

func TestDatabaseClockDecidesWhenTheLocalClockRunsAhead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const lease = time.Minute
	c := b.claimer(t, claim.Config{Lease: lease})
	w, err := claim.NewWindow(c, b.pool, claim.WindowConfig{Ahead: 200 * time.Millisecond, Refresh: time.Hour}, b.log)
	require.NoError(t, err)
	// The window has learnt no offset (its reads found nothing), so it
	// first tries 700ms early: the database must refuse, and the window
	// must come back at the run_at the database reports.
	w.SkewClock(700 * time.Millisecond)
	runWindow(t, w)
	hook := b.hook(t, time.Second)

	require.Len(t, b.waitDue(t, 1), 1)
	due := fixture.DueHook(t, natstest.StreamMessages(t, b.js, event.StreamDue)[0])
	require.Equal(t, hook.ID.String(), due.GetHookId())
	claimedAt := due.GetLeaseExpiresAt().AsTime().Add(-lease)
	require.False(t, claimedAt.Before(hook.PostAt), "claimed at %s, before its post_at %s", claimedAt, hook.PostAt)
	require.EqualValues(t, 1, fixture.Get(t, b.q, hook.ID).LeaseSeq)
}

func TestWindowHoldsClaimsWhileTheQueuesAreFull(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	c := b.claimer(t, claim.Config{MaxInFlight: 2})
	var ids []uuid.UUID
	for range 4 {
		ids = append(ids, b.hook(t, 300*time.Millisecond).ID)
	}
	b.startWindow(t, c, claim.WindowConfig{Ahead: 5 * time.Second, Refresh: time.Second})

	// All four come due together, but only two fit in the queue.
	first := b.waitDue(t, 2)
	require.Len(t, first, 2)
	claimed := 0
	for _, id := range ids {
		if fixture.Get(t, b.q, id).LeaseSeq > 0 {
			claimed++
		}
	}
	require.Equal(t, 2, claimed, "the others wait unclaimed in the database")

	// Once the queue drains the window claims the other two, each once.
	stream, err := b.js.Stream(ctx, event.StreamDue)
	require.NoError(t, err)
	require.NoError(t, stream.Purge(ctx))
	second := b.waitDue(t, 2)
	for id := range first {
		require.NotContains(t, second, id)
	}
	for _, id := range ids {
		require.EqualValues(t, 1, fixture.Get(t, b.q, id).LeaseSeq)
	}
}

// A claim ahead of the due instant takes the database's commit off the
// delivery's critical path; its DueHook goes out at once, carrying the hold
// a dispatcher waits out before sending it: published instant plus hold is
// never before the due instant.
func TestWindowClaimsAheadAndHoldsTheHookUntilDue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const lease = time.Minute
	c := b.claimer(t, claim.Config{Lease: lease})
	w, err := claim.NewWindow(c, b.pool, claim.WindowConfig{
		Ahead: 5 * time.Second, Refresh: time.Second, ClaimAhead: time.Second,
	}, b.log)
	require.NoError(t, err)
	runWindow(t, w)
	hook := b.hook(t, 2*time.Second)

	b.waitDue(t, 1)
	msgs := natstest.StreamMessages(t, b.js, event.StreamDue)
	// Held: published before it was due (the claim starts 750 ms ahead).
	due := fixture.DueHook(t, msgs[0])
	require.Positive(t, due.GetHold().AsDuration(), "published ahead, so held")
	require.Equal(t, hook.ID.String(), due.GetHookId())
	claimedAt := due.GetLeaseExpiresAt().AsTime().Add(-lease)
	require.True(t, claimedAt.Before(hook.PostAt), "claimed at %s, not ahead of its post_at %s", claimedAt, hook.PostAt)
	release := msgs[0].Time.Add(due.GetHold().AsDuration())
	require.False(t, release.Before(hook.PostAt), "held until %s, before its post_at %s", release, hook.PostAt)
}

// With the local clock running ahead, the window tries to claim earlier
// than ClaimAhead: the database refuses, and the hook is claimed within
// ClaimAhead of its run_at by the database clock and held until due.
func TestClaimAheadIsBoundedByTheDatabaseClock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const lease, ahead = time.Minute, 300 * time.Millisecond
	c := b.claimer(t, claim.Config{Lease: lease})
	w, err := claim.NewWindow(c, b.pool, claim.WindowConfig{
		Ahead: time.Second, Refresh: time.Hour, ClaimAhead: ahead,
	}, b.log)
	require.NoError(t, err)
	w.SkewClock(700 * time.Millisecond)
	runWindow(t, w)
	hook := b.hook(t, 1500*time.Millisecond)

	require.Len(t, b.waitDue(t, 1), 1)
	msg := natstest.StreamMessages(t, b.js, event.StreamDue)[0]
	claimedAt := fixture.DueHook(t, msg).GetLeaseExpiresAt().AsTime().Add(-lease)
	require.False(t, claimedAt.Before(hook.PostAt.Add(-ahead)),
		"claimed at %s, more than %s before its post_at %s", claimedAt, ahead, hook.PostAt)
	release := msg.Time.Add(fixture.DueHook(t, msg).GetHold().AsDuration())
	require.False(t, release.Before(hook.PostAt), "held until %s, before its post_at %s", release, hook.PostAt)
}
