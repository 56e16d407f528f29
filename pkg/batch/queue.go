package batch

import (
	"context"
	"errors"
)

// ErrStopped answers an item submitted to a Queue whose Run has returned.
var ErrStopped = errors.New("batcher stopped")

// Queue is the way into a Gatherer for callers that each wait for their
// own item's outcome: Submit hands an item over, its Job's Wait returns
// what the batch's handler answered for it. The hand-over and the wait end
// early, with an error, when the caller's context ends or Run has
// returned; that is the only error they return, the handler's answer
// (which may itself carry an error) being R.
type Queue[T, R any] struct {
	in      chan *Job[T, R]
	stopped chan struct{}
}

// Job is an item submitted to a Queue, waiting for its answer.
type Job[T, R any] struct {
	Item  T
	reply chan R // buffered: the handler never waits for its caller
}

// NewQueue returns a Queue; Run must be running for its items to make
// progress.
func NewQueue[T, R any]() *Queue[T, R] {
	return &Queue[T, R]{in: make(chan *Job[T, R]), stopped: make(chan struct{})}
}

// Run gathers the jobs submitted with g (its In is the queue's) and hands
// each batch to handle, which must Answer every job of it once; otherwise
// it is Gatherer.Run. Once Run returns, Submit answers ErrStopped. Call it
// once.
func (q *Queue[T, R]) Run(ctx context.Context, g Gatherer[*Job[T, R]], inFlight int, handle func([]*Job[T, R])) {
	g.In = q.in
	g.Run(ctx, inFlight, q.stopped, handle)
}

// Submit hands item over to the next batch. It returns ErrStopped when Run
// has returned, or ctx's error when ctx ends before a batch takes it.
func (q *Queue[T, R]) Submit(ctx context.Context, item T) (*Job[T, R], error) {
	j := &Job[T, R]{Item: item, reply: make(chan R, 1)}
	select {
	case q.in <- j:
		return j, nil
	case <-q.stopped:
		return nil, ErrStopped
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Do submits item and waits for its answer: Submit, then Wait.
func (q *Queue[T, R]) Do(ctx context.Context, item T) (R, error) {
	j, err := q.Submit(ctx, item)
	if err != nil {
		var zero R
		return zero, err
	}
	return j.Wait(ctx)
}

// Wait returns the job's answer, or ctx's error when ctx ends first; the
// batch may then still handle the item, as a response lost on its way.
func (j *Job[T, R]) Wait(ctx context.Context) (R, error) {
	select {
	case r := <-j.reply:
		return r, nil
	case <-ctx.Done():
		var zero R
		return zero, ctx.Err()
	}
}

// Answer gives the job its outcome. The handler calls it once per job.
func (j *Job[T, R]) Answer(r R) {
	j.reply <- r
}
