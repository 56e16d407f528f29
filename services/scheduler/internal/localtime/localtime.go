// Package localtime keeps hooks scheduled by wall time at their wall time
// when the tz database changes (docs/product.md, "Local times and the tz
// database"). A hook created with postAtLocal + timezone keeps its wall
// time, its zone and the release of the tz database that resolved it. A
// scheduler built with a newer release resolves the pending ones again
// (never attempted, not claimed) and moves their post_at where the new
// rules put the wall time, stamping its release on each, so that each hook
// is resolved once per release. It runs at start, when a new release is
// likeliest to meet old hooks, and every Interval for hooks that gateways
// of an older release create meanwhile.
//
// Each pass is a bounded number of bounded transactions (FOR UPDATE SKIP
// LOCKED), so any number of scheduler replicas may run it at once, and it
// logs one line saying how many hooks it moved and by how much.
package localtime

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/sundial-run/sundial/pkg/calendar"
	"github.com/sundial-run/sundial/pkg/telemetry"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// Defaults of Config.
const (
	DefaultInterval   = time.Minute
	DefaultBatchSize  = 1000
	DefaultMaxBatches = 100
)

// Config tunes a Resolver; zero values take the defaults.
type Config struct {
	// Zones is the tz database hooks are resolved with; nil is the
	// embedded one.
	Zones *calendar.Zones
	// Interval is the wait between passes.
	Interval time.Duration
	// BatchSize bounds the hooks of one transaction, and MaxBatches the
	// transactions of one pass; a pass that reached its cap is followed by
	// another at once.
	BatchSize  int
	MaxBatches int
	// Meter makes the metrics; nil is the global provider.
	Meter metric.MeterProvider
}

// Resolver resolves pending local-time hooks with its tz database.
type Resolver struct {
	pool  *pgxpool.Pool
	cfg   Config
	log   *slog.Logger
	moved metric.Int64Counter
}

// New returns a Resolver.
func New(pool *pgxpool.Pool, cfg Config, log *slog.Logger) (*Resolver, error) {
	if cfg.Zones == nil {
		cfg.Zones = calendar.Embedded
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.MaxBatches <= 0 {
		cfg.MaxBatches = DefaultMaxBatches
	}
	if cfg.Meter == nil {
		cfg.Meter = otel.GetMeterProvider()
	}
	moved, err := telemetry.Counter(cfg.Meter.Meter("sundial/scheduler"), "sundial.scheduler.local_times_moved",
		metric.WithDescription("Pending hooks scheduled by wall time whose instant a newer tz database release moved."))
	if err != nil {
		return nil, fmt.Errorf("local time metrics: %w", err)
	}
	return &Resolver{pool: pool, cfg: cfg, log: log.With("component", "localtime"), moved: moved}, nil
}

// Pass is what one pass did.
type Pass struct {
	// Resolved counts the hooks resolved again, Moved those whose instant
	// changed, and Unknown those whose zone the release does not have
	// (they keep their instant).
	Resolved, Moved, Unknown int
	// Earliest and Latest bound the moves: the most a hook moved earlier
	// (negative) and later.
	Earliest, Latest time.Duration
	// From are the releases the hooks had been resolved with.
	From []string
	// More says the pass stopped at its cap.
	More bool
}

// Run resolves until ctx is done: a pass at once, then after every
// Interval, or at once after a pass that reached its cap.
func (r *Resolver) Run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		p, err := r.ResolveOnce(ctx)
		if err != nil && ctx.Err() == nil {
			r.log.WarnContext(ctx, "local-time hooks not resolved again", "err", err, "resolved", p.Resolved)
		}
		wait := r.cfg.Interval
		if p.More {
			wait = 0
		}
		timer.Reset(wait)
	}
}

// ResolveOnce runs one pass and logs what it did, when it did anything.
func (r *Resolver) ResolveOnce(ctx context.Context) (Pass, error) {
	var p Pass
	from := map[string]bool{}
	for range r.cfg.MaxBatches {
		n, err := r.resolveBatch(ctx, &p, from)
		if err != nil {
			return p, err
		}
		if n < r.cfg.BatchSize {
			r.report(ctx, p)
			return p, nil
		}
	}
	p.More = true
	r.report(ctx, p)
	return p, nil
}

// resolveBatch resolves up to BatchSize hooks in one transaction and
// returns how many it locked.
func (r *Resolver) resolveBatch(ctx context.Context, p *Pass, from map[string]bool) (int, error) {
	version := r.cfg.Zones.Version
	var locked int
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		rows, err := q.LockStaleLocalTimeHooks(ctx, store.LockStaleLocalTimeHooksParams{TzVersion: version, MaxHooks: int32(r.cfg.BatchSize)})
		if err != nil {
			return fmt.Errorf("lock local-time hooks: %w", err)
		}
		locked = len(rows)
		if locked == 0 {
			return nil
		}
		arg := store.MoveLocalTimeHooksParams{TzVersion: version, Ids: make([]uuid.UUID, len(rows)), PostAts: make([]time.Time, len(rows))}
		for i, row := range rows {
			arg.Ids[i], arg.PostAts[i] = row.ID, r.resolve(row, p)
			if !from[row.TzVersion] {
				from[row.TzVersion] = true
				p.From = append(p.From, row.TzVersion)
			}
		}
		if err := q.MoveLocalTimeHooks(ctx, arg); err != nil {
			return fmt.Errorf("move local-time hooks: %w", err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return locked, nil
}

// resolve is where row's wall time falls under the release, tallied in p:
// its current instant when the release lacks its zone or the wall time
// cannot be resolved.
func (r *Resolver) resolve(row store.LockStaleLocalTimeHooksRow, p *Pass) time.Time {
	p.Resolved++
	loc, err := r.cfg.Zones.Load(row.Timezone)
	if err != nil {
		p.Unknown++
		return row.PostAt
	}
	at, err := calendar.ResolveLocal(row.PostAtLocal.Time, loc)
	if err != nil {
		p.Unknown++
		return row.PostAt
	}
	if shift := at.Sub(row.PostAt); shift != 0 {
		p.Moved++
		p.Earliest, p.Latest = min(p.Earliest, shift), max(p.Latest, shift)
	}
	return at.UTC()
}

// report logs a pass that resolved anything, and counts the moves.
func (r *Resolver) report(ctx context.Context, p Pass) {
	if p.Resolved == 0 {
		return
	}
	r.moved.Add(ctx, int64(p.Moved))
	r.log.InfoContext(ctx, "local-time hooks resolved with the tz database",
		"tzdata", r.cfg.Zones.Version, "from", p.From, "resolved", p.Resolved, "moved", p.Moved,
		"unknown_zone", p.Unknown, "earliest_shift", p.Earliest.String(), "latest_shift", p.Latest.String(), "more", p.More)
}
