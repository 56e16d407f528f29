package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// MeterName is the instrumentation scope of the pool's metrics.
const MeterName = "sundial/postgres"

// ObservePool registers gauges and counters of pool's statistics on meter,
// read from pgxpool at each collection: connections by state and the
// pool's size (a pool always at its size, with acquires waiting, is the
// database's bottleneck), acquires that found no idle connection and the
// time they waited.
func ObservePool(meter metric.Meter, pool *pgxpool.Pool) error {
	conns, err := meter.Int64ObservableGauge("sundial.db.pool.connections",
		metric.WithDescription("Connections of the service's PostgreSQL pool, by state (acquired, idle, constructing)."),
		metric.WithUnit("{connection}"))
	if err != nil {
		return fmt.Errorf("pool metrics: %w", err)
	}
	size, err := meter.Int64ObservableGauge("sundial.db.pool.max_connections",
		metric.WithDescription("The pool's size: connections it may open (SUNDIAL_DATABASE_MAX_CONNS)."),
		metric.WithUnit("{connection}"))
	if err != nil {
		return fmt.Errorf("pool metrics: %w", err)
	}
	waits, err := meter.Int64ObservableCounter("sundial.db.pool.empty_acquires",
		metric.WithDescription("Acquires that found no idle connection and waited for one."),
		metric.WithUnit("{acquire}"))
	if err != nil {
		return fmt.Errorf("pool metrics: %w", err)
	}
	waited, err := meter.Float64ObservableCounter("sundial.db.pool.acquire_wait",
		metric.WithDescription("Time acquires spent waiting for a connection."),
		metric.WithUnit("s"))
	if err != nil {
		return fmt.Errorf("pool metrics: %w", err)
	}
	states := [3]metric.ObserveOption{
		metric.WithAttributes(attribute.String("state", "acquired")),
		metric.WithAttributes(attribute.String("state", "idle")),
		metric.WithAttributes(attribute.String("state", "constructing")),
	}
	_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := pool.Stat()
		o.ObserveInt64(conns, int64(s.AcquiredConns()), states[0])
		o.ObserveInt64(conns, int64(s.IdleConns()), states[1])
		o.ObserveInt64(conns, int64(s.ConstructingConns()), states[2])
		o.ObserveInt64(size, int64(s.MaxConns()))
		o.ObserveInt64(waits, s.EmptyAcquireCount())
		o.ObserveFloat64(waited, s.EmptyAcquireWaitTime().Seconds())
		return nil
	}, conns, size, waits, waited)
	if err != nil {
		return fmt.Errorf("pool metrics: %w", err)
	}
	return nil
}
