package dispatch

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// project is the tests' one project, unless they say otherwise.
var project = uuid.New()

// TestSlotWaitLastsItsLengthEachTime: a message's waits for delivery slots
// share one timer, and each wait still lasts its whole length, even after
// an earlier wait ended with a slot and its timer then expired with no one
// waiting (in a bubble, so the time is the test's own).
func TestSlotWaitLastsItsLengthEachTime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := &slots{taken: make(chan struct{}, 1), projects: map[uuid.UUID]int{}} // no slow room
		wait := slotWait{length: time.Second}
		defer wait.stop()
		first := s.take(ctx, &wait, project)
		require.NotNil(t, first, "a free slot is taken at once")

		go func() {
			time.Sleep(time.Millisecond)
			first.free()
		}()
		second := s.take(ctx, &wait, project)
		require.NotNil(t, second, "a slot freed during the wait is taken")
		time.Sleep(2 * time.Second) // the wait's timer expires, no one waiting

		start := time.Now()
		require.Nil(t, s.take(ctx, &wait, project), "no slot freed")
		require.Equal(t, time.Second, time.Since(start), "the wait lasted its length")

		second.free()
		second.free() // a second free gives nothing back twice
		start = time.Now()
		require.NotNil(t, s.take(ctx, &wait, project))
		require.Zero(t, time.Since(start))
		require.Nil(t, s.take(ctx, &slotWait{}, project), "one slot, taken")
	})
}

// TestASlowDeliveryGivesItsSlotToAWaitingHook: a delivery that has held
// its slot for slowAfter moves to the slow room when a hook waits, and the
// hook takes its slot then, not when the slow delivery ends; a moved
// delivery's free gives the room back, not a slot.
func TestASlowDeliveryGivesItsSlotToAWaitingHook(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := newSlots(1, ignoreOpened)
		wait := slotWait{length: 2 * time.Second}
		defer wait.stop()
		slow := s.take(ctx, &wait, project)
		require.NotNil(t, slow)

		start := time.Now()
		fast := s.take(ctx, &wait, project)
		require.NotNil(t, fast, "the waiting hook got the slow delivery's slot")
		require.Equal(t, slowAfter, time.Since(start), "it waited until the slow delivery could move, no longer")
		require.Equal(t, slowFactor-1, s.room)

		slow.free()
		require.Equal(t, slowFactor, s.room, "the slow delivery's free gave the room back")
		start = time.Now()
		require.Nil(t, s.take(ctx, &slotWait{length: 100 * time.Millisecond}, project), "the fast delivery still holds the one slot")
		require.Equal(t, 100*time.Millisecond, time.Since(start))
		fast.free()
		require.NotNil(t, s.take(ctx, &wait, project), "its free gave the slot back")
	})
}

// TestAFullSlowRoomKeepsSlowDeliveriesOnTheirSlots: once the slow room is
// full, a slow delivery keeps its slot and a hook waits out its wait.
func TestAFullSlowRoomKeepsSlowDeliveriesOnTheirSlots(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := newSlots(1, ignoreOpened)
		wait := slotWait{length: time.Second}
		defer wait.stop()
		var held []*deliverySlot
		for range slowFactor + 1 {
			d := s.take(ctx, &wait, project)
			require.NotNil(t, d)
			held = append(held, d)
		}
		require.Zero(t, s.room, "every earlier delivery moved to the slow room")

		start := time.Now()
		require.Nil(t, s.take(ctx, &wait, project), "no room to move the last one to")
		require.Equal(t, time.Second, time.Since(start))

		held[0].free()
		d := s.take(ctx, &wait, project)
		require.NotNil(t, d, "room again: the last delivery moved at once, being slow already")
		require.Equal(t, time.Second, time.Since(start))
	})
}

// TestProjectsShareThePool: alone, a project enters up to its share (the
// pool less the reserve); with another in flight, each up to half of it,
// the one over its share entering again only once it is under.
func TestProjectsShareThePool(t *testing.T) {
	t.Parallel()
	s := newSlots(1, ignoreOpened)
	require.Equal(t, slowFactor, s.share, "one slot and the slow room, less a reserve of one")
	a, b := uuid.New(), uuid.New()
	for range slowFactor {
		require.True(t, s.enter(a))
	}
	require.False(t, s.enter(a), "alone: its share")
	require.True(t, s.enter(b), "another project is under its share")
	require.False(t, s.enter(a), "two projects: a holds more than half")
	for range slowFactor / 2 {
		s.leave(a)
	}
	require.False(t, s.enter(a), "at half: its share")
	s.leave(a)
	require.True(t, s.enter(a), "under half again")
	for range slowFactor/2 - 1 {
		require.True(t, s.enter(b))
	}
	require.False(t, s.enter(b), "b at half")
	for range slowFactor / 2 {
		s.leave(a)
	}
	require.True(t, s.enter(b), "a gone: b alone again")
}

// TestWhenEveryDeliveryIsSlowNoneMoves: once the recent deliveries' answers
// all took seconds (a machine out of CPU, every receiver slow), a
// delivery moves to the slow room only at slowFactor times their median,
// not at slowAfter: the slow room adds no deliveries to a pool that cannot
// serve the ones it has.
func TestWhenEveryDeliveryIsSlowNoneMoves(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := newSlots(1, ignoreOpened)
		wait := slotWait{length: 10 * time.Second}
		defer wait.stop()
		for range len(s.holds) / 4 {
			d := s.take(ctx, &wait, project)
			require.NotNil(t, d)
			time.Sleep(2 * time.Second)
			d.observe(2 * time.Second)
			d.free()
		}
		require.Equal(t, 2*time.Second, s.typical)

		held := s.take(ctx, &wait, project)
		require.NotNil(t, held)
		start := time.Now()
		require.Nil(t, s.take(ctx, &slotWait{length: 3 * time.Second}, project), "3 s is not slow beside 2 s holds")
		next := s.take(ctx, &wait, project)
		require.NotNil(t, next)
		require.Equal(t, slowMedians*2*time.Second, time.Since(start), "moved at slowMedians times the median hold")
		held.free()
		next.free()
	})
}

// ignoreOpened is a slots.opened that ignores the changes.
func ignoreOpened(int) {}

// observeHolds records n answered exchanges of hold each, saying before
// every typical hold whether a hook waited.
func observeHolds(s *slots, n int, hold time.Duration, waited bool) {
	for range n {
		s.mu.Lock()
		if s.freed%(len(s.holds)/4) == len(s.holds)/4-1 {
			s.waited = waited
		}
		s.recordHold(hold)
		s.mu.Unlock()
	}
}

// takeAll takes every slot free at once and returns them.
func takeAll(s *slots) []*deliverySlot {
	var taken []*deliverySlot
	for {
		d := s.take(context.Background(), &slotWait{}, project)
		if d == nil {
			return taken
		}
		taken = append(taken, d)
	}
}

// TestSlotsGrowWhileReceiversSetTheHold: with hooks waiting and the
// typical hold near its least (receivers answering in tens of
// milliseconds), slots open past Concurrency, up to growFactor times it,
// each taken from the slow room; without waiting hooks none opens; a
// typical hold far above its least closes them again, those taken as they
// free.
func TestSlotsGrowWhileReceiversSetTheHold(t *testing.T) {
	t.Parallel()
	s := newSlots(8, ignoreOpened)
	observeHolds(s, 256, 20*time.Millisecond, false)
	require.Equal(t, 8, s.open, "no hook waited: nothing opened")
	require.Len(t, takeAll(s), 8)

	var metric int
	s = newSlots(8, func(n int) { metric += n })
	observeHolds(s, 256, 20*time.Millisecond, true)
	require.Equal(t, growFactor*8, s.open, "hooks waited and the hold stayed at its least")
	require.Equal(t, s.open, metric, "the slots.open metric follows")
	require.Equal(t, SlowRoom(8)-(growFactor-1)*8, s.room, "each slot opened came from the slow room")
	taken := takeAll(s)
	require.Len(t, taken, growFactor*8, "the open slots can be taken")

	observeHolds(s, 256, 100*time.Millisecond, true)
	require.Equal(t, 8, s.open, "a typical hold far above its least closed the slots grown")
	require.Equal(t, 8, metric)
	require.Equal(t, SlowRoom(8), s.room)
	require.Equal(t, (growFactor-1)*8, s.owed, "closed while taken")
	for _, d := range taken {
		d.free()
	}
	require.Zero(t, s.owed)
	require.Len(t, takeAll(s), 8, "after the frees, Concurrency slots are open")
}

// TestSlotsStayAtConcurrencyWhenTheHoldRises: a burst that makes every
// delivery slower as more run (this process or its receivers out of CPU)
// opens no slot: the typical hold is far above the least seen.
func TestSlotsStayAtConcurrencyWhenTheHoldRises(t *testing.T) {
	t.Parallel()
	s := newSlots(8, ignoreOpened)
	observeHolds(s, 64, 2*time.Millisecond, false)
	observeHolds(s, 512, 16*time.Millisecond, true)
	require.Equal(t, 8, s.open)
}
