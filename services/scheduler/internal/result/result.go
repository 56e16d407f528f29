// Package result applies the AttemptResults that dispatchers report: it
// records the attempt and moves the hook to completed, retry or failed. A
// hook whose retries ran out marks its endpoint failing and is announced by
// a hook.failed Alert; the first success on a failing endpoint announces
// endpoint.recovered. Alerts are written in the result's transaction (the
// outbox) and published after the commit (alert.go). A 202
// answer instead holds the hook waiting for the receiver's ack or nack;
// EndWaits settles the waits that ended (an ack, a nack or a timeout) by the
// same rules (async.go).
//
// There is one way through: results are applied in batches (batch.go), many
// at once in one transaction, each message still settled by its own
// handler; a single result is a batch of one, and an ended wait joins the
// same settling steps.
// Each transaction also adds the attempts it applied to the dashboard's
// per-minute figures, delivery_minutes (figures.go), with one statement.
//
// A result counts only while the hook still holds the lease it was
// delivered under; anything else (a duplicate, a result that arrives after
// the lease expired and the hook was re-driven, a deleted hook) is stale and
// changes nothing, which makes the consumer idempotent.
package result

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/failclass"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/pkg/retry"
	"github.com/sundial-run/sundial/pkg/telemetry"
	"github.com/sundial-run/sundial/services/scheduler/internal/breaker"
)

// Hook statuses the applier sets. A hook waiting for an async answer is
// pending.
const (
	StatusPending   = "pending"
	StatusCompleted = "completed"
	StatusRetry     = "retry"
	StatusFailed    = "failed"
)

// TxBeginner starts transactions; *pgxpool.Pool is one.
type TxBeginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Applier applies attempt results.
type Applier struct {
	db     TxBeginner
	alerts *alerter
	log    *slog.Logger
	rnd    retry.Rand
	// breaker moves the endpoints' circuit breakers (breaker.go).
	breaker breaker.Policy

	applied metric.Int64Counter
	stale   metric.Int64Counter
	tracer  trace.Tracer
	// unsampledRecordsNothing: no span is started where it would record
	// nothing (telemetry.Providers.UnsampledRecordsNothing, trace.go).
	unsampledRecordsNothing bool
}

// New returns an Applier that publishes alerts on js, re-creating lost
// streams with replicas (SUNDIAL_STREAM_REPLICAS). rnd is the jitter source; nil means a shared
// random source (tests pass a fixed one to know the delay). Options inject
// the telemetry providers; by default the global ones are used.
func New(db TxBeginner, js jetstream.JetStream, replicas int, log *slog.Logger, rnd retry.Rand, opts ...telemetry.Option) (*Applier, error) {
	o := telemetry.Resolve(opts...)
	meter := o.Meter.Meter("sundial/scheduler")
	applied, err := meter.Int64Counter("sundial.scheduler.results_applied",
		metric.WithDescription("Attempt results applied to their hook, by reported outcome, and failures by class."))
	if err != nil {
		return nil, fmt.Errorf("result metrics: %w", err)
	}
	stale, err := telemetry.Counter(meter, "sundial.scheduler.results_stale",
		metric.WithDescription("Attempt results ignored because the hook no longer holds their lease."))
	if err != nil {
		return nil, fmt.Errorf("result metrics: %w", err)
	}
	log = log.With("component", "results")
	alerts, err := newAlerter(js, replicas, log)
	if err != nil {
		return nil, err
	}
	return &Applier{db: db, alerts: alerts, log: log, rnd: rnd, breaker: breaker.DefaultPolicy,
		applied: applied, stale: stale, tracer: o.Tracer.Tracer(TracerName),
		unsampledRecordsNothing: o.UnsampledRecordsNothing}, nil
}

// finish turns what applying a result did into the handler's answer,
// counts it, publishes the alerts its transaction wrote (after the commit)
// and logs it at level (a batch logs its results at debug and
// itself at info).
func (a *Applier) finish(ctx context.Context, in attempt, out *applied, err error, took time.Duration, level slog.Level) error {
	if err != nil {
		err = fmt.Errorf("apply result of hook %s lease %d: %w", in.hookID, in.leaseSeq, err)
		if postgres.Refused(err) {
			return bus.Drop(err)
		}
		return err
	}
	if out == nil {
		a.stale.Add(ctx, 1)
		a.log.Log(ctx, level, "stale attempt result ignored", "hook_id", in.hookID, "lease_seq", in.leaseSeq,
			"attempt", in.attempt, "outcome", in.reported, "duration", took)
		return nil
	}
	if w := failclass.Word(in.class); w != "" {
		// Bounded: the enum's words.
		a.applied.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", in.reported), attribute.String("failure_class", w)))
	} else {
		a.applied.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", in.reported)))
	}
	alertErr := a.alerts.publishAll(ctx, out.alerts)
	a.logApplied(ctx, in, out, took, alertErr, level)
	return nil
}

func (a *Applier) logApplied(ctx context.Context, in attempt, out *applied, took time.Duration, alertErr error, level slog.Level) {
	attrs := []any{"hook_id", in.hookID, "project_id", out.projectID, "lease_seq", in.leaseSeq,
		"attempt", in.attempt, "max_attempts", out.maxAttempts, "outcome", in.reported,
		"status_code", in.statusCode, "status", out.status, "duration", took}
	switch {
	case out.deferred:
		attrs = append(attrs, "deferred_until", out.at)
	case out.status == StatusRetry:
		attrs = append(attrs, "retry_at", out.at)
	case out.status == StatusPending:
		attrs = append(attrs, "async_deadline", out.at)
	}
	if len(out.alerts) > 0 {
		attrs = append(attrs, "alerts", len(out.alerts))
	}
	if alertErr != nil {
		// The alert is in the outbox: the notifier's sweeper takes it in
		// late, so this is worth a warning, not an error.
		a.log.WarnContext(ctx, "applied attempt result; alert event not published, left to the notifier's sweeper",
			append(attrs, "err", alertErr)...)
		return
	}
	a.log.Log(ctx, level, "applied attempt result", attrs...)
}

// attempt is a validated AttemptResult.
type attempt struct {
	hookID     uuid.UUID
	leaseSeq   int64
	attempt    int32
	reported   string // the outcome the dispatcher reported
	recorded   string // the outcome written to hook_attempts
	success    bool
	statusCode int32
	errText    string
	// class is a failure's class (pkg/failclass), unspecified otherwise.
	class   eventv1.FailureClass
	excerpt string
	// request and response are the headers of the delivery's request and
	// of its answer (headers.go).
	request, response recordedHeaders
	startedAt         time.Time
	duration          float64
	// async: the receiver answered 202; asyncTimeout is the wait its
	// Sundial-Async-Timeout asked for (0: the project's setting).
	async        bool
	asyncTimeout int32
	// retryAfter is the wait a 429 or 503 asked for (0: none): the hook's
	// retry is no sooner, and its endpoint pauses until then (breaker.go).
	retryAfter time.Duration
	// exchanged: the result says what a delivery's exchange did (it has a
	// duration). The claim's record of an attempt whose every lease
	// expired has none: it says nothing of the receiver (breaker.go).
	exchanged bool
	// deferred: nothing was sent (OUTCOME_DEFERRED); the hook waits
	// deferFor, clamped by event.ClampDefer, and no attempt is counted
	// (deferral.go).
	deferred bool
	deferFor time.Duration
}

func parse(r *eventv1.AttemptResult) (attempt, error) {
	id, err := uuid.Parse(r.GetHookId())
	if err != nil {
		return attempt{}, fmt.Errorf("attempt result: hook_id %q: %w", r.GetHookId(), err)
	}
	if r.GetAttempt() < 1 {
		return attempt{}, fmt.Errorf("attempt result for hook %s: attempt %d: must be at least 1", id, r.GetAttempt())
	}
	if err := r.GetStartedAt().CheckValid(); err != nil {
		return attempt{}, fmt.Errorf("attempt result for hook %s: started_at: %w", id, err)
	}
	in := attempt{
		hookID:       id,
		asyncTimeout: r.GetAsyncTimeoutSeconds(),
		leaseSeq:     r.GetLeaseSeq(),
		attempt:      r.GetAttempt(),
		statusCode:   r.GetStatusCode(),
		errText:      cleanText(r.GetError()),
		excerpt:      cleanText(r.GetResponseExcerpt()),
		request:      recordHeaders(r.GetRequestHeaders()),
		response:     recordHeaders(r.GetResponseHeaders()),
		startedAt:    r.GetStartedAt().AsTime(),
		duration:     max(r.GetDuration().AsDuration().Seconds(), 0),
		exchanged:    r.GetDuration() != nil,
	}
	if r.GetRetryAfter() != nil && r.GetRetryAfter().AsDuration() > 0 {
		in.retryAfter = retry.BoundRetryAfter(r.GetRetryAfter().AsDuration())
	}
	switch r.GetOutcome() {
	case eventv1.Outcome_OUTCOME_SUCCESS:
		in.reported, in.recorded, in.success, in.errText = "success", "success", true, ""
	case eventv1.Outcome_OUTCOME_FAILURE:
		in.reported, in.recorded = "failure", "failure"
		if in.errText == "" {
			in.errText = failureText(in.statusCode)
		}
		in.class = r.GetFailureClass()
		if in.class == eventv1.FailureClass_FAILURE_CLASS_UNSPECIFIED && in.statusCode > 0 {
			// A dispatcher of a release that did not classify: the
			// status says it.
			in.class = failclass.OfStatus(int(in.statusCode))
		}
	case eventv1.Outcome_OUTCOME_ASYNC:
		// The receiver answers later, at the ack or nack URL (async.go).
		in.reported, in.recorded, in.async, in.errText = "async", "async", true, ""
	case eventv1.Outcome_OUTCOME_DEFERRED:
		in.reported, in.deferred, in.errText = "deferred", true, ""
		in.deferFor = event.ClampDefer(r.GetDeferFor().AsDuration())
	default:
		return attempt{}, fmt.Errorf("attempt result for hook %s: unknown outcome %v", id, r.GetOutcome())
	}
	return in, nil
}

// failureText names a failure the dispatcher did not put in words.
func failureText(statusCode int32) string {
	if statusCode > 0 {
		return "HTTP " + strconv.Itoa(int(statusCode))
	}
	return "delivery failed"
}

// cleanText makes text storable in PostgreSQL, which refuses NUL characters
// and invalid UTF-8: a result that can never be stored would be redelivered
// for ever.
func cleanText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}

// applied is what a transaction did to the hook.
type applied struct {
	projectID   uuid.UUID
	path        string
	status      string
	maxAttempts int
	// at is the retry time (status retry) or the time of the change.
	at time.Time
	// alerts are the alerts the transaction wrote, published after it
	// commits.
	alerts []*eventv1.Alert
	// deferred: the hook went back to waiting without an attempt
	// (deferral.go); status is the one it went back to, at its new run_at.
	deferred bool
	// pause: the project's failure policy pauses the hook's endpoint for
	// this failure (breaker.go).
	pause bool
}

// lockedHook is what settling an attempt needs of its hook, locked by the
// caller's transaction.
type lockedHook struct {
	projectID  uuid.UUID
	domain     string
	path       string
	budgetBase int32
	override   json.RawMessage
	// policy is the project's default retry policy.
	policy retry.Policy
	// failures is the project's action per failure class.
	failures failclass.Policy
	// sequenceRun is the sequence run whose step the hook is, nil for a
	// hook of its own (sequence.go).
	sequenceRun *uuid.UUID
	// postAt is when the hook was due first: a first attempt's lateness
	// is measured from it (figures.go). Zero where no lateness is counted.
	postAt time.Time
}

// projectPolicy is a project's default retry policy from the columns every
// query that locks a hook for settling returns.
func projectPolicy(minRetries, delaySecs int32, strategy string, factor float64, maxDelaySecs int32, jitter bool) retry.Policy {
	return retry.Columns{
		MinRetries: minRetries, DelaySecs: delaySecs, Strategy: strategy,
		BackoffFactor: factor, MaxDelaySecs: maxDelaySecs, Jitter: jitter,
	}.Project()
}

// budget is the hook's retry budget: its retryOverride, or the project's
// policy when it has none (or one that cannot be used).
func (a *Applier) budget(ctx context.Context, hookID uuid.UUID, h lockedHook) retry.Budget {
	policy, err := retry.Effective(h.policy, h.override)
	if err != nil {
		a.log.WarnContext(ctx, "unusable retry override; using the project's policy", "hook_id", hookID, "err", err)
	}
	return retry.Budget{Policy: policy, Base: int(h.budgetBase)}
}

// failurePolicy is a project's failure policy from its column. One that
// cannot be read (a manual edit: the gateway validates what it writes)
// retries every class, as every failure was before there were policies.
func (a *Applier) failurePolicy(ctx context.Context, projectID uuid.UUID, raw []byte) failclass.Policy {
	p, err := failclass.Decode(raw)
	if err != nil {
		a.log.WarnContext(ctx, "unusable failure policy; retrying every class", "project_id", projectID, "err", err)
	}
	return p
}

func nonZero(n int32) *int32 {
	if n == 0 {
		return nil
	}
	return &n
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
