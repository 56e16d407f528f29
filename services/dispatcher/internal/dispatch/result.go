package dispatch

import (
	"context"
	"log/slog"
	"strings"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/telemetry"
	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
)

// publish reports the result in a batch with others. When it cannot, it
// gives up with an error in the log (the batcher logs a failed publish,
// once for its batch): having JetStream redeliver the DueHook would deliver
// the hook twice, while the lease expiry re-drives it anyway.
func (h *Handler) publish(ctx context.Context, log deliveryLog, due dueHook, res delivery.Result) {
	r := attemptResult(due, res)
	// The batch's headers cannot carry every delivery's trace: each
	// result carries its own.
	r.TraceContext = telemetry.InjectMap(ctx)
	if err := h.reportResult(ctx, due, r); err != nil && ctx.Err() != nil {
		log.error(ctx, "shutdown cut short the wait for the result's batch; if it was not published, the lease expiry will re-drive the hook",
			slog.String("err", err.Error()))
	}
}

// reportResult frees the hook's delivery slot, its work done, and reports
// r, waiting until r's batch is stored: every result, delivered or
// deferred, is reported here.
func (h *Handler) reportResult(ctx context.Context, due dueHook, r *eventv1.AttemptResult) error {
	due.slot.free()
	return h.cfg.Results.Report(ctx, r)
}

func attemptResult(due dueHook, res delivery.Result) *eventv1.AttemptResult {
	r := &eventv1.AttemptResult{
		HookId:              due.hookText,
		ProjectId:           due.projectText,
		Attempt:             due.msg.GetAttempt(),
		LeaseSeq:            due.msg.GetLeaseSeq(),
		Outcome:             res.Outcome,
		StatusCode:          int32(res.StatusCode),
		Error:               res.Error,
		FailureClass:        res.Class,
		StartedAt:           timestamppb.New(res.StartedAt),
		Duration:            durationpb.New(res.Duration),
		ResponseExcerpt:     res.Excerpt,
		AsyncTimeoutSeconds: res.AsyncTimeoutSeconds,
		RequestHeaders:      res.RequestHeaders,
		ResponseHeaders:     res.ResponseHeaders,
	}
	if res.RetryAfter > 0 {
		r.RetryAfter = durationpb.New(res.RetryAfter)
	}
	return r
}

// outcomeName is the outcome as logs and metrics show it: "success", ...
func outcomeName(o eventv1.Outcome) string {
	switch o {
	case eventv1.Outcome_OUTCOME_SUCCESS:
		return "success"
	case eventv1.Outcome_OUTCOME_FAILURE:
		return "failure"
	case eventv1.Outcome_OUTCOME_ASYNC:
		return "async"
	}
	return strings.ToLower(strings.TrimPrefix(o.String(), "OUTCOME_"))
}
