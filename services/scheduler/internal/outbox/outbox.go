// Package outbox writes alerts into the alerts table (docs/notifications.md,
// "Never lost") in the transaction of the change that caused them: the
// result applier's hook.failed, endpoint.recovered and endpoint.paused
// alerts, and the usage thresholds that sequence step hooks reach. The
// notifier takes in every alert, published or not: its sweeper reads those
// whose event never came.
package outbox

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// Insert writes alerts into the outbox in one statement; an alert already
// there (its id is deterministic) is left as it is.
func Insert(ctx context.Context, q *store.Queries, alerts []*eventv1.Alert) error {
	if len(alerts) == 0 {
		return nil
	}
	arg := store.InsertAlertsParams{}
	for _, a := range alerts {
		body, err := proto.Marshal(a)
		if err != nil {
			return fmt.Errorf("encode alert %s: %w", a.GetAlertId(), err)
		}
		projectID, err := uuid.Parse(a.GetProjectId())
		if err != nil {
			return fmt.Errorf("alert %s: project id: %w", a.GetAlertId(), err)
		}
		kind, err := kindName(a.GetKind())
		if err != nil {
			return fmt.Errorf("alert %s: %w", a.GetAlertId(), err)
		}
		arg.Ids = append(arg.Ids, a.GetAlertId())
		arg.ProjectIds = append(arg.ProjectIds, projectID)
		arg.Kinds = append(arg.Kinds, kind)
		arg.Bodies = append(arg.Bodies, body)
		arg.OccurredAts = append(arg.OccurredAts, a.GetOccurredAt().AsTime())
	}
	if err := q.InsertAlerts(ctx, arg); err != nil {
		return fmt.Errorf("insert alerts: %w", err)
	}
	return nil
}

// kindName is the alerts table's name of an alert's kind.
func kindName(k eventv1.AlertKind) (string, error) {
	switch k {
	case eventv1.AlertKind_ALERT_KIND_HOOK_FAILED:
		return event.AlertKindHookFailed, nil
	case eventv1.AlertKind_ALERT_KIND_ENDPOINT_RECOVERED:
		return event.AlertKindEndpointRecovered, nil
	case eventv1.AlertKind_ALERT_KIND_ENDPOINT_PAUSED:
		return event.AlertKindEndpointPaused, nil
	case eventv1.AlertKind_ALERT_KIND_QUOTA_THRESHOLD:
		return event.AlertKindQuotaThreshold, nil
	}
	return "", fmt.Errorf("no alerts table kind for %s", k)
}
