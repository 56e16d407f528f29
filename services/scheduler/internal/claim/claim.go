// Package claim finds the hooks that are due by the database clock, claims
// them under a lease and publishes one DueHook per claimed hook.
//
// The lease is what makes delivery at-least-once: a claimed hook's run_at
// moves to the lease expiry, so if its DueHook or AttemptResult is lost the
// hook becomes due again and the next claim re-drives it with a higher
// lease_seq. That is why a failed publish is logged and never retried here.
package claim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/retry"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// Config tunes a Claimer.
type Config struct {
	// BatchSize bounds the hooks one claim takes.
	BatchSize int
	// Lease is how long a dispatcher has to report a claimed hook's result
	// before the hook is due again.
	Lease time.Duration
	// PollInterval is the wait after a claim that did not fill its batch.
	PollInterval time.Duration
	// MaxRedrives is how many times one attempt is handed out again after
	// its lease expired without a result. The claim after that records the
	// attempt as failed instead, so a hook whose delivery crashes every
	// dispatcher is not re-driven forever: its retry policy takes over.
	MaxRedrives int
	// DueBatch is how many hooks at most one DueHooks message carries; 0
	// or 1 publishes each hook as a DueHook of its own, which dispatchers
	// older than batching need. See due.go.
	DueBatch int
	// MaxInFlight bounds the hooks claimed and not yet settled (messages in
	// the due and results queues) at which claiming pauses; 0 means no
	// bound. See admission.go.
	MaxInFlight int
	// TracerProvider and MeterProvider make the claimer's spans and
	// metrics; nil means the global ones.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
}

// Validate reports a configuration the claimer cannot run with.
func (c Config) Validate() error {
	var errs []error
	if c.BatchSize < 1 || c.BatchSize > MaxBatchSize {
		errs = append(errs, fmt.Errorf("batch size %d: want 1 to %d", c.BatchSize, MaxBatchSize))
	}
	if c.Lease <= 0 {
		errs = append(errs, fmt.Errorf("lease %s: must be positive", c.Lease))
	}
	if c.PollInterval <= 0 {
		errs = append(errs, fmt.Errorf("poll interval %s: must be positive", c.PollInterval))
	}
	if c.DueBatch < 0 || c.DueBatch > MaxDueBatch {
		errs = append(errs, fmt.Errorf("due batch %d: want 0 to %d", c.DueBatch, MaxDueBatch))
	}
	if c.MaxInFlight < 0 {
		errs = append(errs, fmt.Errorf("max in flight %d: must not be negative (0: no bound)", c.MaxInFlight))
	}
	if c.MaxRedrives < 0 {
		errs = append(errs, fmt.Errorf("max re-drives %d: must not be negative", c.MaxRedrives))
	}
	return errors.Join(errs...)
}

// MaxBatchSize bounds a claim: one statement locks and updates the whole
// batch, and its DueHooks are published together.
const MaxBatchSize = 10000

// maxErrorBackoff bounds the wait between claims while the database fails.
const maxErrorBackoff = 5 * time.Second

// Claimer claims due hooks and publishes them. Several claimers, in one
// process or many, may share a database: SKIP LOCKED keeps them apart.
type Claimer struct {
	queries *store.Queries
	js      jetstream.JetStream
	pub     *bus.Publisher
	cfg     Config
	log     *slog.Logger

	admit *admission

	// streamsLost is set when a publish found no stream, so that the next
	// claim first re-creates the streams (NATS lost its store).
	streamsLost atomic.Bool

	claimed         metric.Int64Counter
	publishFailures metric.Int64Counter
	lateness        metric.Float64Histogram
	tracer          trace.Tracer
}

// New returns a Claimer that reads and writes hooks through db and
// publishes on js.
func New(db store.DBTX, js jetstream.JetStream, cfg Config, log *slog.Logger) (*Claimer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("claimer: %w", err)
	}
	if cfg.TracerProvider == nil {
		cfg.TracerProvider = otel.GetTracerProvider()
	}
	if cfg.MeterProvider == nil {
		cfg.MeterProvider = otel.GetMeterProvider()
	}
	meter := cfg.MeterProvider.Meter(MeterName)
	claimed, err := meter.Int64Counter("sundial.scheduler.hooks_claimed",
		metric.WithDescription("Hooks claimed under a lease (first deliveries, retries and re-drives)."))
	if err != nil {
		return nil, fmt.Errorf("claimer metrics: %w", err)
	}
	publishFailures, err := meter.Int64Counter("sundial.scheduler.due_publish_failures",
		metric.WithDescription("Claimed hooks whose DueHook could not be published; their lease re-drives them."))
	if err != nil {
		return nil, fmt.Errorf("claimer metrics: %w", err)
	}
	lateness, err := meter.Float64Histogram("sundial.scheduler.publish_lateness",
		metric.WithDescription("Time from a hook's postAt to its first DueHook being published."), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(latenessBuckets...))
	if err != nil {
		return nil, fmt.Errorf("claimer metrics: %w", err)
	}
	return &Claimer{
		lateness:        lateness,
		tracer:          cfg.TracerProvider.Tracer(TracerName),
		queries:         store.New(db),
		js:              js,
		pub:             bus.NewPublisher(js),
		cfg:             cfg,
		admit:           &admission{js: js, limit: cfg.MaxInFlight},
		log:             log.With("component", "claimer"),
		claimed:         claimed,
		publishFailures: publishFailures,
	}, nil
}

// Run claims and publishes until ctx is done. It claims again at once after
// a full batch (there is probably more due work), waits PollInterval after a
// partial one, and backs off while the database fails. A claim in progress
// when ctx ends is finished, so no claimed hook waits for its lease to expire
// only because the scheduler was stopping.
func (c *Claimer) Run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		if ctx.Err() != nil {
			return
		}
		full, err := c.cycle(ctx)
		wait := c.cfg.PollInterval
		switch {
		case errors.Is(err, errBackpressure):
			wait = backpressureWait
		case err != nil:
			failures++
			wait = errorBackoff(c.cfg.PollInterval, failures)
			c.log.Warn("claim failed", "err", err, "retry_in", wait)
		case full:
			failures, wait = 0, 0
		default:
			failures = 0
		}
		timer.Reset(wait)
	}
}

// cycle runs one claim detached from ctx's cancellation, bounded by the
// lease: once the lease has passed, publishing its DueHooks is pointless.
func (c *Claimer) cycle(ctx context.Context) (full bool, err error) {
	cycleCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.Lease)
	defer cancel()
	_, full, err = c.claimOnce(cycleCtx)
	return full, err
}

func errorBackoff(base time.Duration, failures int) time.Duration {
	d := base
	for i := 1; i < failures && d < maxErrorBackoff; i++ {
		d *= 2
	}
	return min(d, maxErrorBackoff)
}

// errBackpressure is ClaimOnce's answer while the work in flight is at
// MaxInFlight: nothing was claimed, try again shortly.
var errBackpressure = errors.New("claims paused: the work in flight is at its bound")

// ClaimOnce claims up to BatchSize due hooks in one statement (fewer when
// the work in flight is near MaxInFlight), then publishes their DueHooks.
// It returns how many hooks it claimed. A publish failure is logged and
// counted, not returned: the claim has committed, and the lease expiry
// re-drives the hooks that were not published.
func (c *Claimer) ClaimOnce(ctx context.Context) (int, error) {
	n, _, err := c.claimOnce(ctx)
	return n, err
}

// claimOnce is ClaimOnce, also telling whether the claim filled the batch
// it was allowed (then there is probably more due work).
func (c *Claimer) claimOnce(ctx context.Context) (n int, full bool, err error) {
	c.healStreams(ctx)
	batch := c.admit.reserve(ctx, c.cfg.BatchSize)
	if batch == 0 {
		return 0, false, errBackpressure
	}
	start := time.Now()
	rows, err := c.queries.ClaimDueHooks(ctx, store.ClaimDueHooksParams{
		LeaseSeconds: c.cfg.Lease.Seconds(),
		BatchSize:    int32(batch),
	})
	if err != nil {
		c.admit.release(batch)
		return 0, false, fmt.Errorf("claim due hooks: %w", err)
	}
	c.admit.release(batch - len(rows))
	c.publish(ctx, rows, start, "poll")
	return len(rows), len(rows) == batch, nil
}

// publish publishes the DueHooks of claimed rows; how says which path
// claimed them (poll or just-in-time), for the log line.
func (c *Claimer) publish(ctx context.Context, rows []store.ClaimDueHooksRow, start time.Time, how string) {
	if len(rows) == 0 {
		return
	}
	c.claimed.Add(ctx, int64(len(rows)))
	msgs := c.messages(ctx, rows)
	pubStart := time.Now()
	published, pubErr := c.publishTraced(ctx, msgs, len(rows), start, how)
	end := time.Now()
	if pubErr == nil {
		c.recordLateness(ctx, rows, end)
	}
	c.logBatch(ctx, how, len(rows), len(msgs), published, end.Sub(start), end.Sub(pubStart), pubErr)
	if pubErr != nil {
		c.publishFailures.Add(ctx, int64(len(rows)-published))
		if event.IsStreamGone(pubErr) {
			c.streamsLost.Store(true)
		}
	}
}

// healStreams re-creates the streams after a publish found none. It does
// not block the claim: if NATS is still without them the next publish fails
// the same way and the leases re-drive the hooks.
func (c *Claimer) healStreams(ctx context.Context) {
	if !c.streamsLost.Load() {
		return
	}
	if err := event.EnsureStreams(ctx, c.js); err != nil {
		c.log.Warn("re-create streams", "err", err)
		return
	}
	c.streamsLost.Store(false)
	c.log.Info("re-created streams after a publish found none")
}

// logBatch writes the one line per claim: duration is the whole of it,
// publish_duration the part spent publishing; published counts hooks,
// messages the JetStream messages that carried them.
func (c *Claimer) logBatch(ctx context.Context, how string, claimed, messages, published int, took, publishing time.Duration, err error) {
	attrs := []any{"via", how, "count", claimed, "messages", messages, "published", published,
		"duration", took, "publish_duration", publishing}
	if err != nil {
		c.log.WarnContext(ctx, "claimed due hooks; publish failed, leases will re-drive them",
			append(attrs, "err", err)...)
		return
	}
	c.log.InfoContext(ctx, "claimed due hooks", attrs...)
}

// messages builds the messages of claimed rows: their DueHooks, in
// batches of up to DueBatch (due.go), and the failed results of attempts
// given up.
func (c *Claimer) messages(ctx context.Context, rows []store.ClaimDueHooksRow) []bus.Message {
	msgs := make([]bus.Message, 0, len(rows)/max(c.cfg.DueBatch, 1)+1)
	batch := dueBatch{max: c.cfg.DueBatch}
	for _, r := range rows {
		m := c.message(ctx, r)
		due, ok := m.Body.(*eventv1.DueHook)
		if !ok || c.cfg.DueBatch <= 1 {
			msgs = append(msgs, m)
			continue
		}
		if !batch.fits(due) {
			msgs = append(msgs, batch.take())
		}
		if batch.add(due) {
			msgs = append(msgs, batch.take())
		}
	}
	if len(batch.hooks) > 0 {
		msgs = append(msgs, batch.take())
	}
	c.admit.perDue.count(msgs)
	return msgs
}

// message builds the DueHook of one claimed hook, or, when the attempt has
// been re-driven more than MaxRedrives times, the failed AttemptResult that
// ends it. The result goes through the results stream like a dispatcher's,
// under the claim's lease, so the one applier records the attempt and
// retries or fails the hook; no dispatcher ever sees this lease.
func (c *Claimer) message(ctx context.Context, r store.ClaimDueHooksRow) bus.Message {
	if int(r.Redrives) > c.cfg.MaxRedrives {
		return c.giveUp(ctx, r)
	}
	hookID := r.ID.String()
	policy, err := retry.Effective(projectPolicy(r), r.RetryOverride)
	if err != nil {
		// The gateway validates overrides, so this is a bug or a manual
		// edit; the project's policy still lets the hook be delivered.
		c.log.Warn("unusable retry override; using the project's policy", "hook_id", hookID, "err", err)
	}
	due := &eventv1.DueHook{
		HookId:         hookID,
		ProjectId:      r.ProjectID.String(),
		Attempt:        r.Attempts + 1,
		LeaseSeq:       r.LeaseSeq,
		LeaseExpiresAt: timestamppb.New(r.LeaseExpiresAt),
		Url:            "https://" + r.Domain + r.Path,
		Path:           r.Path,
		Data:           r.Data,
		PostAt:         timestamppb.New(r.PostAt),
		CreatedAt:      timestamppb.New(r.CreatedAt),
		UpdatedAt:      timestamppb.New(r.UpdatedAt),
		MaxAttempts:    int32(retry.Budget{Policy: policy, Base: int(r.RetryBudgetBase)}.MaxAttempts()),
		LeaseDuration:  durationpb.New(c.cfg.Lease),
	}
	return dueMessage(due)
}

// giveUp builds the failed result of an attempt whose every lease expired.
func (c *Claimer) giveUp(ctx context.Context, r store.ClaimDueHooksRow) bus.Message {
	hookID := r.ID.String()
	reason := fmt.Sprintf("no result after %d deliveries of this attempt: each lease of %s expired"+
		" (a dispatcher crashed or stopped, or its messages were lost)", r.Redrives, c.cfg.Lease)
	c.log.WarnContext(ctx, "attempt re-driven too often; recording it as failed",
		"hook_id", hookID, "attempt", r.Attempts+1, "redrives", r.Redrives)
	return bus.Message{
		Subject: event.SubjectResult,
		MsgID:   event.MsgID(event.KindResult, hookID, r.LeaseSeq),
		Body: &eventv1.AttemptResult{
			HookId:    hookID,
			ProjectId: r.ProjectID.String(),
			Attempt:   r.Attempts + 1,
			LeaseSeq:  r.LeaseSeq,
			Outcome:   eventv1.Outcome_OUTCOME_FAILURE,
			Error:     reason,
			StartedAt: timestamppb.Now(),
		},
	}
}

func projectPolicy(r store.ClaimDueHooksRow) retry.Policy {
	return retry.Columns{
		MinRetries: r.RetryMinRetries, DelaySecs: r.RetryDelaySecs, Strategy: r.RetryStrategy,
		BackoffFactor: r.RetryBackoffFactor, MaxDelaySecs: r.RetryMaxDelaySecs, Jitter: r.RetryJitter,
	}.Project()
}
