package result

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/telemetry"
)

// Alerts (docs/notifications.md): the transaction that fails a hook for
// good writes its hook.failed alert into the alerts table (the outbox) and
// marks the hook's endpoint failing; the transaction of the first success
// on a failing endpoint deletes that mark and writes an endpoint.recovered
// alert. After the commit the applier publishes each alert's event, a few
// tries at most: the result is settled, so retrying the whole message would
// find it stale. An event that is never published is not lost: the
// notifier's sweeper takes in every alert still waiting in the table.
const (
	alertTries          = 4
	alertFirstBackoff   = 200 * time.Millisecond
	alertPublishTimeout = 5 * time.Second
)

// hookFailure is a hook whose retries ran out.
type hookFailure struct {
	hookID    uuid.UUID
	leaseSeq  int64
	projectID uuid.UUID
	domain    string
	path      string
	err       string
	class     eventv1.FailureClass
	attempts  int32
	at        time.Time
}

func (f hookFailure) alert() *eventv1.Alert {
	return &eventv1.Alert{
		AlertId:      event.HookFailedAlertID(f.hookID, f.leaseSeq),
		Kind:         eventv1.AlertKind_ALERT_KIND_HOOK_FAILED,
		ProjectId:    f.projectID.String(),
		OccurredAt:   timestamppb.New(f.at),
		HookId:       f.hookID.String(),
		Domain:       f.domain,
		Path:         f.path,
		Error:        f.err,
		FailureClass: f.class,
		Attempts:     f.attempts,
	}
}

// recovery is a successful delivery to an endpoint that was failing.
type recovery struct {
	projectID    uuid.UUID
	domain       string
	path         string
	hookID       uuid.UUID // the hook delivered successfully
	failingSince time.Time
	failedHooks  int32
	at           time.Time
}

func (r recovery) alert() *eventv1.Alert {
	return &eventv1.Alert{
		AlertId:    event.EndpointRecoveredAlertID(r.projectID, r.domain, r.path, r.failingSince),
		Kind:       eventv1.AlertKind_ALERT_KIND_ENDPOINT_RECOVERED,
		ProjectId:  r.projectID.String(),
		OccurredAt: timestamppb.New(r.at),
		HookId:     r.hookID.String(),
		Domain:     r.domain,
		Path:       r.path,
		Attempts:   r.failedHooks,
	}
}

type alerter struct {
	js       jetstream.JetStream
	replicas int
	pub      *bus.Publisher
	log      *slog.Logger
	failures metric.Int64Counter
}

func newAlerter(js jetstream.JetStream, replicas int, log *slog.Logger) (*alerter, error) {
	failures, err := telemetry.Counter(otel.Meter("sundial/scheduler"), "sundial.scheduler.alert_publish_failures",
		metric.WithDescription("Alerts whose event could not be published after retries; the notifier's sweeper takes them from the outbox."))
	if err != nil {
		return nil, fmt.Errorf("alert metrics: %w", err)
	}
	return &alerter{js: js, replicas: replicas, pub: bus.NewPublisher(js), log: log, failures: failures}, nil
}

// publishAll publishes the events of committed alerts and returns the first
// error.
func (a *alerter) publishAll(ctx context.Context, alerts []*eventv1.Alert) error {
	var first error
	for _, alert := range alerts {
		if err := a.publishAlert(ctx, alert); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// publishAlert publishes one alert's event, retrying a few times. Its
// Nats-Msg-Id derives from the alert id, so a repeat is stored once.
func (a *alerter) publishAlert(ctx context.Context, alert *eventv1.Alert) error {
	msg := bus.Message{
		Subject: event.SubjectAlert,
		MsgID:   event.MsgID(event.KindAlert, alert.GetAlertId(), 0),
		Body:    alert,
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
		a.log.WarnContext(ctx, "publish alert; retrying", "alert_id", alert.GetAlertId(), "try", try, "err", err)
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
	if err := event.EnsureStreams(ctx, a.js, a.replicas); err != nil {
		a.log.WarnContext(ctx, "re-create streams", "err", err)
	}
}

func (a *alerter) publish(ctx context.Context, msg bus.Message) error {
	ctx, cancel := context.WithTimeout(ctx, alertPublishTimeout)
	defer cancel()
	return a.pub.Publish(ctx, msg)
}
