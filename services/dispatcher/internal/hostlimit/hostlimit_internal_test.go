package hostlimit

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAWakeGivenUpIsPassedOn: a freed slot wakes the flow's oldest waiter
// alone; when that waiter gives up at the same moment (its wait or its
// context ended), the slot goes to the next waiter instead of nobody.
func TestAWakeGivenUpIsPassedOn(t *testing.T) {
	t.Parallel()
	l := New(Config{Ceiling: 1})
	key := Key{Project: "a", Host: "h.example:443"}
	busy, _ := l.Acquire(context.Background(), key, 0, 0)
	require.NotNil(t, busy)
	first, second := make(chan struct{}, 1), make(chan struct{}, 1)
	l.mu.Lock()
	h, f := l.flow(key, 0)
	h.waiting, f.waiting = 2, 2
	f.queue = []chan struct{}{first, second}
	l.mu.Unlock()

	busy.Done(Sample{})
	require.Len(t, first, 1, "the oldest waiter is woken")
	require.Empty(t, second, "and only it")

	l.stopWaitingDeferred(key, first)
	require.Len(t, second, 1, "the slot it gave up went on")
	require.Equal(t, Stats{Limit: 1, Waiting: 1}, l.Flow(key))
}

// TestAWaiterBeatenToItsSlotStaysFirst: a waiter woken for a slot that a
// new caller took first waits again at the front of its flow's queue, not
// behind the waiters that came after it.
func TestAWaiterBeatenToItsSlotStaysFirst(t *testing.T) {
	t.Parallel()
	l := New(Config{Ceiling: 1})
	key := Key{Project: "a", Host: "h.example:443"}
	ctx := context.Background()
	busy, _ := l.Acquire(ctx, key, 0, 0)
	require.NotNil(t, busy)
	var done sync.WaitGroup
	for want := 1; want <= 2; want++ {
		done.Go(func() {
			s, _ := l.Acquire(ctx, key, 0, time.Minute)
			if s != nil {
				s.Done(Sample{})
			}
		})
		require.Eventually(t, func() bool { return l.Flow(key).Waiting == want }, 10*time.Second, time.Millisecond)
	}

	l.mu.Lock()
	h, f := l.flow(key, 0)
	first := f.queue[0]
	h.busy--
	f.busy-- // busy's slot given back: the first waiter is woken for it
	f.unlink(busy)
	l.wakeLocked(h)
	barging := l.take(key, h, f, l.cfg.Now()) // and a new caller takes it first
	l.mu.Unlock()
	require.NotNil(t, barging)
	require.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return h.woken == 0 && len(f.queue) == 2
	}, 10*time.Second, time.Millisecond, "the woken waiter waits again")
	l.mu.Lock()
	require.Equal(t, first, f.queue[0], "at the front")
	l.mu.Unlock()

	barging.Done(Sample{})
	done.Wait()
	require.Equal(t, Stats{Limit: 1}, l.Flow(key))
}
