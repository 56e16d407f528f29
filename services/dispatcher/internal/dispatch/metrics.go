package dispatch

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/failclass"
	"github.com/sundial-run/sundial/pkg/telemetry"
	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
)

// MeterName is the instrumentation scope of the dispatcher's metrics.
const MeterName = "sundial/dispatcher"

// Metrics are the dispatcher's instruments.
type Metrics struct {
	deliveries metric.Int64Counter
	duration   metric.Float64Histogram
	inFlight   metric.Int64UpDownCounter
	slotsOpen  metric.Int64UpDownCounter
	lateness   metric.Float64Histogram
	deferrals  metric.Int64Counter
	// outcomes holds the outcome attribute of each known outcome, built
	// once: built per delivery, the attribute set was a visible share of a
	// burst's processor time (sorting and allocating it each time).
	outcomes map[eventv1.Outcome]metric.MeasurementOption
	// failures holds the attributes of a failed delivery's count, its
	// outcome and its failure class (bounded: the enum), built once too.
	failures map[eventv1.FailureClass]metric.MeasurementOption
}

// latenessBuckets suit a service that aims at a few milliseconds late: fine
// steps up to 100 ms, coarse ones beyond for backlogs and outages.
var latenessBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// NewMetrics creates the instruments on meter, or on the global provider's
// "sundial/dispatcher" meter when meter is nil. An instrument that cannot be
// created is replaced by a no-op one: metrics never stop deliveries.
func NewMetrics(meter metric.Meter) *Metrics {
	if meter == nil {
		meter = otel.Meter(MeterName)
	}
	fallback := noop.NewMeterProvider().Meter(MeterName)
	m := &Metrics{outcomes: make(map[eventv1.Outcome]metric.MeasurementOption, len(eventv1.Outcome_name))}
	for o := range eventv1.Outcome_name {
		m.outcomes[eventv1.Outcome(o)] = outcomeAttr(eventv1.Outcome(o))
	}
	m.failures = make(map[eventv1.FailureClass]metric.MeasurementOption, len(eventv1.FailureClass_name))
	for c := range eventv1.FailureClass_name {
		if w := failclass.Word(eventv1.FailureClass(c)); w != "" {
			m.failures[eventv1.FailureClass(c)] = metric.WithAttributeSet(attribute.NewSet(
				attribute.String("outcome", outcomeName(eventv1.Outcome_OUTCOME_FAILURE)), attribute.String("failure_class", w)))
		}
	}
	var err error
	if m.deliveries, err = meter.Int64Counter("sundial.dispatcher.deliveries",
		metric.WithDescription("Deliveries made, by outcome, and failures by class."), metric.WithUnit("{delivery}")); err != nil {
		m.deliveries, _ = fallback.Int64Counter("deliveries")
	}
	if m.duration, err = meter.Float64Histogram("sundial.dispatcher.delivery.duration",
		metric.WithDescription("Wall time of a delivery's HTTP exchange, by outcome."), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)); err != nil {
		m.duration, _ = fallback.Float64Histogram("duration")
	}
	if m.inFlight, err = meter.Int64UpDownCounter("sundial.dispatcher.deliveries.in_flight",
		metric.WithDescription("Deliveries under way."), metric.WithUnit("{delivery}")); err != nil {
		m.inFlight, _ = fallback.Int64UpDownCounter("in_flight")
	}
	if m.slotsOpen, err = meter.Int64UpDownCounter("sundial.dispatcher.slots.open",
		metric.WithDescription("Delivery slots open: SUNDIAL_DISPATCHER_CONCURRENCY, up to twice that while hooks wait on receivers that set the pace."),
		metric.WithUnit("{slot}")); err != nil {
		m.slotsOpen, _ = fallback.Int64UpDownCounter("slots_open")
	}
	if m.lateness, err = meter.Float64Histogram("sundial.dispatcher.lateness",
		metric.WithDescription("Time from a hook's postAt to its first attempt's POST being sent."), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(latenessBuckets...)); err != nil {
		m.lateness, _ = fallback.Float64Histogram("lateness")
	}
	if m.deferrals, err = telemetry.Counter(meter, "sundial.dispatcher.deferrals",
		metric.WithDescription("Hooks deferred without a request: their host or project at its limit, or the delivery pool busy."),
		metric.WithUnit("{hook}")); err != nil {
		m.deferrals, _ = fallback.Int64Counter("deferrals")
	}
	return m
}

// outcomeAttr is the attribute a delivery's measurements carry.
func outcomeAttr(o eventv1.Outcome) metric.MeasurementOption {
	return metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", outcomeName(o))))
}

// slotsOpened counts delivery slots opened (n > 0) or closed (n < 0).
func (m *Metrics) slotsOpened(n int) {
	m.slotsOpen.Add(context.Background(), int64(n))
}

// recordDeferral counts a hook deferred.
func (m *Metrics) recordDeferral(ctx context.Context) {
	m.deferrals.Add(ctx, 1)
}

// start counts a delivery in flight; the function it returns records how
// it ended. A delivery cut short by shutdown has no outcome to count.
func (m *Metrics) start(ctx context.Context) func(context.Context, delivery.Result, error) {
	m.inFlight.Add(ctx, 1)
	return func(ctx context.Context, res delivery.Result, err error) {
		m.inFlight.Add(ctx, -1)
		if err != nil {
			return
		}
		outcome, ok := m.outcomes[res.Outcome]
		if !ok {
			outcome = outcomeAttr(res.Outcome)
		}
		count := outcome
		if f, ok := m.failures[res.Class]; ok && res.Outcome == eventv1.Outcome_OUTCOME_FAILURE {
			count = f
		}
		m.deliveries.Add(ctx, 1, count)
		m.duration.Record(ctx, res.Duration.Seconds(), outcome)
	}
}

// recordLateness records how late a first attempt's POST was sent. Only
// first attempts count: a retry is late by design. A negative value (this
// machine's clock behind the database's, which decides when a hook is due)
// is recorded as 0 rather than dropped, so the count stays the count of
// deliveries.
func (m *Metrics) recordLateness(ctx context.Context, sentAt, postAt time.Time) {
	if sentAt.IsZero() || postAt.IsZero() {
		return
	}
	m.lateness.Record(ctx, max(sentAt.Sub(postAt), 0).Seconds())
}
