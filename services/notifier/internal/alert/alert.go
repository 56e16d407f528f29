// Package alert takes the Alert events that the scheduler and the gateway
// publish (hook.failed, endpoint.recovered, quota.threshold) off the bus,
// checks them, and hands each one to a Sender.
//
// Today the only Sender writes one structured log line per alert. The
// notification channels of decisions.md (chat, custom webhook, e-mail), the
// grouping of alerts and the per-channel retries come later as Senders of
// their own; the Handler does not change for them. A Sender's error makes the
// bus redeliver the alert with a growing backoff, without limit: an alert is
// never silently dropped unless it is malformed.
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
)

// Sender tells people about one alert. It returns an error when the alert
// must be tried again.
type Sender interface {
	Send(ctx context.Context, a *eventv1.Alert) error
}

// Handler is the notifier's bus.Handler for the alerts stream.
type Handler struct {
	sender Sender
	log    *slog.Logger
}

// NewHandler returns a Handler that gives valid alerts to sender.
func NewHandler(sender Sender, log *slog.Logger) *Handler {
	return &Handler{sender: sender, log: log}
}

// Handle decodes and checks one message and sends the alert. A message that
// is not a valid Alert can never succeed, so it is dropped (with a log line
// that says why); a failed send is returned for the bus to redeliver.
func (h *Handler) Handle(ctx context.Context, d bus.Delivery) error {
	a, err := Decode(d.Data)
	if err != nil {
		h.log.WarnContext(ctx, "alert dropped",
			"reason", err.Error(),
			"subject", d.Subject,
			"msg_id", d.Header.Get(jetstream.MsgIDHeader),
			"delivered", d.NumDelivered)
		return bus.Drop(err)
	}
	if err := h.sender.Send(ctx, a); err != nil {
		return fmt.Errorf("send alert %s (%s): %w", a.GetAlertId(), a.GetKind(), err)
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
