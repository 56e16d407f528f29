package bus

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sundial-run/sundial/pkg/adminhttp"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/telemetry"
)

// ConsumerAdmin binds the admin listener of a service that reads one
// durable consumer (the scheduler, the dispatcher, the notifier): ready
// when its database is (readyDB), NATS is connected and the consumer
// exists; its metrics with the consumer's lag and the NATS connection's
// traffic.
func ConsumerAdmin(ctx context.Context, addr, setting string, tel telemetry.Providers, readyDB func(context.Context) error,
	nc *nats.Conn, js jetstream.JetStream, consumer event.Consumer, log *slog.Logger,
) (*adminhttp.Server, error) {
	meter := tel.Meter.Meter(MeterName)
	if err := ObserveConsumerLag(js, meter, consumer); err != nil {
		return nil, err
	}
	if err := ObserveConn(meter, nc); err != nil {
		return nil, err
	}
	return adminhttp.New(ctx, addr, setting, tel.Metrics, []adminhttp.Check{
		{Name: "database", Probe: readyDB},
		{Name: "nats", Probe: Ready(nc, js, consumer)},
	}, log)
}

// Ready returns the NATS part of a service's readiness: the connection is
// up (not reconnecting) and each of the service's durable consumers exists
// on the server, which asks JetStream, so a server that answers but lost
// its store, or a JetStream that is down, is not ready. Consume creates a
// missing consumer again, so this heals without a restart.
func Ready(nc *nats.Conn, js jetstream.JetStream, consumers ...event.Consumer) func(context.Context) error {
	return func(ctx context.Context) error {
		if s := nc.Status(); s != nats.CONNECTED {
			return fmt.Errorf("nats: %s", s)
		}
		for _, c := range consumers {
			if _, err := js.Consumer(ctx, c.Stream, c.Config.Durable); err != nil {
				return fmt.Errorf("nats consumer %s: %w", c.Config.Durable, err)
			}
		}
		return nil
	}
}

// MeterName is the instrumentation scope of the consumer lag gauge.
const MeterName = "sundial/bus"

// The consumer lag is read from JetStream at most every lagEvery, each read
// bounded by lagTimeout: one API request per consumer, cheap, but a
// collector may scrape often.
const (
	lagEvery   = 5 * time.Second
	lagTimeout = 2 * time.Second
)

// ObserveConsumerLag registers the sundial.nats.consumer_pending gauge on
// meter: for each consumer (attribute consumer, its durable name), the
// messages of its stream it has not been handed yet (JetStream's
// NumPending). A failed read reports the last value.
func ObserveConsumerLag(js jetstream.JetStream, meter metric.Meter, consumers ...event.Consumer) error {
	type lag struct {
		attrs   metric.ObserveOption
		pending *telemetry.Sampled[int64]
	}
	lags := make([]lag, 0, len(consumers))
	for _, c := range consumers {
		lags = append(lags, lag{
			attrs: metric.WithAttributes(attribute.String("consumer", c.Config.Durable)),
			pending: telemetry.NewSampled(lagEvery, lagTimeout, func(ctx context.Context) (int64, error) {
				cons, err := js.Consumer(ctx, c.Stream, c.Config.Durable)
				if err != nil {
					return 0, err
				}
				return int64(cons.CachedInfo().NumPending), nil
			}),
		})
	}
	_, err := meter.Int64ObservableGauge("sundial.nats.consumer_pending",
		metric.WithDescription("Messages of the consumer's stream not yet handed to it (JetStream NumPending), read at most every 5 s."),
		metric.WithUnit("{message}"),
		metric.WithInt64Callback(func(ctx context.Context, o metric.Int64Observer) error {
			for _, l := range lags {
				o.Observe(l.pending.Value(ctx), l.attrs)
			}
			return nil
		}))
	if err != nil {
		return fmt.Errorf("consumer lag gauge: %w", err)
	}
	return nil
}
