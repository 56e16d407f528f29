package quota

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/telemetry"
)

// Publishing is bounded. The alert was stored with its claim (the alerts
// table, the outbox), so an alert that cannot be published after these
// tries is logged (level ERROR, with its alert id) and counted, and the
// notifier's sweeper takes it in from the table instead.
const (
	alertQueueSize      = 1024
	alertTries          = 4
	alertFirstBackoff   = 200 * time.Millisecond
	alertPublishTimeout = 5 * time.Second
)

// Alerts publishes usage-threshold alerts on SUNDIAL_ALERTS, after the
// transaction that claimed them, away from the request that crossed them:
// a NATS outage must not hold a client's POST for seconds of retries.
// Announce queues; Run publishes.
type Alerts struct {
	send     bus.Retrying
	log      *slog.Logger
	queue    chan Crossing
	failures metric.Int64Counter
	// drainTimeout bounds the publishing of what is still queued at shutdown.
	drainTimeout time.Duration
}

// NewAlerts returns an Alerts publishing with js; replicas are
// SUNDIAL_STREAM_REPLICAS, for re-creating lost streams. drainTimeout bounds how
// long Run keeps publishing queued alerts after its context ends.
func NewAlerts(js jetstream.JetStream, replicas int, log *slog.Logger, drainTimeout time.Duration) (*Alerts, error) {
	failures, err := telemetry.Counter(otel.Meter("sundial/gateway"), "sundial.gateway.quota_alert_publish_failures",
		metric.WithDescription("Quota threshold alerts that could not be published after retries, or found the queue full."))
	if err != nil {
		return nil, fmt.Errorf("alert metrics: %w", err)
	}
	send := bus.Retrying{
		Publisher:     bus.NewPublisher(js),
		Retry:         bus.RetryPolicy{Tries: alertTries, Backoff: alertFirstBackoff, Timeout: alertPublishTimeout},
		EnsureStreams: func(ctx context.Context) error { return event.EnsureStreams(ctx, js, replicas) },
		Log:           log,
	}
	return &Alerts{
		send: send, log: log,
		queue: make(chan Crossing, alertQueueSize), failures: failures, drainTimeout: drainTimeout,
	}, nil
}

// Announce queues the alerts of committed crossings without waiting. A full
// queue (NATS has been unreachable for a long while) drops the event, with
// an ERROR log line naming it; the alert itself is in the outbox.
func (a *Alerts) Announce(ctx context.Context, crossed []Crossing) {
	for _, c := range crossed {
		select {
		case a.queue <- c:
		default:
			a.failures.Add(ctx, 1)
			a.log.ErrorContext(ctx, "quota alert event not published: queue full", "alert_id", c.AlertID(), "project_id", c.ProjectID)
		}
	}
}

// Run publishes queued alerts until ctx ends, then publishes what is still
// queued, an alert being retried included, for at most the drain timeout.
// Stop it after the HTTP server has finished its requests, so that their
// alerts are queued by then.
func (a *Alerts) Run(ctx context.Context) {
	pubCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(a.drainTimeout, cancel) })
	defer stop()
	for {
		select {
		case c := <-a.queue:
			a.publish(pubCtx, c)
		case <-ctx.Done():
			a.drain(pubCtx)
			return
		}
	}
}

func (a *Alerts) drain(ctx context.Context) {
	for {
		select {
		case c := <-a.queue:
			a.publish(ctx, c)
		default:
			return
		}
	}
}

// publish sends one alert, retrying with a growing pause, and writes the
// one log line of this unit of work.
func (a *Alerts) publish(ctx context.Context, c Crossing) {
	msg := bus.Message{Subject: event.SubjectAlert, MsgID: c.MsgID(), Body: c.Alert()}
	tries, err := a.send.PublishCounting(ctx, msg)
	if err == nil {
		a.log.InfoContext(ctx, "quota alert published", "alert_id", c.AlertID(), "project_id", c.ProjectID,
			"threshold_percent", c.Percent, "usage", c.Used, "quota", c.Quota, "tries", tries)
		return
	}
	a.failures.Add(ctx, 1)
	a.log.ErrorContext(ctx, "quota alert event not published: publish failed", "alert_id", c.AlertID(), "project_id", c.ProjectID,
		"threshold_percent", c.Percent, "err", err)
}
