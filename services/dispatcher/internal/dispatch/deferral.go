package dispatch

import (
	"context"
	"log/slog"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/telemetry"
)

// Deferral: a hook the dispatcher cannot start now (its flow or host at its
// concurrency limit, its host waiting out a Retry-After, the dispatcher's
// delivery pool busy, its lease too near its end) is neither held until its lease runs out nor handed back to
// JetStream: it is reported to the scheduler as an OUTCOME_DEFERRED result,
// through the same batched results as every delivery, with a suggested
// delay. The scheduler puts it back to waiting without counting an attempt
// or a re-drive, and hands it out again after the delay, to whichever
// dispatcher then has room. docs/security.md, "Waiting is not an attempt".

// outcomeDeferred is the deliver span's outcome of a deferred hook.
const outcomeDeferred = "deferred"

// deferHook reports the hook deferred for about wait (bounded by
// event.ClampDefer). It reports even when shutdown cancelled ctx: that is
// when a hook not started must go back soonest. An error (the result could
// not be published) leaves the hook to the message's hand-back.
func (h *Handler) deferHook(ctx context.Context, log deliveryLog, due dueHook, wait time.Duration, why string) (handled, error) {
	wait = event.ClampDefer(wait)
	r := &eventv1.AttemptResult{
		HookId:    due.hookText,
		ProjectId: due.projectText,
		Attempt:   due.msg.GetAttempt(),
		LeaseSeq:  due.msg.GetLeaseSeq(),
		Outcome:   eventv1.Outcome_OUTCOME_DEFERRED,
		StartedAt: timestamppb.Now(),
		DeferFor:  durationpb.New(wait),
	}
	r.TraceContext = telemetry.InjectMap(ctx)
	h.cfg.Metrics.recordDeferral(ctx)
	err := h.reportResult(context.WithoutCancel(ctx), due, r)
	log.log(ctx, slog.LevelDebug, "delivery deferred", slog.String("host", due.host), slog.String("reason", why),
		slog.Duration("defer_for", wait), slog.Bool("reported", err == nil))
	return handled{outcome: outcomeDeferred}, err
}
