package claim

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/sundial-run/sundial/pkg/bus"
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

// publishTraced publishes a claimed batch under a "scheduler.claim" span
// that starts when the claim did, with a "scheduler.publish_due" child
// around the publish; every DueHook carries that child's context in its
// headers, so each delivery's trace descends from its claim. A claim that
// found nothing makes no span: an idle scheduler polls without tracing.
func (c *Claimer) publishTraced(ctx context.Context, msgs []bus.Message, claimed int, start time.Time, how string) (int, error) {
	ctx, span := c.tracer.Start(ctx, "scheduler.claim", trace.WithTimestamp(start),
		trace.WithAttributes(attribute.String("via", how), attribute.Int("batch.size", claimed)))
	defer span.End()
	pubCtx, pub := c.tracer.Start(ctx, "scheduler.publish_due", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.Int("batch.size", claimed), attribute.Int("messages", len(msgs))))
	published, err := c.pub.PublishAll(pubCtx, msgs)
	pub.SetAttributes(attribute.Int("published", published))
	if err != nil {
		pub.SetStatus(codes.Error, "publish failed; leases re-drive the hooks")
		span.SetStatus(codes.Error, "publish failed; leases re-drive the hooks")
	}
	pub.End()
	return published, err
}

// recordLateness records, for the first attempts of a published batch, how
// long after its postAt each DueHook was published. Retries are late by
// design and left out. post_at is on the database clock; a negative value
// (this machine's clock behind it) is recorded as 0.
func (c *Claimer) recordLateness(ctx context.Context, rows []store.ClaimDueHooksRow, publishedAt time.Time) {
	for _, r := range rows {
		if r.Attempts == 0 {
			c.lateness.Record(ctx, max(publishedAt.Sub(r.PostAt), 0).Seconds())
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

// queueDepth caches the count of hooks due and not yet claimed.
type queueDepth struct {
	queries *store.Queries

	mu   sync.Mutex
	at   time.Time
	last int64
}

// ObserveQueueDepth registers the sundial.scheduler.queue_depth gauge on
// meter: the hooks due by the database clock and not yet claimed (capped at
// 100,000), read from PostgreSQL at most every 10 s. A failed read reports
// the last value, so a database outage does not blank the gauge.
func ObserveQueueDepth(db store.DBTX, meter metric.Meter) error {
	d := &queueDepth{queries: store.New(db)}
	_, err := meter.Int64ObservableGauge("sundial.scheduler.queue_depth",
		metric.WithDescription("Hooks due and not yet claimed, counted up to 100000 at most every 10 s."),
		metric.WithUnit("{hook}"),
		metric.WithInt64Callback(func(ctx context.Context, o metric.Int64Observer) error {
			o.Observe(d.value(ctx))
			return nil
		}))
	if err != nil {
		return fmt.Errorf("queue depth gauge: %w", err)
	}
	return nil
}

func (d *queueDepth) value(ctx context.Context) int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.at.IsZero() && time.Since(d.at) < depthEvery {
		return d.last
	}
	ctx, cancel := context.WithTimeout(ctx, depthTimeout)
	defer cancel()
	n, err := d.queries.CountDueHooks(ctx, depthLimit)
	d.at = time.Now()
	if err == nil {
		d.last = n
	}
	return d.last
}
