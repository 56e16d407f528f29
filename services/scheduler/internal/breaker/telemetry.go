package breaker

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/sundial-run/sundial/pkg/telemetry"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// The paused endpoints are counted at most every pausedEvery, up to
// pausedLimit, as the queue depth is: collectors may scrape often.
const (
	pausedEvery   = 10 * time.Second
	pausedLimit   = 100000
	pausedTimeout = 2 * time.Second
)

// ObservePaused registers the sundial.scheduler.endpoints_paused gauge on
// meter: the receivers' domains whose breaker holds them paused, read from
// PostgreSQL at most every 10 s (every replica reports the same value). A
// failed read reports the last value.
func ObservePaused(db store.DBTX, meter metric.Meter) error {
	queries := store.New(db)
	return telemetry.ObserveSampledCount(meter, telemetry.SampledCount{
		Name:        "sundial.scheduler.endpoints_paused",
		Description: "Receivers' domains paused by their circuit breakers, counted at most every 10 s.",
		Unit:        "{endpoint}",
		Every:       pausedEvery, Timeout: pausedTimeout,
		Read: func(ctx context.Context) (int64, error) {
			return queries.CountPausedEndpoints(ctx, pausedLimit)
		},
	})
}
