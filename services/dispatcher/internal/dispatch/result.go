package dispatch

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
)

// RetryPolicy bounds the retries of a result publish.
type RetryPolicy struct {
	// Tries is the number of publish attempts in all.
	Tries int
	// Backoff is the wait after the first failure; it doubles after each.
	Backoff time.Duration
	// Timeout bounds each attempt.
	Timeout time.Duration
}

// DefaultRetry tries for about 10 s. With the 10 s delivery limit that stays
// well inside the dispatcher consumer's 30 s AckWait, so JetStream does not
// hand the DueHook to another dispatcher while this one still works on it.
var DefaultRetry = RetryPolicy{Tries: 5, Backoff: 250 * time.Millisecond, Timeout: 2 * time.Second}

// publish reports the result, retrying a bounded number of times. When it
// cannot, it gives up with an error in the log: having JetStream redeliver
// the DueHook would deliver the hook twice, while the lease expiry re-drives
// it anyway.
func (h *Handler) publish(ctx context.Context, log *slog.Logger, due dueHook, res delivery.Result) {
	msg := bus.Message{
		Subject: event.SubjectResult,
		MsgID:   event.MsgID(event.KindResult, due.hookID.String(), due.msg.GetLeaseSeq()),
		Body:    attemptResult(due, res),
	}
	p := h.cfg.Retry
	wait := p.Backoff
	var err error
	for try := 1; try <= p.Tries; try++ {
		if err = h.publishOnce(ctx, msg, p.Timeout); err == nil {
			return
		}
		if try == p.Tries || !sleep(ctx, wait) {
			break
		}
		wait *= 2
	}
	log.Error("result not published; the lease expiry will re-drive the hook", "err", err)
}

func (h *Handler) publishOnce(ctx context.Context, msg bus.Message, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := h.cfg.Publisher.Publish(ctx, msg)
	if err != nil && event.IsStreamGone(err) && h.cfg.EnsureStreams != nil {
		// NATS lost its store: put the streams back so the next try lands.
		if ensureErr := h.cfg.EnsureStreams(ctx); ensureErr != nil {
			h.log.Warn("re-create streams", "err", ensureErr)
		}
	}
	return err
}

// sleep waits d, or less if ctx ends; it reports whether ctx is still alive.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func attemptResult(due dueHook, res delivery.Result) *eventv1.AttemptResult {
	return &eventv1.AttemptResult{
		HookId:              due.hookID.String(),
		ProjectId:           due.projectID.String(),
		Attempt:             due.msg.GetAttempt(),
		LeaseSeq:            due.msg.GetLeaseSeq(),
		Outcome:             res.Outcome,
		StatusCode:          int32(res.StatusCode),
		Error:               res.Error,
		StartedAt:           timestamppb.New(res.StartedAt),
		Duration:            durationpb.New(res.Duration),
		ResponseExcerpt:     res.Excerpt,
		AsyncTimeoutSeconds: res.AsyncTimeoutSeconds,
	}
}

// outcomeName is the outcome as logs and metrics show it: "success", ...
func outcomeName(o eventv1.Outcome) string {
	return strings.ToLower(strings.TrimPrefix(o.String(), "OUTCOME_"))
}
