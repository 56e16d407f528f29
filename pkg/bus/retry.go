package bus

import (
	"context"
	"log/slog"
	"time"

	"github.com/sundial-run/sundial/pkg/event"
)

// RetryPolicy bounds the retries of a publish.
type RetryPolicy struct {
	// Tries is the number of publish attempts in all.
	Tries int
	// Backoff is the wait after the first failure; it doubles after each.
	Backoff time.Duration
	// Timeout bounds each attempt.
	Timeout time.Duration
}

// Sink stores one event on JetStream (a Publisher).
type Sink interface {
	Publish(ctx context.Context, m Message) error
}

// Retrying publishes one message at a time with bounded retries, for
// events whose publisher has no lease or outbox to fall back on at once
// (a delivery's result, a quota alert). The zero value is not usable: set
// Publisher and Retry; EnsureStreams and Log may be nil.
type Retrying struct {
	Publisher Sink
	Retry     RetryPolicy
	// EnsureStreams re-creates the streams when a publish found none (NATS
	// lost its store); nil skips that.
	EnsureStreams func(ctx context.Context) error
	// Log receives a failure to re-create the streams.
	Log *slog.Logger
}

// Publish stores msg, retrying as Retry allows, and returns the last error
// when every try failed or ctx ended first.
func (r Retrying) Publish(ctx context.Context, msg Message) error {
	_, err := r.PublishCounting(ctx, msg)
	return err
}

// PublishCounting is Publish, also saying how many tries it made.
func (r Retrying) PublishCounting(ctx context.Context, msg Message) (int, error) {
	wait := r.Retry.Backoff
	var err error
	for try := 1; ; try++ {
		if err = r.publishOnce(ctx, msg); err == nil {
			return try, nil
		}
		if try >= r.Retry.Tries || !sleep(ctx, wait) {
			return try, err
		}
		wait *= 2
	}
}

func (r Retrying) publishOnce(ctx context.Context, msg Message) error {
	ctx, cancel := context.WithTimeout(ctx, r.Retry.Timeout)
	defer cancel()
	err := r.Publisher.Publish(ctx, msg)
	if err != nil && event.IsStreamGone(err) && r.EnsureStreams != nil {
		// NATS lost its store: put the streams back so the next try lands.
		if ensureErr := r.EnsureStreams(ctx); ensureErr != nil && r.Log != nil {
			r.Log.WarnContext(ctx, "re-create streams", "err", ensureErr)
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
