package dispatch

import (
	"context"
	"log/slog"

	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
)

// deliveryLog writes the lines about one DueHook, each with the hook's
// ids. It builds them with slog.Attr values, not the key-value pairs of
// Logger.With: this runs once per delivery, and With formats its attributes
// in advance and boxes every value.
type deliveryLog struct {
	h   *Handler
	due dueHook
}

// idAttrs is how many attributes log adds to every line.
const idAttrs = 4

func (l deliveryLog) log(ctx context.Context, level slog.Level, msg string, extra ...slog.Attr) {
	if !l.h.log.Enabled(ctx, level) {
		return
	}
	var buf [idAttrs + 6]slog.Attr
	attrs := append(buf[:0],
		slog.String("hook_id", l.due.msg.GetHookId()),
		slog.String("project_id", l.due.msg.GetProjectId()),
		slog.Int64("attempt", int64(l.due.msg.GetAttempt())),
		slog.Int64("lease_seq", l.due.msg.GetLeaseSeq()))
	attrs = append(attrs, extra...)
	l.h.log.LogAttrs(ctx, level, msg, attrs...)
}

func (l deliveryLog) info(ctx context.Context, msg string, extra ...slog.Attr) {
	l.log(ctx, slog.LevelInfo, msg, extra...)
}

func (l deliveryLog) error(ctx context.Context, msg string, extra ...slog.Attr) {
	l.log(ctx, slog.LevelError, msg, extra...)
}

// delivery writes the one line per delivery. The URL is reduced to its
// host: a path or query string may carry the customer's secrets.
func (l deliveryLog) delivery(ctx context.Context, res delivery.Result) {
	extra := [5]slog.Attr{
		slog.String("host", l.due.host),
		slog.String("outcome", outcomeName(res.Outcome)),
		slog.Int("status_code", res.StatusCode),
		slog.Int64("duration_ms", res.Duration.Milliseconds()),
	}
	n := 4
	if res.Error != "" {
		extra[n] = slog.String("error", res.Error)
		n++
	}
	l.info(ctx, "delivery", extra[:n]...)
}
