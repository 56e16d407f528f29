// Package asyncwait ends the async waits that are over: a hook whose
// receiver answered 202 and then neither acked nor nacked within its async
// timeout, or nacked it, has its attempt settled as failed (retried or
// failed, like any failed delivery) by package result.
//
// A Sweeper reads the ended waits from a partial index, at most a batch at
// a time, and settles each in its own transaction under FOR UPDATE SKIP
// LOCKED, so that any number of scheduler replicas may sweep at once.
package asyncwait

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
)

// Ended lists hooks whose async wait has ended, oldest first;
// *store.Queries is one.
type Ended interface {
	EndedAsyncWaits(ctx context.Context, maxHooks int32) ([]uuid.UUID, error)
}

// Ender settles one hook's ended wait; *result.Applier is one. It reports
// false when there was nothing (left) to settle.
type Ender interface {
	EndWait(ctx context.Context, hookID uuid.UUID) (bool, error)
}

// Config tunes a Sweeper.
type Config struct {
	// Interval is the wait between sweeps that found less than a batch.
	// A nack waits at most this long to be applied.
	Interval time.Duration
	// BatchSize bounds the hooks one sweep reads.
	BatchSize int
}

// Sweeper settles ended async waits.
type Sweeper struct {
	ended Ended
	ender Ender
	cfg   Config
	log   *slog.Logger
}

// New returns a Sweeper.
func New(ended Ended, ender Ender, cfg Config, log *slog.Logger) (*Sweeper, error) {
	if cfg.Interval <= 0 || cfg.BatchSize < 1 {
		return nil, fmt.Errorf("asyncwait: want a positive interval and batch size, got %s and %d", cfg.Interval, cfg.BatchSize)
	}
	return &Sweeper{ended: ended, ender: ender, cfg: cfg, log: log.With("component", "asyncwait")}, nil
}

// Run sweeps until ctx is done. A full batch is followed at once by
// another sweep; otherwise the next one comes after the interval.
func (s *Sweeper) Run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		wait := s.cfg.Interval
		n, err := s.SweepOnce(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.WarnContext(ctx, "sweep ended async waits", "err", err, "settled", n)
		case n >= s.cfg.BatchSize:
			wait = 0
		}
		timer.Reset(wait)
	}
}

// SweepOnce settles up to a batch of ended waits and returns how many it
// settled. A hook another scheduler is settling is skipped; one that fails
// to settle is left for the next sweep and the first such error returned.
func (s *Sweeper) SweepOnce(ctx context.Context) (int, error) {
	ids, err := s.ended.EndedAsyncWaits(ctx, int32(s.cfg.BatchSize))
	if err != nil {
		return 0, fmt.Errorf("list ended async waits: %w", err)
	}
	var errs []error
	settled := 0
	for _, id := range ids {
		if ctx.Err() != nil {
			break
		}
		ok, err := s.ender.EndWait(ctx, id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			settled++
		}
	}
	return settled, errors.Join(errs...)
}
