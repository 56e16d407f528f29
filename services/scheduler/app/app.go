// Package app is the scheduler service: it decides by the database clock
// which hooks are due, claims them under a lease, publishes a DueHook for
// each, applies the AttemptResults the dispatchers report and schedules
// retries. Any number of replicas may run against one database.
//
// cmd/scheduler runs it; end-to-end tests boot it in-process.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sundial-run/sundial/pkg/adminhttp"
	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/calendar"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/pkg/telemetry"
	"github.com/sundial-run/sundial/services/scheduler/internal/asyncwait"
	"github.com/sundial-run/sundial/services/scheduler/internal/batchratio"
	"github.com/sundial-run/sundial/services/scheduler/internal/breaker"
	"github.com/sundial-run/sundial/services/scheduler/internal/claim"
	"github.com/sundial-run/sundial/services/scheduler/internal/holdrelease"
	"github.com/sundial-run/sundial/services/scheduler/internal/localtime"
	"github.com/sundial-run/sundial/services/scheduler/internal/result"
	"github.com/sundial-run/sundial/services/scheduler/internal/retention"
	"github.com/sundial-run/sundial/services/scheduler/internal/sequencer"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// Name identifies the service in logs, telemetry and its NATS connection.
const Name = "scheduler"

// Version is the service's version: VERSION at the repository's root,
// stamped by make build (-ldflags -X); "dev" in a build without it.
var Version = "dev"

// startupTimeout bounds New's wait for NATS to create the streams.
const startupTimeout = 15 * time.Second

// resultBatchesInFlight bounds the batches of results applied at once, each
// on its own connection. A few overlap one batch's commit with the next
// one's statements; more only contend for the same WAL flushes
// (BenchmarkApplySuccesses: 2, 4 and 8 apply about as many results per
// second).
const resultBatchesInFlight = 4

// resultBytesInFlight bounds the result messages decoded and waiting for
// their batches, by encoded size (result.BatchConfig.MaxBytes). A result
// with its attempt's headers is about a kilobyte encoded, so this holds
// several thousand: the batches in flight and the next ones, full.
const resultBytesInFlight = 8 << 20

// App is a scheduler, connected and ready to Run.
type App struct {
	cfg        Config
	log        *slog.Logger
	pool       *pgxpool.Pool
	nc         *nats.Conn
	js         jetstream.JetStream
	claimer    *claim.Claimer
	window     *claim.Window // nil when just-in-time claiming is off
	results    *result.Applier
	batches    *result.Batcher
	perResult  *batchratio.Ratio // counted by batches, read by claimer
	waits      *asyncwait.Sweeper
	holds      *holdrelease.Releaser
	seqs       *sequencer.Sequencer
	localTimes *localtime.Resolver
	cleaner    *retention.Cleaner // nil when retention is off
	admin      *adminhttp.Server
	tel        telemetry.Providers
}

// New validates cfg, connects to PostgreSQL and NATS and makes sure the
// streams exist. It starts nothing that outlives it: on error everything it
// opened is closed again.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*App, error) {
	return NewWith(ctx, cfg, log)
}

// NewWith is New with options (telemetry.WithProviders); New keeps the plain
// signature that deploy/local's suite takes as a function value.
func NewWith(ctx context.Context, cfg Config, log *slog.Logger, opts ...telemetry.Option) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := calendar.UseSetting(cfg.TZDataFile, cfg.TZDataVersion); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if cfg.LeaseDuration <= DeliveryTimeout {
		log.Warn("lease does not exceed the delivery timeout: hooks still being delivered will be re-driven; use this only in tests",
			"lease", cfg.LeaseDuration, "delivery_timeout", DeliveryTimeout)
	}
	a := &App{cfg: cfg, log: log, tel: telemetry.Resolve(opts...), perResult: &batchratio.Ratio{}}
	if err := a.connect(ctx); err != nil {
		a.close()
		return nil, err
	}
	return a, nil
}

func (a *App) connect(ctx context.Context) error {
	var err error
	a.pool, err = postgres.Connect(ctx, a.cfg.DatabaseURL, int32(a.cfg.DatabaseMaxConns))
	if err != nil {
		return err
	}
	if err := postgres.AwaitSchema(ctx, a.pool, a.cfg.SchemaWait, a.log); err != nil {
		return err
	}
	a.nc, a.js, err = bus.Connect(a.cfg.NATSURL, "sundial-"+Name)
	if err != nil {
		return err
	}
	streamCtx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	if err := event.EnsureStreams(streamCtx, a.js, a.cfg.StreamReplicas); err != nil {
		return err
	}
	// Sizes agree end to end: refuse a server too small for Sundial.
	if _, err := bus.CheckMaxPayload(a.nc); err != nil {
		return err
	}
	a.claimer, err = claim.New(a.pool, a.js, claim.Config{
		BatchSize:         a.cfg.ClaimBatchSize,
		Lease:             a.cfg.LeaseDuration,
		PollInterval:      a.cfg.PollInterval,
		MaxRedrives:       a.cfg.MaxRedrives,
		MaxInFlight:       a.cfg.MaxInFlight,
		ResultsPerMessage: a.perResult,
		DueBatch:          claim.DefaultDueBatch,
		StreamReplicas:    a.cfg.StreamReplicas,
		TracerProvider:    a.tel.Tracer,
		MeterProvider:     a.tel.Meter,
	}, a.log)
	if err != nil {
		return err
	}
	// Queue depth is read from PostgreSQL: hooks due and not yet claimed is
	// what "behind" means here (docs/observability.md).
	if err := claim.ObserveQueueDepth(a.pool, a.tel.Meter.Meter(claim.MeterName)); err != nil {
		return err
	}
	if err := breaker.ObservePaused(a.pool, a.tel.Meter.Meter(claim.MeterName)); err != nil {
		return err
	}
	if a.cfg.PrefetchWindow > 0 {
		a.window, err = claim.NewWindow(a.claimer, a.pool, claim.WindowConfig{
			Ahead:      a.cfg.PrefetchWindow,
			Refresh:    a.cfg.PrefetchInterval,
			Claims:     a.cfg.ClaimConcurrency,
			ClaimAhead: a.cfg.ClaimAhead,
		}, a.log)
		if err != nil {
			return err
		}
	}
	a.results, err = result.New(a.pool, a.js, a.cfg.StreamReplicas, a.log, nil, telemetry.Using(a.tel))
	if err != nil {
		return err
	}
	if err := a.results.SetBreakerPolicy(a.cfg.breakerPolicy()); err != nil {
		return err
	}
	a.batches, err = a.results.NewBatcher(result.BatchConfig{
		MaxBatch: min(a.cfg.ResultBatch, a.cfg.ResultConcurrency),
		Linger:   a.cfg.ResultLinger,
		InFlight: resultBatchesInFlight,
		Ratio:    a.perResult,
		MaxBytes: resultBytesInFlight,
	})
	if err != nil {
		return err
	}
	// The sweeper LISTENs on a connection of its own, outside the pool, so
	// that an ack wakes it at once (BenchmarkAckToCompleted times an ack's
	// way to a completed hook).
	// The listener's held hooks go back to it when it reconnects: the
	// releaser LISTENs on a connection of its own for the gateway's
	// NOTIFY sundial_listener.
	a.holds = holdrelease.New(store.New(a.pool), holdrelease.Config{
		Listen: a.pool.Config().ConnConfig.Copy(),
	}, a.log)
	// Sequences' slots, trigger requests and cancelled step hooks: runs
	// and the hooks of their steps are written here only.
	a.seqs = sequencer.New(a.pool, sequencer.Config{Interval: a.cfg.SequenceInterval}, a.log)
	// Hooks scheduled by wall time move with the tz database's rules.
	a.localTimes, err = localtime.New(a.pool, localtime.Config{Meter: a.tel.Meter}, a.log)
	if err != nil {
		return err
	}
	if err := a.newCleaner(); err != nil {
		return err
	}
	a.waits, err = asyncwait.New(store.New(a.pool), a.results, asyncwait.Config{
		Interval:  a.cfg.AsyncSweepInterval,
		BatchSize: a.cfg.ClaimBatchSize,
		Listen:    a.pool.Config().ConnConfig.Copy(),
	}, a.log)
	if err != nil {
		return err
	}
	return a.listenAdmin(ctx)
}

// newCleaner makes the retention cleaner (finished hooks past their
// project's retention are deleted), unless an interval of 0 turns it off.
func (a *App) newCleaner() error {
	if a.cfg.RetentionInterval == 0 {
		return nil
	}
	var err error
	a.cleaner, err = retention.New(store.New(a.pool), retention.Config{
		Interval:      a.cfg.RetentionInterval,
		BatchSize:     a.cfg.RetentionBatch,
		MaxBatches:    a.cfg.RetentionMaxBatches,
		Pause:         a.cfg.RetentionPause,
		MeterProvider: a.tel.Meter,
	}, a.log)
	return err
}

// listenAdmin binds the admin listener: ready when the database answers
// with the schema this build needs, NATS is connected and the results
// consumer exists; metrics with that consumer's lag, the database pool's
// and the NATS connection's.
func (a *App) listenAdmin(ctx context.Context) error {
	if err := postgres.ObservePool(a.tel.Meter.Meter(postgres.MeterName), a.pool); err != nil {
		return err
	}
	var err error
	a.admin, err = bus.ConsumerAdmin(ctx, a.cfg.AdminAddr, "SUNDIAL_SCHEDULER_ADMIN_ADDR", a.tel, postgres.Ready(a.pool), a.nc, a.js,
		event.SchedulerConsumer(a.cfg.StreamReplicas), a.log)
	return err
}

// AdminAddr is the address the admin listener is bound to.
func (a *App) AdminAddr() string {
	return a.admin.Addr()
}

// close releases what connect opened; it tolerates a partial connect.
func (a *App) close() {
	if a.admin != nil {
		_ = a.admin.Close()
	}
	if a.nc != nil {
		a.nc.Close()
	}
	if a.pool != nil {
		a.pool.Close()
	}
}

// Run claims due hooks and applies results until ctx is done. Then it stops
// claiming (finishing the claim in progress), lets the results being
// applied finish within ShutdownTimeout (handing the rest back to NATS),
// closes the connections and returns. Call it once.
func (a *App) Run(ctx context.Context) error {
	defer a.close()
	a.log.Info("scheduler running", "tzdata", calendar.Current().Version, "batch_size", a.cfg.ClaimBatchSize, "lease", a.cfg.LeaseDuration,
		"poll_interval", a.cfg.PollInterval, "prefetch", a.cfg.PrefetchWindow,
		"prefetch_interval", a.cfg.PrefetchInterval, "result_concurrency", a.cfg.ResultConcurrency,
		"result_batch", a.cfg.ResultBatch, "result_linger", a.cfg.ResultLinger,
		"async_sweep_interval", a.cfg.AsyncSweepInterval, "sequence_interval", a.cfg.SequenceInterval)
	var wg sync.WaitGroup
	wg.Go(func() { a.admin.Run(ctx) })
	wg.Go(func() { a.claimer.Run(ctx) })
	if a.window != nil {
		wg.Go(func() { a.window.Run(ctx) })
	}
	wg.Go(func() { a.waits.Run(ctx) })
	wg.Go(func() { a.holds.Run(ctx) })
	wg.Go(func() { a.seqs.Run(ctx) })
	wg.Go(func() { a.localTimes.Run(ctx) })
	if a.cleaner != nil {
		wg.Go(func() { a.cleaner.Run(ctx) })
	}
	// Resume requests of the API are few and not urgent to the millisecond:
	// the poll interval is soon enough.
	wg.Go(func() { a.results.RunResumes(ctx, a.cfg.PollInterval) })
	// The dashboard's figures older than the overview reads.
	wg.Go(func() { a.results.RunFigurePrune(ctx, result.PruneInterval) })
	// The batcher outlives ctx until the consumer has drained: the results
	// still being handled after SIGTERM are applied, not failed.
	batchCtx, stopBatches := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBatches()
	wg.Go(func() { a.batches.Run(batchCtx) })
	err := bus.Consume(ctx, a.js, event.SchedulerConsumer(a.cfg.StreamReplicas), a.batches.Handle, bus.ConsumeOptions{
		Concurrency:  a.cfg.ResultConcurrency,
		DrainTimeout: a.cfg.ShutdownTimeout,
		Logger:       a.log,
	})
	stopBatches()
	wg.Wait()
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("consume results: %w", err)
	}
	a.log.Info("scheduler stopped")
	return nil
}
