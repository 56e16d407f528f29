// Package retention deletes finished hooks once their project's retention
// has passed (docs/operations.md, "Retention"): completed and failed hooks
// whose last change (updated_at, set when they finished) is older than the
// project's retentionDays (at most its plan's bound), with their attempt
// rows. Pending and retry hooks are never deleted, whatever their age.
//
// A Cleaner runs passes every Interval. A pass is at most MaxBatches
// statements of at most BatchSize hooks each, every statement its own
// short transaction, with Pause between them so that the deletes never
// hold locks or the WAL for long while hooks are being delivered; a pass
// that reached its cap is followed by another after Pause, so a backlog
// drains at a bounded rate. The statement locks the hooks it deletes with
// SKIP LOCKED, so any number of scheduler replicas may clean at once
// without waiting on each other or on a bulk retry.
//
// Ordering keys whose head is gone go too, an hour after their last
// change: a key without a head is free whether its row is there or not.
//
// A sequence run's step keeps its hook's id after the hook is deleted:
// only a pending step whose hook is gone counts as failed (the sequencer's
// vanished steps), and a hook's step takes its final status in the
// transaction that finishes the hook, so a deleted finished hook leaves
// its step as it was.
package retention

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/sundial-run/sundial/pkg/telemetry"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// Defaults and bounds of Config.
const (
	DefaultInterval   = time.Minute
	DefaultBatchSize  = 1000
	DefaultMaxBatches = 10
	DefaultPause      = 100 * time.Millisecond
	MaxBatchSize      = 10000
	MaxMaxBatches     = 1000
	MaxPause          = 10 * time.Second
)

// MeterName is the instrumentation scope of the cleaner's metrics.
const MeterName = "sundial/scheduler"

// Expired deletes up to maxHooks expired hooks with their attempts and says
// how many of each went; *store.Queries is one.
type Expired interface {
	DeleteExpiredHooks(ctx context.Context, maxHooks int32) (store.DeleteExpiredHooksRow, error)
}

// Config tunes a Cleaner; zero values take the defaults, but for Pause,
// whose zero is no pause (a negative Pause takes the default).
type Config struct {
	// Interval is the wait between passes that found nothing more to do.
	Interval time.Duration
	// BatchSize bounds the hooks one statement (one transaction) deletes,
	// MaxBatches the statements of one pass.
	BatchSize  int
	MaxBatches int
	// Pause is the wait between two statements of a pass, and before the
	// pass that follows one that reached its cap.
	Pause time.Duration
	// MeterProvider makes the counters; nil means the global provider.
	MeterProvider metric.MeterProvider
}

// Pass is what one pass deleted.
type Pass struct {
	Hooks, Attempts int64
	// OrderingKeys is how many idle ordering keys' rows went.
	OrderingKeys int64
	// Batches is how many statements ran; More says the pass stopped at
	// MaxBatches with every statement full (more may have expired).
	Batches int
	More    bool
}

// Cleaner deletes expired hooks.
type Cleaner struct {
	expired  Expired
	cfg      Config
	log      *slog.Logger
	hooks    metric.Int64Counter
	attempts metric.Int64Counter
}

// New returns a Cleaner.
func New(expired Expired, cfg Config, log *slog.Logger) (*Cleaner, error) {
	cfg = cfg.withDefaults()
	mp := cfg.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	meter := mp.Meter(MeterName)
	c := &Cleaner{expired: expired, cfg: cfg, log: log.With("component", "retention")}
	var err error
	c.hooks, err = telemetry.Counter(meter, "sundial.retention.hooks_deleted",
		metric.WithDescription("Completed and failed hooks deleted after their project's retention."))
	if err != nil {
		return nil, fmt.Errorf("retention metrics: %w", err)
	}
	c.attempts, err = telemetry.Counter(meter, "sundial.retention.attempts_deleted",
		metric.WithDescription("Attempt rows deleted with their hooks after their project's retention."))
	if err != nil {
		return nil, fmt.Errorf("retention metrics: %w", err)
	}
	return c, nil
}

func (c Config) withDefaults() Config {
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.BatchSize <= 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.MaxBatches <= 0 {
		c.MaxBatches = DefaultMaxBatches
	}
	if c.Pause < 0 {
		c.Pause = DefaultPause
	}
	return c
}

// Run cleans until ctx is done: a pass at once, then one every Interval,
// or after Pause when the last one reached its cap.
func (c *Cleaner) Run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		p, err := c.CleanOnce(ctx)
		if err != nil && ctx.Err() == nil {
			c.log.WarnContext(ctx, "retention pass failed", "err", err, "hooks_deleted", p.Hooks, "attempts_deleted", p.Attempts)
		}
		if p.Hooks > 0 || p.OrderingKeys > 0 {
			c.log.InfoContext(ctx, "expired hooks deleted", "hooks_deleted", p.Hooks, "attempts_deleted", p.Attempts,
				"ordering_keys_deleted", p.OrderingKeys, "batches", p.Batches, "more", p.More)
		}
		wait := c.cfg.Interval
		if p.More && err == nil {
			wait = c.cfg.Pause
		}
		timer.Reset(wait)
	}
}

// CleanOnce runs one pass: statements of up to BatchSize hooks, Pause
// apart, until one deletes fewer or MaxBatches have run.
func (c *Cleaner) CleanOnce(ctx context.Context) (Pass, error) {
	var p Pass
	for p.Batches < c.cfg.MaxBatches {
		if p.Batches > 0 && !c.pause(ctx) {
			return p, ctx.Err()
		}
		row, err := c.deleteBatch(ctx)
		if err != nil {
			return p, fmt.Errorf("delete expired hooks: %w", err)
		}
		p.Batches++
		p.Hooks += row.Hooks
		p.Attempts += row.Attempts
		p.OrderingKeys += row.OrderingKeys
		c.hooks.Add(ctx, row.Hooks)
		c.attempts.Add(ctx, row.Attempts)
		if row.Hooks < int64(c.cfg.BatchSize) && row.OrderingKeys < int64(c.cfg.BatchSize) {
			return p, nil
		}
	}
	p.More = true
	return p, nil
}

// statementTimeout bounds one delete statement once the pass's context is
// done (deleteBatch).
const statementTimeout = 30 * time.Second

// deleteBatch runs one delete statement. It is not cancelled with ctx: a
// cancelled statement may still commit on the server, and its deletions
// would then be counted nowhere (neither logged nor in the metrics), so a
// stop waits for the statement in flight, up to statementTimeout, and the
// pass ends at its next pause.
func (c *Cleaner) deleteBatch(ctx context.Context) (store.DeleteExpiredHooksRow, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), statementTimeout)
	defer cancel()
	return c.expired.DeleteExpiredHooks(ctx, int32(c.cfg.BatchSize))
}

// pause waits Pause between two statements; false when ctx ended first.
func (c *Cleaner) pause(ctx context.Context) bool {
	if c.cfg.Pause == 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(c.cfg.Pause)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
