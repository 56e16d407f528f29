package receiver

import (
	"context"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// Kind is how a path of a realistic receiver answers.
type Kind uint8

// The kinds of path a real receiver has. A hook's path decides how each of
// its arrivals is answered, but for the hooks of Behaviour.FailFirst.
const (
	// Healthy answers 200 after a delay drawn per request from
	// Behaviour.Quick.
	Healthy Kind = iota
	// Failing answers 500 after a Quick delay.
	Failing
	// Slow answers 200 after a delay drawn from Behaviour.Slow.
	Slow
	// Hanging answers nothing for Behaviour.Hang (longer than the senders'
	// timeout), or until the sender gives up.
	Hanging
	// Async answers 202 after a Quick delay, and never acks.
	Async
)

// Kinds names every kind, in order, for reports.
var Kinds = []Kind{Healthy, Failing, Slow, Hanging, Async}

func (k Kind) String() string {
	switch k {
	case Healthy:
		return "healthy"
	case Failing:
		return "failing"
	case Slow:
		return "slow"
	case Hanging:
		return "hanging"
	case Async:
		return "async"
	}
	return "unknown"
}

// Span is a range of delays; each request draws one uniformly.
type Span struct{ Min, Max time.Duration }

func (s Span) draw() time.Duration {
	if s.Max <= s.Min {
		return s.Min
	}
	return s.Min + rand.N(s.Max-s.Min)
}

// Behaviour makes the receiver answer as a real one does, path by path.
// It is set before the first delivery and only read afterwards.
type Behaviour struct {
	// Paths maps a request's path to its kind; any other path answers 200
	// at once, as the plain receiver does.
	Paths map[string]Kind
	// FailFirst are hooks (by Sundial-Id) whose first arrival is answered
	// 500 after a Quick delay, whatever their path; later arrivals are
	// answered as their path is. Each flag is set by that first arrival.
	FailFirst map[uuid.UUID]*atomic.Bool
	Quick     Span
	Slow      Span
	Hang      time.Duration
}

// answer waits as the request's path does and returns the status to send.
// A wait ends early when the sender gives up (ctx), as nothing could be
// answered then.
func (b *Behaviour) answer(ctx context.Context, path string, id uuid.UUID) int {
	kind, known := b.Paths[path]
	if !known {
		return http.StatusOK
	}
	if first, ok := b.FailFirst[id]; ok && first.CompareAndSwap(false, true) {
		wait(ctx, b.Quick.draw())
		return http.StatusInternalServerError
	}
	switch kind {
	case Failing:
		wait(ctx, b.Quick.draw())
		return http.StatusInternalServerError
	case Slow:
		wait(ctx, b.Slow.draw())
	case Hanging:
		wait(ctx, b.Hang)
	case Async:
		wait(ctx, b.Quick.draw())
		return http.StatusAccepted
	default:
		wait(ctx, b.Quick.draw())
	}
	return http.StatusOK
}

func wait(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
