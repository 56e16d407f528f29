package api

import (
	"net/http"
	"sync"

	"github.com/labstack/echo/v4"
)

// Request bodies are read whole and decoded in memory, and a page of hooks
// is read whole before it is written, so the bodies and pages being handled
// at once are what the gateway's memory follows under a flood of large
// requests: a few maximum batches' or pages' worth each would exhaust any
// container. They share one budget of bytes in flight
// (Config.BodyBytesInFlight): a body is taken before it is read, a page's
// rows as they are read, and both are given back when the request ends.
//
// A body that does not fit is refused with 503 unavailable and Retry-After,
// unread, and nothing of it is stored: the client sends it again. A
// request alone in flight is always admitted, so that a body within its
// route's limit is never refused for the budget's size. A page takes what
// is left of the budget, up to its own (hooklist.MaxPageBytes), and ends
// sooner with less: its cursor continues it. With nothing left it is
// refused like a body.
type bodyBudget struct {
	limit int64
	// largest is what a body of undeclared length (chunked) reserves: the
	// largest any route reads.
	largest int64

	mu   sync.Mutex
	used int64
}

func newBodyBudget(limit, largest int64) *bodyBudget {
	return &bodyBudget{limit: limit, largest: largest}
}

// take reserves n bytes; false when they do not fit beside the others.
func (b *bodyBudget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used > 0 && b.used+n > b.limit {
		return false
	}
	b.used += n
	return true
}

func (b *bodyBudget) give(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// overBudget is the answer to a request whose body does not fit.
var overBudget = newError(http.StatusServiceUnavailable, CodeUnavailable,
	"the server holds as many bytes of request bodies and pages as it can; retry later")

// admitBody runs after authentication, so that only a project's requests
// take from the budget.
func (s *server) admitBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		n := c.Request().ContentLength
		switch {
		case s.bodies == nil || n == 0:
			return next(c)
		case n < 0:
			n = s.bodies.largest
		}
		if !s.bodies.take(n) {
			return overBudget
		}
		defer s.bodies.give(n)
		return next(c)
	}
}
