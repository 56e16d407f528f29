package batch_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/batch"
)

// queued returns a channel holding items, as if their senders were waiting.
func queued(items ...int) chan int {
	in := make(chan int, len(items)+8)
	for _, it := range items {
		in <- it
	}
	return in
}

func TestCollectTakesWhatIsWaitingUpToMax(t *testing.T) {
	t.Parallel()
	in := queued(1, 2, 3, 4, 5)
	g := batch.Gatherer[int]{In: in, Max: 3}
	require.Equal(t, []int{1, 2, 3}, g.Collect(t.Context()))
	require.Equal(t, []int{4, 5}, g.Collect(t.Context()))
}

func TestCollectLingersForMoreUntilFull(t *testing.T) {
	t.Parallel()
	in := queued(1)
	g := batch.Gatherer[int]{In: in, Max: 3, Linger: time.Hour}
	go func() { in <- 2; in <- 3 }()
	require.Equal(t, []int{1, 2, 3}, g.Collect(t.Context()))
}

func TestCollectGoesWhenLingerEnds(t *testing.T) {
	t.Parallel()
	g := batch.Gatherer[int]{In: queued(1), Max: 100, Linger: time.Millisecond}
	require.Equal(t, []int{1}, g.Collect(t.Context()))
}

func TestCollectBoundsTheWeight(t *testing.T) {
	t.Parallel()
	g := batch.Gatherer[int]{In: queued(6, 5, 1), Max: 100, Weigh: func(n int) int { return n }, MaxWeight: 10}
	require.Equal(t, []int{6, 5}, g.Collect(t.Context()))
	require.Equal(t, []int{1}, g.Collect(t.Context()))
}

func TestCollectStopsLingeringWhenEnough(t *testing.T) {
	t.Parallel()
	in := queued(1)
	g := batch.Gatherer[int]{In: in, Max: 100, Linger: time.Hour, Enough: func(n int) bool { return n >= 2 }}
	go func() { in <- 2 }()
	require.Equal(t, []int{1, 2}, g.Collect(t.Context()))
}

func TestCollectReturnsNilWhenDoneBeforeAFirstItem(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	g := batch.Gatherer[int]{In: make(chan int), Max: 10}
	require.Nil(t, g.Collect(ctx))
}

// TestRunHandlesEveryItemHandedOver: senders race the stop; each item is
// either handled exactly once or refused by stopped, never lost.
func TestRunHandlesEveryItemHandedOver(t *testing.T) {
	t.Parallel()
	in := make(chan int)
	stopped := make(chan struct{})
	g := batch.Gatherer[int]{In: in, Max: 7, Linger: 100 * time.Microsecond}
	ctx, cancel := context.WithCancel(t.Context())

	var mu sync.Mutex
	handled := map[int]int{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.Run(ctx, 2, stopped, func(b []int) {
			mu.Lock()
			defer mu.Unlock()
			for _, it := range b {
				handled[it]++
			}
		})
	}()

	const senders, each = 8, 200
	var accepted sync.Map
	var wg sync.WaitGroup
	var sent atomic.Int64
	for s := range senders {
		wg.Go(func() {
			for i := range each {
				it := s*each + i
				select {
				case in <- it:
					accepted.Store(it, true)
					if sent.Add(1) == senders*each/2 {
						cancel()
					}
				case <-stopped:
					return
				}
			}
		})
	}
	wg.Wait()
	cancel()
	<-done

	n := 0
	accepted.Range(func(k, _ any) bool {
		n++
		require.Equal(t, 1, handled[k.(int)], "item %d", k)
		return true
	})
	require.Len(t, handled, n)
	require.GreaterOrEqual(t, n, senders*each/2)
}

func TestRunBoundsTheBatchesInFlight(t *testing.T) {
	t.Parallel()
	in := make(chan int)
	stopped := make(chan struct{})
	g := batch.Gatherer[int]{In: in, Max: 1}
	ctx, cancel := context.WithCancel(t.Context())

	release := make(chan struct{})
	var running, most atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.Run(ctx, 2, stopped, func([]int) {
			n := running.Add(1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			<-release
			running.Add(-1)
		})
	}()
	in <- 1
	in <- 2
	require.Eventually(t, func() bool { return running.Load() == 2 }, 10*time.Second, time.Millisecond)
	// A third batch is gathered but waits for a slot, so the fourth
	// cannot be handed over until one of the first two is done.
	in <- 3
	select {
	case in <- 4:
		t.Fatal("a fourth item was taken while two batches ran and a third waited")
	case <-time.After(20 * time.Millisecond):
	}
	require.EqualValues(t, 2, most.Load())
	close(release)
	cancel()
	<-done
	require.EqualValues(t, 2, most.Load())
}
