package batch_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/batch"
)

type queueBundle struct {
	queue *batch.Queue[int, int]
	// stop ends Run's context and waits for Run to return.
	stop func()
}

// setupQueue runs a queue whose handler answers each item with handle's
// value for it, until the test ends or stop is called.
func setupQueue(t *testing.T, g batch.Gatherer[*batch.Job[int, int]], handle func(int) int) queueBundle {
	t.Helper()
	q := batch.NewQueue[int, int]()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		q.Run(ctx, g, 2, func(jobs []*batch.Job[int, int]) {
			for _, j := range jobs {
				j.Answer(handle(j.Item))
			}
		})
	}()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return queueBundle{queue: q, stop: stop}
}

func TestQueueAnswersEachCallerWithItsOwnOutcome(t *testing.T) {
	t.Parallel()
	b := setupQueue(t, batch.Gatherer[*batch.Job[int, int]]{Max: 4}, func(n int) int { return n * 10 })
	const callers = 50
	got := make([]int, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			r, err := b.queue.Do(t.Context(), i)
			require.NoError(t, err)
			got[i] = r
		})
	}
	wg.Wait()
	for i, r := range got {
		require.Equal(t, i*10, r)
	}
}

// TestQueueAnswersWhatItTookBeforeStopping: items taken into a lingering
// batch are answered when Run stops; later ones are refused.
func TestQueueAnswersWhatItTookBeforeStopping(t *testing.T) {
	t.Parallel()
	b := setupQueue(t, batch.Gatherer[*batch.Job[int, int]]{Max: 100, Linger: time.Hour}, func(n int) int { return -n })
	var jobs []*batch.Job[int, int]
	for i := range 3 {
		j, err := b.queue.Submit(t.Context(), i)
		require.NoError(t, err)
		jobs = append(jobs, j)
	}
	b.stop()
	for i, j := range jobs {
		r, err := j.Wait(t.Context())
		require.NoError(t, err)
		require.Equal(t, -i, r)
	}
	_, err := b.queue.Do(t.Context(), 9)
	require.ErrorIs(t, err, batch.ErrStopped)
}

func TestQueueWaitEndsWithItsContext(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	b := setupQueue(t, batch.Gatherer[*batch.Job[int, int]]{Max: 1}, func(n int) int { <-release; return n })
	ctx, cancel := context.WithCancel(t.Context())
	j, err := b.queue.Submit(ctx, 1)
	require.NoError(t, err)
	cancel()
	_, err = j.Wait(ctx)
	require.ErrorIs(t, err, context.Canceled)
	// The handler still answers, without waiting for the caller gone.
	close(release)
	b.stop()
	r, err := j.Wait(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, r)
}

func TestQueueSubmitEndsWithItsContext(t *testing.T) {
	t.Parallel()
	q := batch.NewQueue[int, int]() // not running: nothing takes the item
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := q.Do(ctx, 1)
	require.ErrorIs(t, err, context.Canceled)
}
