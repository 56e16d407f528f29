package dispatch

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSlotWaitLastsItsLengthEachTime: a message's waits for delivery slots
// share one timer, and each wait still lasts its whole length, even after
// an earlier wait ended with a slot and its timer then expired with no one
// waiting (in a bubble, so the time is the test's own).
func TestSlotWaitLastsItsLengthEachTime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := &slots{taken: make(chan struct{}, 1)} // no slow room
		wait := slotWait{length: time.Second}
		defer wait.stop()
		first := s.take(ctx, &wait)
		require.NotNil(t, first, "a free slot is taken at once")

		go func() {
			time.Sleep(time.Millisecond)
			first.free()
		}()
		second := s.take(ctx, &wait)
		require.NotNil(t, second, "a slot freed during the wait is taken")
		time.Sleep(2 * time.Second) // the wait's timer expires, no one waiting

		start := time.Now()
		require.Nil(t, s.take(ctx, &wait), "no slot freed")
		require.Equal(t, time.Second, time.Since(start), "the wait lasted its length")

		second.free()
		second.free() // a second free gives nothing back twice
		start = time.Now()
		require.NotNil(t, s.take(ctx, &wait))
		require.Zero(t, time.Since(start))
		require.Nil(t, s.take(ctx, &slotWait{}), "one slot, taken")
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
		s := newSlots(1)
		wait := slotWait{length: 2 * time.Second}
		defer wait.stop()
		slow := s.take(ctx, &wait)
		require.NotNil(t, slow)

		start := time.Now()
		fast := s.take(ctx, &wait)
		require.NotNil(t, fast, "the waiting hook got the slow delivery's slot")
		require.Equal(t, slowAfter, time.Since(start), "it waited until the slow delivery could move, no longer")
		require.Equal(t, slowFactor-1, s.room)

		slow.free()
		require.Equal(t, slowFactor, s.room, "the slow delivery's free gave the room back")
		start = time.Now()
		require.Nil(t, s.take(ctx, &slotWait{length: 100 * time.Millisecond}), "the fast delivery still holds the one slot")
		require.Equal(t, 100*time.Millisecond, time.Since(start))
		fast.free()
		require.NotNil(t, s.take(ctx, &wait), "its free gave the slot back")
	})
}

// TestAFullSlowRoomKeepsSlowDeliveriesOnTheirSlots: once the slow room is
// full, a slow delivery keeps its slot and a hook waits out its wait.
func TestAFullSlowRoomKeepsSlowDeliveriesOnTheirSlots(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := newSlots(1)
		wait := slotWait{length: time.Second}
		defer wait.stop()
		var held []*deliverySlot
		for range slowFactor + 1 {
			d := s.take(ctx, &wait)
			require.NotNil(t, d)
			held = append(held, d)
		}
		require.Zero(t, s.room, "every earlier delivery moved to the slow room")

		start := time.Now()
		require.Nil(t, s.take(ctx, &wait), "no room to move the last one to")
		require.Equal(t, time.Second, time.Since(start))

		held[0].free()
		d := s.take(ctx, &wait)
		require.NotNil(t, d, "room again: the last delivery moved at once, being slow already")
		require.Equal(t, time.Second, time.Since(start))
	})
}
