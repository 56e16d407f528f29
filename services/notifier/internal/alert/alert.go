// Package alert takes the Alert events that the scheduler and the gateway
// publish (hook.failed, endpoint.recovered, quota.threshold, channel.test)
// off the bus, checks them and takes them in (package intake): the event
// is acknowledged only once the alert is stored in its group. A database
// error makes the bus redeliver the event; a malformed alert, or one whose
// project no longer exists, is dropped with a log line.
package alert

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/notifier/internal/intake"
)

// Intake takes one alert in (package intake's *Intake).
type Intake interface {
	TakeIn(ctx context.Context, a intake.Alert, via string) (intake.Result, error)
}

// Handler is the notifier's bus.Handler for the alerts stream.
type Handler struct {
	intake Intake
	log    *slog.Logger
}

// NewHandler returns a Handler that takes valid alerts in through in.
func NewHandler(in Intake, log *slog.Logger) *Handler {
	return &Handler{intake: in, log: log}
}

// Handle decodes and checks one message and takes the alert in. A message
// that is not a valid Alert can never succeed, so it is dropped (with a log
// line that says why); a failed intake is returned for the bus to redeliver.
func (h *Handler) Handle(ctx context.Context, d bus.Delivery) error {
	a, err := Decode(d.Data)
	var in intake.Alert
	if err == nil {
		in, err = intake.FromEvent(a, d.Data)
	}
	if err != nil {
		h.log.WarnContext(ctx, "alert dropped",
			"reason", err.Error(),
			"subject", d.Subject,
			"msg_id", d.Header.Get(jetstream.MsgIDHeader),
			"delivered", d.NumDelivered)
		return bus.Drop(err)
	}
	_, err = h.intake.TakeIn(ctx, in, "event")
	if errors.Is(err, intake.ErrProjectGone) {
		// TakeIn logged it; nobody is left to tell.
		return bus.Drop(err)
	}
	if err != nil {
		return fmt.Errorf("alert %s (%s): %w", a.GetAlertId(), a.GetKind(), err)
	}
	return nil
}

// Decode parses an Alert and checks it.
func Decode(data []byte) (*eventv1.Alert, error) {
	var a eventv1.Alert
	if err := proto.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("undecodable alert: %w", err)
	}
	if err := Validate(&a); err != nil {
		return nil, err
	}
	return &a, nil
}

// Validate reports what makes an alert impossible to send. A kind this
// notifier does not know yet (from a newer producer) is valid: it is sent
// as it is rather than lost.
func Validate(a *eventv1.Alert) error {
	var errs []error
	if a.GetKind() == eventv1.AlertKind_ALERT_KIND_UNSPECIFIED {
		errs = append(errs, errors.New("kind is not set"))
	}
	if a.GetProjectId() == "" {
		errs = append(errs, errors.New("project_id is not set"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid alert %q: %w", a.GetAlertId(), errors.Join(errs...))
	}
	return nil
}
