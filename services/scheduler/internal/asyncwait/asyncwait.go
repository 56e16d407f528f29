// Package asyncwait ends the async waits that are over: a hook whose
// receiver answered 202 and then acked or nacked it (the gateway records
// the answer and nothing else), or neither within its async timeout, has its
// attempt settled by package result: completed for an ack, retried or
// failed, like any failed delivery, otherwise.
//
// A Sweeper reads the hooks to settle from two partial indexes (answers not
// applied yet, waits past their deadline), at most a batch of each at a
// time, and settles them in one transaction under FOR UPDATE SKIP LOCKED,
// so that any number of scheduler replicas may sweep at once. It sweeps
// when woken by the gateway's NOTIFY sundial_async (an answer was recorded:
// applied within milliseconds, whatever the interval), and every Interval
// as the fallback for a notification that was lost and for timeouts.
package asyncwait

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/sundial-run/sundial/services/scheduler/internal/pgnotify"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// Ended lists hooks with an async answer to apply or a wait that timed out;
// *store.Queries is one.
type Ended interface {
	EndedAsyncWaits(ctx context.Context, maxHooks int32) ([]uuid.UUID, error)
}

// Ender settles the ended waits of hooks and says how many it settled;
// *result.Applier is one.
type Ender interface {
	EndWaits(ctx context.Context, ids []uuid.UUID) (int, error)
}

// Config tunes a Sweeper.
type Config struct {
	// Interval is the wait between sweeps that found less than a batch,
	// when no notification comes: a timeout, or an answer whose
	// notification was lost, is applied within about this long.
	Interval time.Duration
	// BatchSize bounds the hooks of each kind one sweep reads.
	BatchSize int
	// Listen is the connection the Sweeper LISTENs on for answers; nil
	// sweeps every Interval only.
	Listen *pgx.ConnConfig
}

// Sweeper settles ended async waits.
type Sweeper struct {
	ended Ended
	ender Ender
	cfg   Config
	log   *slog.Logger
	wake  chan struct{}
}

// New returns a Sweeper.
func New(ended Ended, ender Ender, cfg Config, log *slog.Logger) (*Sweeper, error) {
	if cfg.Interval <= 0 || cfg.BatchSize < 1 {
		return nil, fmt.Errorf("asyncwait: want a positive interval and batch size, got %s and %d", cfg.Interval, cfg.BatchSize)
	}
	return &Sweeper{ended: ended, ender: ender, cfg: cfg, log: log.With("component", "asyncwait"),
		wake: make(chan struct{}, 1)}, nil
}

// Run sweeps until ctx is done: at once when woken, at once after a full
// batch, else after the interval. It returns once its listener has closed
// its connection.
func (s *Sweeper) Run(ctx context.Context) {
	if s.cfg.Listen != nil {
		var listener sync.WaitGroup
		listener.Go(func() { s.listen(ctx) })
		defer listener.Wait()
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-s.wake:
			timer.Stop()
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

// SweepOnce settles up to a batch of each kind of ended wait and returns
// how many it settled. A hook another scheduler is settling is skipped.
func (s *Sweeper) SweepOnce(ctx context.Context) (int, error) {
	ids, err := s.ended.EndedAsyncWaits(ctx, int32(s.cfg.BatchSize))
	if err != nil {
		return 0, fmt.Errorf("list ended async waits: %w", err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	return s.ender.EndWaits(ctx, ids)
}

// nudge wakes Run without ever blocking: a wake-up already pending covers
// this one, since a sweep reads every answer recorded before it.
func (s *Sweeper) nudge() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// listen wakes Run for every notification, and after each (re)connection
// for the answers recorded while nobody listened.
func (s *Sweeper) listen(ctx context.Context) {
	pgnotify.Listener{
		Conn:      s.cfg.Listen,
		Listen:    func(ctx context.Context, q *store.Queries) error { return q.ListenAsync(ctx) },
		Connected: s.nudge,
		Note:      func(string) { s.nudge() },
		What:      "async answers",
		Log:       s.log,
	}.Run(ctx)
}
