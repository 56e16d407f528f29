package alert

import (
	"context"
	"log/slog"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
)

// LogSender is the Sender in place until the notification channels exist:
// it writes one structured line per alert, so that an operator can already
// see every failure, recovery and quota threshold in the logs.
type LogSender struct {
	Log *slog.Logger
}

// Send logs the alert; it never fails.
func (s LogSender) Send(ctx context.Context, a *eventv1.Alert) error {
	attrs := []slog.Attr{
		slog.String("kind", a.GetKind().String()),
		slog.String("alert_id", a.GetAlertId()),
		slog.String("project_id", a.GetProjectId()),
	}
	if a.GetOccurredAt() != nil {
		attrs = append(attrs, slog.Time("occurred_at", a.GetOccurredAt().AsTime()))
	}
	switch a.GetKind() {
	case eventv1.AlertKind_ALERT_KIND_QUOTA_THRESHOLD:
		attrs = append(attrs,
			slog.Int("threshold_percent", int(a.GetThresholdPercent())),
			slog.Int64("usage", a.GetUsage()),
			slog.Int64("quota", a.GetQuota()))
		if a.GetPeriodStart() != nil {
			attrs = append(attrs, slog.Time("period_start", a.GetPeriodStart().AsTime()))
		}
	default:
		attrs = append(attrs,
			slog.String("hook_id", a.GetHookId()),
			slog.String("path", a.GetPath()),
			slog.String("error", a.GetError()),
			slog.Int("attempts", int(a.GetAttempts())))
	}
	s.Log.LogAttrs(ctx, slog.LevelInfo, "alert", attrs...)
	return nil
}
