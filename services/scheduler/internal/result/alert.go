package result

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
)

// Alert publishing is bounded: the result has committed, so retrying the
// whole message would find it stale and never alert. A later task replaces
// this with a transactional outbox.
const (
	alertTries          = 4
	alertFirstBackoff   = 200 * time.Millisecond
	alertPublishTimeout = 5 * time.Second
)

// HookFailedAlertID is the alert_id of a hook's hook.failed alert. The lease
// of the final attempt identifies the occurrence: publishing it again is
// deduplicated, while the same hook failing again after a bulk retry (a new
// lease) is a new alert.
func HookFailedAlertID(hookID uuid.UUID, leaseSeq int64) string {
	return "hook.failed:" + hookID.String() + ":" + strconv.FormatInt(leaseSeq, 10)
}

type hookFailure struct {
	hookID    uuid.UUID
	leaseSeq  int64
	projectID uuid.UUID
	path      string
	err       string
	attempts  int32
	at        time.Time
}

type alerter struct {
	js       jetstream.JetStream
	pub      *bus.Publisher
	log      *slog.Logger
	failures metric.Int64Counter
}

func newAlerter(js jetstream.JetStream, log *slog.Logger) (*alerter, error) {
	failures, err := otel.Meter("sundial/scheduler").Int64Counter("sundial.scheduler.alert_publish_failures",
		metric.WithDescription("hook.failed alerts that could not be published after retries."))
	if err != nil {
		return nil, fmt.Errorf("alert metrics: %w", err)
	}
	return &alerter{js: js, pub: bus.NewPublisher(js), log: log, failures: failures}, nil
}

// hookFailed publishes the hook.failed alert, retrying a few times.
func (a *alerter) hookFailed(ctx context.Context, f hookFailure) error {
	alertID := HookFailedAlertID(f.hookID, f.leaseSeq)
	msg := bus.Message{
		Subject: event.SubjectAlert,
		MsgID:   event.MsgID(event.KindAlert, "hook.failed:"+f.hookID.String(), f.leaseSeq),
		Body: &eventv1.Alert{
			AlertId:    alertID,
			Kind:       eventv1.AlertKind_ALERT_KIND_HOOK_FAILED,
			ProjectId:  f.projectID.String(),
			OccurredAt: timestamppb.New(f.at),
			HookId:     f.hookID.String(),
			Path:       f.path,
			Error:      f.err,
			Attempts:   f.attempts,
		},
	}
	var err error
	backoff := alertFirstBackoff
	for try := 1; try <= alertTries; try++ {
		if err = a.publish(ctx, msg); err == nil {
			return nil
		}
		if try == alertTries {
			break
		}
		a.log.WarnContext(ctx, "publish hook.failed alert; retrying", "hook_id", f.hookID, "try", try, "err", err)
		a.healStreams(ctx, err)
		select {
		case <-ctx.Done():
			a.failures.Add(ctx, 1)
			return fmt.Errorf("%w (gave up: %w)", err, ctx.Err())
		case <-time.After(backoff):
		}
		backoff *= 2
	}
	a.failures.Add(ctx, 1)
	return err
}

// healStreams re-creates the streams when a publish found none (NATS lost
// its store), so that the next try can succeed.
func (a *alerter) healStreams(ctx context.Context, err error) {
	if !event.IsStreamGone(err) {
		return
	}
	if err := event.EnsureStreams(ctx, a.js); err != nil {
		a.log.WarnContext(ctx, "re-create streams", "err", err)
	}
}

func (a *alerter) publish(ctx context.Context, msg bus.Message) error {
	ctx, cancel := context.WithTimeout(ctx, alertPublishTimeout)
	defer cancel()
	return a.pub.Publish(ctx, msg)
}
