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
	js       jetstream.JetStream
	pub      *bus.Publisher
	log      *slog.Logger
	queue    chan Crossing
	failures metric.Int64Counter
	// drainTimeout bounds the publishing of what is still queued at shutdown.
	drainTimeout time.Duration
}

// NewAlerts returns an Alerts publishing with js. drainTimeout bounds how
// long Run keeps publishing queued alerts after its context ends.
func NewAlerts(js jetstream.JetStream, log *slog.Logger, drainTimeout time.Duration) (*Alerts, error) {
	failures, err := otel.Meter("sundial/gateway").Int64Counter("sundial.gateway.quota_alert_publish_failures",
		metric.WithDescription("Quota threshold alerts that could not be published after retries, or found the queue full."))
	if err != nil {
		return nil, fmt.Errorf("alert metrics: %w", err)
	}
	return &Alerts{
		js: js, pub: bus.NewPublisher(js), log: log,
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
	backoff := alertFirstBackoff
	var err error
	for try := 1; try <= alertTries; try++ {
		if err = a.publishOnce(ctx, msg); err == nil {
			a.log.InfoContext(ctx, "quota alert published", "alert_id", c.AlertID(), "project_id", c.ProjectID,
				"threshold_percent", c.Percent, "usage", c.Used, "quota", c.Quota, "tries", try)
			return
		}
		if try == alertTries || !a.pause(ctx, err, backoff) {
			break
		}
		backoff *= 2
	}
	a.failures.Add(ctx, 1)
	a.log.ErrorContext(ctx, "quota alert event not published: publish failed", "alert_id", c.AlertID(), "project_id", c.ProjectID,
		"threshold_percent", c.Percent, "err", err)
}

// pause waits before the next try, re-creating the streams first when the
// publish found none (NATS lost its store). It reports false when ctx ended.
func (a *Alerts) pause(ctx context.Context, err error, d time.Duration) bool {
	if event.IsStreamGone(err) {
		if err := event.EnsureStreams(ctx, a.js); err != nil {
			a.log.WarnContext(ctx, "re-create streams", "err", err)
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (a *Alerts) publishOnce(ctx context.Context, msg bus.Message) error {
	ctx, cancel := context.WithTimeout(ctx, alertPublishTimeout)
	defer cancel()
	return a.pub.Publish(ctx, msg)
}
