package claim

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// A claim starts when its first queued hook is within three quarters of
// the claim-ahead, and takes every hook within the whole of it: hooks due
// a few milliseconds apart are claimed together, not one claim each, and
// none is taken earlier than the claim-ahead before it is due.
func TestAClaimGathersTheHooksOfTheLastQuarterOfTheClaimAhead(t *testing.T) {
	t.Parallel()
	start := time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)
	now := start
	w := testWindow(&now)
	// The database clock runs 3 s ahead of the local one.
	w.offset = 3 * time.Second
	dbStart := start.Add(w.offset)
	// Hooks due every 10 ms from 160 ms to 300 ms after the database's now.
	due := map[uuid.UUID]time.Duration{}
	for ms := 160; ms <= 300; ms += 10 {
		id := uuid.New()
		due[id] = time.Duration(ms) * time.Millisecond
		w.add(id, dbStart.Add(due[id]), false)
	}

	// The first is 160 ms from due: within the claim-ahead, not yet within
	// its three quarters (150 ms).
	require.False(t, hasDue(w), "a claim started as soon as its first hook came within the claim-ahead")

	now = start.Add(10 * time.Millisecond)
	require.True(t, hasDue(w), "no claim once the first hook was 150 ms from due")
	ids := w.popDue(plainLane, 500)
	var got []time.Duration
	for _, id := range ids {
		got = append(got, due[id])
	}
	// Everything due within 200 ms of now (10 ms + 200 ms after the start),
	// nothing later.
	require.Equal(t, []time.Duration{160, 170, 180, 190, 200, 210}, inMillis(got))
	require.False(t, hasDue(w), "the next hook (220 ms) is 210 ms from due")

	// The next claim starts when the next hook is 150 ms from due.
	now = start.Add(70 * time.Millisecond)
	require.True(t, hasDue(w))
	require.Len(t, w.popDue(plainLane, 500), 6, "220 to 270 ms")
}

// testWindow is a Window with the default claim-ahead whose local clock
// reads *now; it has no database, so nothing may start a claim or a read.
func testWindow(now *time.Time) *Window {
	return &Window{
		cfg:    WindowConfig{Ahead: 5 * time.Second, Refresh: time.Second, ClaimAhead: 200 * time.Millisecond},
		now:    func() time.Time { return *now },
		queued: map[uuid.UUID]dueEntry{},
	}
}

func inMillis(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d / time.Millisecond
	}
	return out
}

// A lane whose claims are behind by a read's worth of due hooks is not
// read again (it would re-load what the window holds), while the other
// lane still is; a window with both behind starts no read. Once a lane's
// backlog is below that, or its first hook is not yet due, it is read
// again.
func TestABackloggedLaneIsNotReadAgain(t *testing.T) {
	t.Parallel()
	now := time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)
	w := testWindow(&now)
	for range maxPrefetch - 1 {
		w.add(uuid.New(), now.Add(time.Second), true)
	}
	require.False(t, w.backlogged(keyedLane), "fewer than a read's worth queued")
	w.add(uuid.New(), now.Add(time.Second), true)
	require.False(t, w.backlogged(keyedLane), "a read's worth queued, none due yet")

	now = now.Add(time.Second)
	require.True(t, w.backlogged(keyedLane), "a read's worth queued and due")
	require.False(t, w.backlogged(plainLane), "the plain lane holds nothing")
	for range maxPrefetch {
		w.add(uuid.New(), now, false)
	}
	require.True(t, w.backlogged(plainLane))
	w.startPrefetch(t.Context())
	require.False(t, w.prefetching, "a window backlogged in both lanes started a read")
	require.False(t, w.prefetchAgain, "a window backlogged in both lanes asked for a read later")

	require.Len(t, w.popDue(keyedLane, 1), 1)
	require.Len(t, w.popDue(plainLane, 1), 1)
	require.False(t, w.backlogged(keyedLane), "one claimed: below a read's worth")
	require.False(t, w.backlogged(plainLane), "one claimed: below a read's worth")
}

// Ordering keys with work left keep many keyed hooks due, all earlier than
// a plain hook that falls due now: the claims take the two lanes in turn,
// each claim one lane's hooks by run_at, so the plain hook is not held
// behind them, and either lane alone once the other is empty.
func TestClaimsTakeTheLanesInTurn(t *testing.T) {
	t.Parallel()
	now := time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)
	w := testWindow(&now)
	var keyed, plain []uuid.UUID
	for i := range 6 {
		id := uuid.New()
		keyed = append(keyed, id)
		w.add(id, now.Add(-time.Duration(10-i)*time.Second), true)
	}
	for i := range 2 {
		id := uuid.New()
		plain = append(plain, id)
		w.add(id, now.Add(-time.Duration(2-i)*time.Millisecond), false)
	}

	l, ok := w.dueLane()
	require.True(t, ok)
	require.Equal(t, plainLane, l, "the plain lane's turn first, though the keyed hooks are due earlier")
	require.Equal(t, plain, w.popDue(l, 500), "a claim of the plain lane alone")
	l, ok = w.dueLane()
	require.True(t, ok)
	require.Equal(t, keyedLane, l)
	require.Equal(t, keyed[:3], w.popDue(l, 3), "the keyed lane by run_at")

	w.add(plain[0], now, false)
	l, _ = w.dueLane()
	require.Equal(t, plainLane, l, "the turn went back to the plain lane")
	w.popDue(l, 500)
	l, _ = w.dueLane()
	require.Equal(t, keyedLane, l, "the keyed lane alone once the plain one is empty")
	require.Equal(t, keyed[3:], w.popDue(l, 500))
	require.False(t, hasDue(w))
}

// A lane's claims in flight never take the last claim slot: a keyed claim
// that is slow leaves one to the plain hooks, and the other way round.
func TestALaneLeavesAClaimToTheOther(t *testing.T) {
	t.Parallel()
	now := time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)
	w := testWindow(&now)
	w.add(uuid.New(), now.Add(-time.Second), true)
	w.claiming[keyedLane] = DefaultClaims - 1
	require.False(t, hasDue(w), "the keyed lane took the last slot")
	_, ok := w.nextClaimStart()
	require.False(t, ok, "the wake-up armed for a lane that may not claim")

	w.add(uuid.New(), now.Add(time.Second), false)
	at, ok := w.nextClaimStart()
	require.True(t, ok)
	require.Equal(t, w.claimStart(now.Add(time.Second)), at, "the wake-up is the plain hook's")
	now = now.Add(time.Second)
	l, ok := w.dueLane()
	require.True(t, ok)
	require.Equal(t, plainLane, l, "the slot left is the plain lane's")
	require.Len(t, w.popDue(l, 500), 1)

	w.claiming[plainLane] = 1
	require.False(t, hasDue(w), "every slot taken")
	w.claiming[keyedLane]--
	l, _ = w.dueLane()
	require.Equal(t, keyedLane, l, "a slot freed")
}

// A hook queued again for another run_at or lane is claimed once.
func TestAHookQueuedAgainIsClaimedOnce(t *testing.T) {
	t.Parallel()
	now := time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)
	w := testWindow(&now)
	id := uuid.New()
	w.add(id, now.Add(-time.Second), false)
	w.add(id, now.Add(-time.Second), true)
	w.add(id, now.Add(-2*time.Second), true)
	require.Equal(t, []uuid.UUID{id}, w.popDue(keyedLane, 10))
	require.Empty(t, w.popDue(plainLane, 10))
	require.False(t, hasDue(w))
}

// hasDue reports whether w would start a claim now.
func hasDue(w *Window) bool {
	_, ok := w.dueLane()
	return ok
}
