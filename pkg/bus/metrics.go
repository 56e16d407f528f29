package bus

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// ObserveConn registers counters of nc's statistics on meter, read from
// the client at each collection: messages and bytes in and out, and
// reconnects (each one a NATS server lost: a restart, a leader moving, the
// network).
func ObserveConn(meter metric.Meter, nc *nats.Conn) error {
	msgs, err := meter.Int64ObservableCounter("sundial.nats.client.messages",
		metric.WithDescription("Messages through the service's NATS connection, by direction (in, out)."),
		metric.WithUnit("{message}"))
	if err != nil {
		return fmt.Errorf("nats client metrics: %w", err)
	}
	bytes, err := meter.Int64ObservableCounter("sundial.nats.client.bytes",
		metric.WithDescription("Payload bytes through the service's NATS connection, by direction (in, out)."),
		metric.WithUnit("By"))
	if err != nil {
		return fmt.Errorf("nats client metrics: %w", err)
	}
	reconnects, err := meter.Int64ObservableCounter("sundial.nats.client.reconnects",
		metric.WithDescription("Times the service's NATS connection was lost and made again."),
		metric.WithUnit("{reconnect}"))
	if err != nil {
		return fmt.Errorf("nats client metrics: %w", err)
	}
	in := metric.WithAttributes(attribute.String("direction", "in"))
	out := metric.WithAttributes(attribute.String("direction", "out"))
	_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := nc.Stats()
		o.ObserveInt64(msgs, int64(s.InMsgs), in)
		o.ObserveInt64(msgs, int64(s.OutMsgs), out)
		o.ObserveInt64(bytes, int64(s.InBytes), in)
		o.ObserveInt64(bytes, int64(s.OutBytes), out)
		o.ObserveInt64(reconnects, int64(s.Reconnects))
		return nil
	}, msgs, bytes, reconnects)
	if err != nil {
		return fmt.Errorf("nats client metrics: %w", err)
	}
	return nil
}
