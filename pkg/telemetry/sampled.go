package telemetry

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
)

// Sampled is a value read at most once per interval, each read bounded by a
// timeout, for an observable gauge whose reading costs a query: a scrape
// (or an OTLP export) in between gets the last value, and a failed read
// keeps it, so that an outage does not blank the gauge.
type Sampled[T any] struct {
	read    func(context.Context) (T, error)
	every   time.Duration
	timeout time.Duration

	mu   sync.Mutex
	at   time.Time
	last T
}

// NewSampled returns a Sampled that calls read at most once per every,
// with a context limited to timeout.
func NewSampled[T any](every, timeout time.Duration, read func(context.Context) (T, error)) *Sampled[T] {
	return &Sampled[T]{read: read, every: every, timeout: timeout}
}

// Value returns the last value read, reading it again first when it is
// older than the interval.
func (s *Sampled[T]) Value(ctx context.Context) T {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.at.IsZero() && time.Since(s.at) < s.every {
		return s.last
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	v, err := s.read(ctx)
	s.at = time.Now()
	if err == nil {
		s.last = v
	}
	return s.last
}

// SampledCount is what ObserveSampledCount registers: a gauge named Name
// whose value read costs a query, read at most once per Every, each read
// bounded by Timeout.
type SampledCount struct {
	Name, Description, Unit string
	Every, Timeout          time.Duration
	Read                    func(context.Context) (int64, error)
}

// ObserveSampledCount registers g on meter as an int64 observable gauge
// backed by a Sampled: a failed read reports the last value.
func ObserveSampledCount(meter metric.Meter, g SampledCount) error {
	value := NewSampled(g.Every, g.Timeout, g.Read)
	_, err := meter.Int64ObservableGauge(g.Name,
		metric.WithDescription(g.Description),
		metric.WithUnit(g.Unit),
		metric.WithInt64Callback(func(ctx context.Context, o metric.Int64Observer) error {
			o.Observe(value.Value(ctx))
			return nil
		}))
	if err != nil {
		return fmt.Errorf("%s gauge: %w", g.Name, err)
	}
	return nil
}
