package result

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/telemetry"
)

// TracerName is the instrumentation scope of the applier's spans.
const TracerName = "sundial/scheduler"

// startApply starts "scheduler.apply_result" as a child of the dispatcher's
// "dispatcher.deliver" span, whose context bus.Consume extracted into ctx
// from the AttemptResult's headers.
func (a *Applier) startApply(ctx context.Context, r *eventv1.AttemptResult) (context.Context, trace.Span) {
	if telemetry.Unrecorded(ctx, a.unsampledRecordsNothing) {
		// It would record nothing: ctx's span, the dispatcher's, is not
		// sampled (and so not recording), and stands in for it.
		return ctx, trace.SpanFromContext(ctx)
	}
	return a.tracer.Start(ctx, "scheduler.apply_result", trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("hook.id", r.GetHookId()),
			attribute.Int64("attempt", int64(r.GetAttempt())),
			attribute.Int64("lease_seq", r.GetLeaseSeq()),
			attribute.String("outcome", strings.ToLower(strings.TrimPrefix(r.GetOutcome().String(), "OUTCOME_"))),
		))
}

// endApply ends the span, marking a result that could not be applied.
func endApply(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, "result not applied")
	}
	span.End()
}
