package asyncanswer

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// publishTimeout bounds the one try to publish a recovery's event. It holds
// up the receiver's ack (rarely: only an ack that ends a failing spell, and
// only while NATS is slow), and a missed event costs no alert: the
// notifier's sweeper takes it in from the alerts table.
const publishTimeout = 2 * time.Second

// recoverEndpoint ends, in the ack's transaction, the failing spell of the
// endpoint of the hook just completed, if it had one, and returns the
// endpoint.recovered alert it wrote (nil when the endpoint was not failing).
// It writes exactly what the scheduler writes for a successful delivery
// (services/scheduler/internal/result/alert.go): the same alert id, so the
// same spell ended twice is one alert, and the same body.
func recoverEndpoint(ctx context.Context, q *store.Queries, hookID uuid.UUID) (*eventv1.Alert, error) {
	rows, err := q.RecoverEndpointOfHook(ctx, hookID)
	if err != nil {
		return nil, fmt.Errorf("recover endpoint: %w", err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	r := rows[0]
	alert := &eventv1.Alert{
		AlertId:    event.EndpointRecoveredAlertID(r.ProjectID, r.Domain, r.Path, r.FailingSince),
		Kind:       eventv1.AlertKind_ALERT_KIND_ENDPOINT_RECOVERED,
		ProjectId:  r.ProjectID.String(),
		OccurredAt: timestamppb.New(r.RecoveredAt),
		HookId:     hookID.String(),
		Domain:     r.Domain,
		Path:       r.Path,
		Attempts:   r.FailedHooks,
	}
	body, err := proto.Marshal(alert)
	if err != nil {
		return nil, fmt.Errorf("encode alert %s: %w", alert.GetAlertId(), err)
	}
	if _, err := q.InsertAlert(ctx, store.InsertAlertParams{
		ID: alert.GetAlertId(), ProjectID: r.ProjectID, Kind: event.AlertKindEndpointRecovered,
		Body: body, OccurredAt: r.RecoveredAt,
	}); err != nil {
		return nil, fmt.Errorf("insert alert %s: %w", alert.GetAlertId(), err)
	}
	return alert, nil
}

// publish publishes a committed alert's event, once and bounded, even when
// the receiver has gone: the alert is settled. Its Nats-Msg-Id derives from
// the alert id, so a repeat (the scheduler's, say) is stored once.
func (s *Service) publish(ctx context.Context, alert *eventv1.Alert) {
	if s.pub == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishTimeout)
	defer cancel()
	err := s.pub.Publish(ctx, bus.Message{
		Subject: event.SubjectAlert,
		MsgID:   event.MsgID(event.KindAlert, alert.GetAlertId(), 0),
		Body:    alert,
	})
	if err != nil {
		s.log.WarnContext(ctx, "endpoint recovered alert not published; the notifier's sweeper takes it in",
			"alert_id", alert.GetAlertId(), "project_id", alert.GetProjectId(), "hook_id", alert.GetHookId(), "err", err)
	}
}
