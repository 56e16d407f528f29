// Package localtime keeps hooks and sequences scheduled by wall time at
// their wall time when the tz database changes (docs/product.md, "Local
// times and the tz database"). A hook created with postAtLocal + timezone
// keeps its wall time, its zone and the release of the tz database that
// resolved it; a sequence keeps the release its next slot was planned
// with. A scheduler built with a newer release resolves the pending hooks
// again (never attempted, not claimed) and moves their post_at where the
// new rules put the wall time, and plans the next slot of the active
// calendar sequences again, stamping its release on each, so that each is
// resolved once per release. It runs at start, when a new release is
// likeliest to meet old hooks, and every Interval for what gateways of an
// older release write meanwhile.
//
// Each pass is a bounded number of bounded transactions (FOR UPDATE SKIP
// LOCKED), so any number of scheduler replicas may run it at once, and it
// logs one line saying how many hooks it moved and by how much.
package localtime

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
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
	// process's (calendar.Current).
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
		cfg.Zones = calendar.Current()
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
		metric.WithDescription("Pending hooks scheduled by wall time (kind hook), and calendar sequences' next slots (kind sequence), whose instant a newer tz database release moved."))
	if err != nil {
		return nil, fmt.Errorf("local time metrics: %w", err)
	}
	return &Resolver{pool: pool, cfg: cfg, log: log.With("component", "localtime"), moved: moved}, nil
}

// Pass is what one pass did.
type Pass struct {
	Hooks, Sequences Tally
	// From are the releases the hooks and sequences had been resolved
	// with.
	From []string
	// More says the pass stopped at its cap.
	More bool
}

// Tally counts what a pass did to hooks, or to sequences' next slots.
type Tally struct {
	// Resolved counts those resolved again, Moved those whose instant
	// changed, and Unknown those whose zone the release does not have
	// (they keep their instant).
	Resolved, Moved, Unknown int
	// Earliest and Latest bound the moves: the most an instant moved
	// earlier (negative) and later.
	Earliest, Latest time.Duration
}

func (t *Tally) moved(shift time.Duration) {
	if shift != 0 {
		t.Moved++
		t.Earliest, t.Latest = min(t.Earliest, shift), max(t.Latest, shift)
	}
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
			r.log.WarnContext(ctx, "local times not resolved again", "err", err, "hooks", p.Hooks.Resolved, "sequences", p.Sequences.Resolved)
		}
		wait := r.cfg.Interval
		if p.More {
			wait = 0
		}
		timer.Reset(wait)
	}
}

// ResolveOnce runs one pass, hooks then sequences, and logs what it did
// when it did anything.
func (r *Resolver) ResolveOnce(ctx context.Context) (Pass, error) {
	var p Pass
	for _, batch := range []func(context.Context, *store.Queries, *Pass) (int, error){r.resolveHooks, r.resolveSequences} {
		more, err := r.batches(ctx, &p, batch)
		if err != nil {
			return p, err
		}
		p.More = p.More || more
	}
	r.report(ctx, p)
	return p, nil
}

// batches runs batch, each in a transaction of its own, until one locks
// fewer than BatchSize rows, at most MaxBatches times, and says whether it
// stopped at that cap.
func (r *Resolver) batches(ctx context.Context, p *Pass, batch func(context.Context, *store.Queries, *Pass) (int, error)) (bool, error) {
	for range r.cfg.MaxBatches {
		var locked int
		err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
			var err error
			locked, err = batch(ctx, store.New(tx), p)
			return err
		})
		if err != nil || locked < r.cfg.BatchSize {
			return false, err
		}
	}
	return true, nil
}

// seen records a release the pass found a hook or sequence resolved with.
func (p *Pass) seen(version string) {
	if !slices.Contains(p.From, version) {
		p.From = append(p.From, version)
	}
}

// resolveHooks resolves up to BatchSize hooks in q's transaction and
// returns how many it locked.
func (r *Resolver) resolveHooks(ctx context.Context, q *store.Queries, p *Pass) (int, error) {
	version := r.cfg.Zones.Version
	rows, err := q.LockStaleLocalTimeHooks(ctx, store.LockStaleLocalTimeHooksParams{TzVersion: version, MaxHooks: int32(r.cfg.BatchSize)})
	if err != nil || len(rows) == 0 {
		return 0, wrap("lock local-time hooks", err)
	}
	arg := store.MoveLocalTimeHooksParams{TzVersion: version, Ids: make([]uuid.UUID, len(rows)), PostAts: make([]time.Time, len(rows))}
	for i, row := range rows {
		arg.Ids[i], arg.PostAts[i] = row.ID, r.resolve(row, &p.Hooks)
		p.seen(row.TzVersion)
	}
	return len(rows), wrap("move local-time hooks", q.MoveLocalTimeHooks(ctx, arg))
}

// resolve is where row's wall time falls under the release, tallied in t:
// its current instant when the release lacks its zone or the wall time
// cannot be resolved.
func (r *Resolver) resolve(row store.LockStaleLocalTimeHooksRow, t *Tally) time.Time {
	t.Resolved++
	loc, err := r.cfg.Zones.Load(row.Timezone)
	if err != nil {
		t.Unknown++
		return row.PostAt
	}
	at, err := calendar.ResolveLocal(row.PostAtLocal.Time, loc)
	if err != nil {
		t.Unknown++
		return row.PostAt
	}
	t.moved(at.Sub(row.PostAt))
	return at.UTC()
}

// resolveSequences plans up to BatchSize sequences' next slots again in
// q's transaction and returns how many it locked.
func (r *Resolver) resolveSequences(ctx context.Context, q *store.Queries, p *Pass) (int, error) {
	version := r.cfg.Zones.Version
	rows, err := q.LockStaleSequences(ctx, store.LockStaleSequencesParams{TzVersion: version, MaxSequences: int32(r.cfg.BatchSize)})
	if err != nil || len(rows) == 0 {
		return 0, wrap("lock sequences", err)
	}
	arg := store.MoveSequenceSlotsParams{TzVersion: version, Ids: make([]uuid.UUID, len(rows)), NextRunAts: make([]time.Time, len(rows))}
	for i, row := range rows {
		arg.Ids[i], arg.NextRunAts[i] = row.ID, r.nextSlot(row, &p.Sequences)
		p.seen(row.TzVersion)
	}
	return len(rows), wrap("move sequences' next slots", q.MoveSequenceSlots(ctx, arg))
}

// wrap says what failed, nil for no error.
func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// nextSlot is the sequence's next slot under the release, tallied in t
// by how far the slot itself moved. It is the earlier of the planned one
// and the release's: a slot the new rules put earlier is run then, and one
// they put later is found by the sequencer's scan at the planned time,
// which plans it with the same rules. A schedule the release cannot read
// (its zone is missing) keeps its plan.
func (r *Resolver) nextSlot(row store.LockStaleSequencesRow, t *Tally) time.Time {
	t.Resolved++
	tt, err := r.cfg.Zones.Stored(row.Schedule, row.StartAt, row.EndAt)
	if err != nil {
		t.Unknown++
		return row.NextRunAt
	}
	slot, ok := tt.NextAtOrAfter(row.DbNow)
	if !ok {
		return row.NextRunAt
	}
	t.moved(slot.Sub(row.NextRunAt))
	if slot.Before(row.NextRunAt) {
		return slot
	}
	return row.NextRunAt
}

// report logs a pass that resolved anything, and counts the moves.
func (r *Resolver) report(ctx context.Context, p Pass) {
	if p.Hooks.Resolved+p.Sequences.Resolved == 0 {
		return
	}
	r.moved.Add(ctx, int64(p.Hooks.Moved), metric.WithAttributes(attribute.String("kind", "hook")))
	r.moved.Add(ctx, int64(p.Sequences.Moved), metric.WithAttributes(attribute.String("kind", "sequence")))
	r.log.InfoContext(ctx, "local times resolved with the tz database", "tzdata", r.cfg.Zones.Version, "from", p.From,
		slog.Group("hooks", tallyAttrs(p.Hooks)...), slog.Group("sequences", tallyAttrs(p.Sequences)...), "more", p.More)
}

func tallyAttrs(t Tally) []any {
	return []any{"resolved", t.Resolved, "moved", t.Moved, "unknown_zone", t.Unknown,
		"earliest_shift", t.Earliest.String(), "latest_shift", t.Latest.String()}
}
