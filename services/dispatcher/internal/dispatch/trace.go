package dispatch

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/sundial-run/sundial/pkg/telemetry"
)

// TracerName is the instrumentation scope of the dispatcher's spans.
const TracerName = "sundial/dispatcher"

// Span names; docs/observability.md lists them.
const (
	spanDeliver = "dispatcher.deliver"
	spanPost    = "HTTP POST"
)

// startDeliver starts the span of one DueHook's handling, a child of the
// trace context the scheduler put in the message headers (bus.Consume has
// extracted it into ctx). Only ids go in: the URL's path and query, like
// the signing keys, may be the customer's secrets.
func (h *Handler) startDeliver(ctx context.Context, due dueHook) (context.Context, trace.Span) {
	if h.unrecorded(ctx) {
		return ctx, trace.SpanFromContext(ctx)
	}
	return h.tracer.Start(ctx, spanDeliver, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("hook.id", due.hookText),
			attribute.String("project.id", due.projectText),
			attribute.Int64("attempt", int64(due.msg.GetAttempt())),
			attribute.Int64("lease_seq", due.msg.GetLeaseSeq()),
		))
}

// unrecorded reports whether a span started under ctx would record
// nothing (Config.UnsampledRecordsNothing): then the delivery starts none,
// and what it publishes carries the parent's trace context, the same trace.
func (h *Handler) unrecorded(ctx context.Context) bool {
	return telemetry.Unrecorded(ctx, h.cfg.UnsampledRecordsNothing)
}

// endDeliver records how the handling ended: the delivery's outcome, or
// why there was none.
func endDeliver(span trace.Span, outcome string, statusCode int, err error) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.String("outcome", outcome))
	if statusCode != 0 {
		span.SetAttributes(attribute.Int("http.status_code", statusCode))
	}
	// A hook deferred is flow control, not a fault, even when its
	// deferral could not be reported.
	if err != nil && outcome != outcomeDeferred {
		span.SetStatus(codes.Error, "handling failed; the message comes back")
	}
	span.End()
}
