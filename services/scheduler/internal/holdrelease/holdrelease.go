// Package holdrelease gives a project's held hooks back to it once its
// listener is back (docs/listener.md, "Routing"). While a project's
// listener is in its resume window the claim statement holds its due hooks:
// run_at moves to the window's end and held_due_at keeps when each fell due.
// When the project listens again, a Releaser gives them back in the order
// they fell due, paced Spacing apart (5 ms: 200 a second), so that they
// arrive in that order: released all at once, the dispatcher's and the
// listener's concurrency would deliver them in any order.
//
// It releases when woken by the gateway's NOTIFY sundial_listener (a
// project's first socket opened on a gateway) and every Interval, the
// fallback for a notification that was lost, or one sent before the
// gateway's presence row was visible. Each pass is a bounded number of
// bounded statements (FOR UPDATE SKIP LOCKED), so any number of scheduler
// replicas may release at once.
package holdrelease

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sundial-run/sundial/services/scheduler/internal/pgnotify"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// Defaults of Config.
const (
	DefaultInterval   = 2 * time.Second
	DefaultBatchSize  = 1000
	DefaultMaxBatches = 20
	// DefaultSpacing paces a backlog at 200 hooks a second: wider than the
	// jitter of a delivery's path (claim, dispatcher, gateway, listener)
	// on a loaded machine, so that the order survives it.
	DefaultSpacing = 5 * time.Millisecond
)

// Held releases up to batchSize held hooks of the listening projects and
// says how many; *store.Queries is one.
type Held interface {
	ReleaseListenerHeldHooks(ctx context.Context, arg store.ReleaseListenerHeldHooksParams) (int64, error)
}

// Config tunes a Releaser; zero values take the defaults.
type Config struct {
	// Interval is the wait between passes when no notification comes.
	Interval time.Duration
	// BatchSize bounds the hooks one statement releases, and MaxBatches
	// the statements of one pass; a pass that reached its cap is followed
	// by another at once.
	BatchSize  int
	MaxBatches int
	// Spacing is the time between two released hooks' due times.
	Spacing time.Duration
	// Listen is the connection the Releaser LISTENs on; nil releases every
	// Interval only.
	Listen *pgx.ConnConfig
}

// Releaser releases the held hooks of projects that listen again.
type Releaser struct {
	held Held
	cfg  Config
	log  *slog.Logger
	wake chan struct{}
}

// New returns a Releaser.
func New(held Held, cfg Config, log *slog.Logger) *Releaser {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.MaxBatches <= 0 {
		cfg.MaxBatches = DefaultMaxBatches
	}
	if cfg.Spacing <= 0 {
		cfg.Spacing = DefaultSpacing
	}
	return &Releaser{held: held, cfg: cfg, log: log.With("component", "holdrelease"), wake: make(chan struct{}, 1)}
}

// Run releases until ctx is done: at once when woken or after a pass that
// reached its cap, else every Interval. It returns once its listener has
// closed its connection.
func (r *Releaser) Run(ctx context.Context) {
	if r.cfg.Listen != nil {
		var listener sync.WaitGroup
		listener.Go(func() { r.listen(ctx) })
		defer listener.Wait()
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-r.wake:
			timer.Stop()
		}
		wait := r.cfg.Interval
		n, more, err := r.ReleaseOnce(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			r.log.WarnContext(ctx, "release of held hooks failed", "err", err, "released", n)
		case more:
			wait = 0
		}
		if n > 0 {
			r.log.InfoContext(ctx, "held hooks released to their listeners", "released", n)
		}
		timer.Reset(wait)
	}
}

// ReleaseOnce runs one pass: statements of up to BatchSize hooks until one
// releases fewer, at most MaxBatches of them. It returns how many hooks it
// released and whether it stopped at its cap (more may be held).
func (r *Releaser) ReleaseOnce(ctx context.Context) (released int64, more bool, err error) {
	for range r.cfg.MaxBatches {
		n, err := r.held.ReleaseListenerHeldHooks(ctx, store.ReleaseListenerHeldHooksParams{
			BatchSize: int32(r.cfg.BatchSize), Released: released, SpacingSeconds: r.cfg.Spacing.Seconds(),
		})
		released += n
		if err != nil {
			return released, false, fmt.Errorf("release held hooks: %w", err)
		}
		if n < int64(r.cfg.BatchSize) {
			return released, false, nil
		}
	}
	return released, true, nil
}

// nudge wakes Run without ever blocking: a pass already pending covers
// this notification too, since it reads every listening project.
func (r *Releaser) nudge() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// listen wakes Run for every notification, and after each (re)connection
// for those sent while nobody listened.
func (r *Releaser) listen(ctx context.Context) {
	pgnotify.Listener{
		Conn:      r.cfg.Listen,
		Listen:    func(ctx context.Context, q *store.Queries) error { return q.ListenListener(ctx) },
		Connected: r.nudge,
		Note:      func(string) { r.nudge() },
		What:      "listeners",
		Log:       r.log,
	}.Run(ctx)
}
