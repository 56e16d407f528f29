// Package report sends the dispatcher's attempt results to the scheduler:
// one publish with bounded retries (Publish), and a Batcher that gathers the
// results of concurrent deliveries for a few milliseconds and publishes them
// as one AttemptResults message, which saves a JetStream publish, a stored
// message and an acknowledgement per result.
package report

import (
	"context"
	"log/slog"
	"time"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
)

// Publisher stores one event on JetStream.
type Publisher interface {
	Publish(ctx context.Context, m bus.Message) error
}

// RetryPolicy bounds the retries of a result publish.
type RetryPolicy struct {
	// Tries is the number of publish attempts in all.
	Tries int
	// Backoff is the wait after the first failure; it doubles after each.
	Backoff time.Duration
	// Timeout bounds each attempt.
	Timeout time.Duration
}

// DefaultRetry tries for about 10 s. With the 10 s delivery limit that stays
// well inside the dispatcher consumer's 30 s AckWait, so JetStream does not
// hand the DueHook to another dispatcher while this one still works on it.
var DefaultRetry = RetryPolicy{Tries: 5, Backoff: 250 * time.Millisecond, Timeout: 2 * time.Second}

// Sender publishes messages with retries; the zero value is not usable,
// fill every field but EnsureStreams and Log.
type Sender struct {
	Publisher Publisher
	Retry     RetryPolicy
	// EnsureStreams re-creates the streams when a publish found none (NATS
	// lost its store); nil skips that.
	EnsureStreams func(ctx context.Context) error
	Log           *slog.Logger
}

// Publish stores msg, retrying as Retry allows, and returns the last error
// when every try failed or ctx ended first.
func (s Sender) Publish(ctx context.Context, msg bus.Message) error {
	p := s.Retry
	if p.Tries <= 0 {
		p = DefaultRetry
	}
	wait := p.Backoff
	var err error
	for try := 1; try <= p.Tries; try++ {
		if err = s.publishOnce(ctx, msg, p.Timeout); err == nil {
			return nil
		}
		if try == p.Tries || !sleep(ctx, wait) {
			break
		}
		wait *= 2
	}
	return err
}

func (s Sender) publishOnce(ctx context.Context, msg bus.Message, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := s.Publisher.Publish(ctx, msg)
	if err != nil && event.IsStreamGone(err) && s.EnsureStreams != nil {
		// NATS lost its store: put the streams back so the next try lands.
		if ensureErr := s.EnsureStreams(ctx); ensureErr != nil && s.Log != nil {
			s.Log.Warn("re-create streams", "err", ensureErr)
		}
	}
	return err
}

// sleep waits d, or less if ctx ends; it reports whether ctx is still alive.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
