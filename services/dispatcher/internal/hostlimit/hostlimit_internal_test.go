package hostlimit

import (
	"context"
	"testing"

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
