package dispatch

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
)

// send makes the HTTP exchange inside a client span. The span carries the
// host only; the result's error text is left out because Go's URL errors
// quote the whole URL, query included.
func (h *Handler) send(ctx context.Context, req delivery.Request, host string) (delivery.Result, error) {
	if h.unrecorded(ctx) {
		return h.cfg.Sender.Send(ctx, req)
	}
	ctx, span := h.tracer.Start(ctx, spanPost, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("http.request.method", "POST"),
			attribute.String("server.address", host),
		))
	defer span.End()
	res, err := h.cfg.Sender.Send(ctx, req)
	switch {
	case err != nil:
		span.SetStatus(codes.Error, "delivery cut short")
	case res.StatusCode != 0:
		span.SetAttributes(attribute.Int("http.response.status_code", res.StatusCode))
	}
	if err == nil && res.Outcome != eventv1.Outcome_OUTCOME_SUCCESS {
		span.SetStatus(codes.Error, outcomeName(res.Outcome))
	}
	return res, err
}
