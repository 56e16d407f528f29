package delivery

import (
	"context"
	"time"
)

// exchange is one delivery's time: the caller's context, whose end
// interrupts the delivery, and the instant by which the whole exchange must
// be over. The connection's own deadline bounds the exchange's reads and
// writes; the context with the deadline, which only a wait (for a cold
// host's first connection, or for a connection of the pool) or a dial
// needs, is made when one asks for it. On the usual path, a warm host's
// idle connection, nothing does: making it for every delivery, with its
// timer and its place among the caller's children, was a visible share of
// the dispatcher's CPU in a burst
// (docs/benchmarks.md, "The delivery's HTTP/1.1 exchange"). One goroutine
// owns an exchange.
type exchange struct {
	parent   context.Context
	deadline time.Time
	// bounded is parent with the deadline, once asked for; cancel ends it.
	bounded context.Context
	cancel  context.CancelFunc
}

func newExchange(parent context.Context, deadline time.Time) *exchange {
	return &exchange{parent: parent, deadline: deadline}
}

// context returns the caller's context bounded by the deadline, made on
// the first call.
func (x *exchange) context() context.Context {
	if x.bounded == nil {
		x.bounded, x.cancel = context.WithDeadline(x.parent, x.deadline)
	}
	return x.bounded
}

// err is what the bounded context's Err would say now: the caller's error
// once its context ended, context.DeadlineExceeded from the deadline on,
// else nil.
func (x *exchange) err() error {
	if err := x.parent.Err(); err != nil {
		return err
	}
	if !time.Now().Before(x.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// end releases the bounded context, if one was made.
func (x *exchange) end() {
	if x.cancel != nil {
		x.cancel()
	}
}
