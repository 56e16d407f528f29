package claim

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/sundial-run/sundial/pkg/telemetry"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// TracerName and MeterName are the instrumentation scope of the claimer's
// spans and metrics.
const (
	TracerName = "sundial/scheduler"
	MeterName  = "sundial/scheduler"
)

// latenessBuckets suit a scheduler that aims at a few milliseconds late:
// fine steps up to 100 ms, coarse ones beyond for backlogs and outages.
var latenessBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// instruments make the claimer's spans and metrics.
type instruments struct {
	tracer          trace.Tracer
	claimed         metric.Int64Counter
	deferred        metric.Int64Counter
	publishFailures metric.Int64Counter
	lateness        metric.Float64Histogram
}

// newInstruments makes the claimer's instruments from tp and mp; nil means
// the global providers.
func newInstruments(tp trace.TracerProvider, mp metric.MeterProvider) (instruments, error) {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	meter := mp.Meter(MeterName)
	in := instruments{tracer: tp.Tracer(TracerName)}
	var err error
	in.claimed, err = telemetry.Counter(meter, "sundial.scheduler.hooks_claimed",
		metric.WithDescription("Hooks claimed under a lease (first deliveries, retries and re-drives)."))
	if err != nil {
		return in, fmt.Errorf("claimer metrics: %w", err)
	}
	in.deferred, err = telemetry.Counter(meter, "sundial.scheduler.hooks_deferred",
		metric.WithDescription("Due hooks of paused endpoints, or of listeners in their resume window, moved to the pause's or window's end instead of being leased (no attempt spent)."))
	if err != nil {
		return in, fmt.Errorf("claimer metrics: %w", err)
	}
	in.publishFailures, err = telemetry.Counter(meter, "sundial.scheduler.due_publish_failures",
		metric.WithDescription("Claimed hooks whose DueHook could not be published; their lease re-drives them."))
	if err != nil {
		return in, fmt.Errorf("claimer metrics: %w", err)
	}
	in.lateness, err = meter.Float64Histogram("sundial.scheduler.publish_lateness",
		metric.WithDescription("Time from a hook's postAt to its first DueHook being published; 0 when it was published ahead of it (claimed ahead, the dispatcher holds it until due)."), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(latenessBuckets...))
	if err != nil {
		return in, fmt.Errorf("claimer metrics: %w", err)
	}
	return in, nil
}

// traceClaim starts the spans of a claimed batch's publish: a
// "scheduler.claim" span that starts when the claim did, and a
// "scheduler.publish_due" child for the publish. It returns the child's
// context, which every message published under it carries in its headers,
// so each delivery's trace descends from its claim; end ends both spans
// with what the publish did. A claim that found nothing makes no span
// (publish.go): an idle scheduler polls without tracing.
func (in instruments) traceClaim(ctx context.Context, claimed, messages int, start time.Time, how string) (
	pubCtx context.Context, end func(published int, err error),
) {
	ctx, span := in.tracer.Start(ctx, "scheduler.claim", trace.WithTimestamp(start),
		trace.WithAttributes(attribute.String("via", how), attribute.Int("batch.size", claimed)))
	pubCtx, pub := in.tracer.Start(ctx, "scheduler.publish_due", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.Int("batch.size", claimed), attribute.Int("messages", messages)))
	return pubCtx, func(published int, err error) {
		pub.SetAttributes(attribute.Int("published", published))
		if err != nil {
			pub.SetStatus(codes.Error, "publish failed; leases re-drive the hooks")
			span.SetStatus(codes.Error, "publish failed; leases re-drive the hooks")
		}
		pub.End()
		span.End()
	}
}

// recordPublish records a claimed batch's publish: the hooks it failed to
// publish, or, once all are out, how long after its postAt each first
// attempt was published. Retries are late by design and left out. post_at
// is on the database clock; a negative value (this machine's clock behind
// it) is recorded as 0.
func (in instruments) recordPublish(ctx context.Context, rows []store.ClaimHooksRow, published int, err error, publishedAt time.Time) {
	if err != nil {
		in.publishFailures.Add(ctx, int64(len(rows)-published))
		return
	}
	for _, r := range rows {
		if r.Attempts == 0 {
			in.lateness.Record(ctx, max(publishedAt.Sub(r.PostAt), 0).Seconds())
		}
	}
}

// Queue depth is observed at most every depthEvery, counting at most
// depthLimit hooks: the count is an index-only range read of hooks_due_idx,
// cheap, but collectors may scrape often and a backlog may be huge.
const (
	depthEvery   = 10 * time.Second
	depthLimit   = 100000
	depthTimeout = 2 * time.Second
)

// ObserveQueueDepth registers the sundial.scheduler.queue_depth gauge on
// meter: the hooks due by the database clock and not yet claimed (capped at
// 100,000), read from PostgreSQL at most every 10 s. A failed read reports
// the last value, so a database outage does not blank the gauge.
func ObserveQueueDepth(db store.DBTX, meter metric.Meter) error {
	queries := store.New(db)
	return telemetry.ObserveSampledCount(meter, telemetry.SampledCount{
		Name:        "sundial.scheduler.queue_depth",
		Description: "Hooks due and not yet claimed, counted up to 100000 at most every 10 s.",
		Unit:        "{hook}",
		Every:       depthEvery, Timeout: depthTimeout,
		Read: func(ctx context.Context) (int64, error) {
			return queries.CountDueHooks(ctx, depthLimit)
		},
	})
}
