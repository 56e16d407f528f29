// Package batch turns work handed over one item at a time, by many
// goroutines, into batches handled together: the group commit behind the
// gateway's hook creates, the scheduler's result transactions and the
// dispatcher's result messages. A Gatherer takes items from a channel until
// a batch is full or has waited long enough, and Run hands each batch to
// its handler on a goroutine of its own, a bounded number at once, so the
// next batch fills while the database or NATS is busy with the last.
//
// A Queue in front of a Gatherer lets each sender wait for its own item's
// outcome: it hands the item over, and the handler answers it with the
// rest of its batch; the sender's context ending and the Gatherer's
// shutdown are handled there, once. What a batch means (a transaction, a
// message) and what an answer holds stay with the caller.
package batch

import (
	"context"
	"sync"
	"time"
)

// Gatherer gathers the items sent on In into batches.
type Gatherer[T any] struct {
	// In is where senders hand items over. Senders select on the stopped
	// channel given to Run as well, so none waits for ever once Run ends.
	In <-chan T
	// Max is the most items in one batch (at least 1).
	Max int
	// Linger is how long a batch waits for more items after its first; 0
	// takes only the items already waiting.
	Linger time.Duration
	// Weigh and MaxWeight, when both set, also bound a batch by the sum
	// of its items' weights (a message's encoded size, say): a batch goes
	// as soon as it reaches MaxWeight.
	Weigh     func(T) int
	MaxWeight int
	// Enough, when set, reports that a batch of n items should go without
	// lingering further, as when every sender waiting is already in it.
	Enough func(n int) bool
}

// Run gathers batches until ctx is done and hands each to handle on a
// goroutine of its own, at most inFlight at once (at least 1). Waiting
// for a free slot holds the senders back, which is what lets the next
// batch fill. When ctx is done, Run closes stopped, hands over what
// senders put in meanwhile, and returns once every batch has
// been handled. handle decides whether ctx's end reaches a batch in flight.
func (g Gatherer[T]) Run(ctx context.Context, inFlight int, stopped chan<- struct{}, handle func([]T)) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, max(inFlight, 1))
	for {
		b := g.Collect(ctx)
		if len(b) == 0 {
			break
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			handle(b)
		})
		if ctx.Err() != nil {
			break
		}
	}
	close(stopped)
	// A sender whose hand-over raced with the close is not left waiting.
	for {
		rest := g.gathering()
		rest.takeWaiting()
		if len(rest.batch) == 0 {
			break
		}
		handle(rest.batch)
	}
	wg.Wait()
}

// Collect waits for a first item, then gathers more until the batch is
// full, is Enough, or Linger has passed since the first. It returns nil
// when ctx is done before a first item, and what it has when ctx is done
// later.
func (g Gatherer[T]) Collect(ctx context.Context) []T {
	s := g.gathering()
	select {
	case it := <-g.In:
		s.add(it)
	case <-ctx.Done():
		return nil
	}
	s.takeWaiting()
	if g.Linger == 0 || s.full() || s.enough() {
		return s.batch
	}
	timer := time.NewTimer(g.Linger)
	defer timer.Stop()
	for !s.full() && !s.enough() {
		select {
		case it := <-g.In:
			s.add(it)
		case <-timer.C:
			return s.batch
		case <-ctx.Done():
			return s.batch
		}
	}
	return s.batch
}

// gathering is a batch being gathered, with its weight.
type gathering[T any] struct {
	g      *Gatherer[T]
	batch  []T
	weight int
}

func (g *Gatherer[T]) gathering() *gathering[T] {
	return &gathering[T]{g: g}
}

func (s *gathering[T]) add(it T) {
	s.batch = append(s.batch, it)
	if s.g.Weigh != nil {
		s.weight += s.g.Weigh(it)
	}
}

// takeWaiting adds the items already waiting, up to a full batch, without
// blocking.
func (s *gathering[T]) takeWaiting() {
	for !s.full() {
		select {
		case it := <-s.g.In:
			s.add(it)
		default:
			return
		}
	}
}

func (s *gathering[T]) full() bool {
	if len(s.batch) >= max(s.g.Max, 1) {
		return true
	}
	return s.g.Weigh != nil && s.g.MaxWeight > 0 && s.weight >= s.g.MaxWeight
}

func (s *gathering[T]) enough() bool {
	return s.g.Enough != nil && s.g.Enough(len(s.batch))
}
