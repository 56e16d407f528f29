package dispatch_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/telemetry"
	"github.com/sundial-run/sundial/services/dispatcher/internal/credential"
	"github.com/sundial-run/sundial/services/dispatcher/internal/dispatch"
	"github.com/sundial-run/sundial/services/dispatcher/internal/fixture"
	"github.com/sundial-run/sundial/services/dispatcher/internal/report"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

// The services install the W3C propagator in telemetry.Setup; the tests
// install the same one once, before any test runs.
func init() { otel.SetTextMapPropagator(propagation.TraceContext{}) }

func TestHandleTracesTheDeliveryAndRecordsLateness(t *testing.T) {
	t.Parallel()
	b := setup(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	recorder := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
	reader := sdkmetric.NewManualReader()
	h := dispatch.NewHandler(dispatch.Config{
		Credentials:    credential.NewCache(credential.NewStore(b.pool, secrettest.Keyring()), time.Minute, 100),
		Sender:         b.client,
		Results:        runReporter(t, sender(b.js, report.DefaultRetry)),
		HandBack:       bus.Retrying{Publisher: bus.NewPublisher(b.js)},
		Log:            slog.New(slog.NewTextHandler(io.Discard, nil)),
		Metrics:        dispatch.NewMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter(dispatch.MeterName)),
		TracerProvider: tp,
	})
	due := b.dueHook(t, fixture.Project{ActiveKey: "whsec_secret_one"})
	due.Attempt = 1
	due.PostAt = timestamppb.New(time.Now().Add(-time.Millisecond))

	// The scheduler's side: a claim span whose context travels in the
	// DueHook's headers, as bus.Publish and bus.Consume carry it.
	claimCtx, claim := tp.Tracer("test").Start(context.Background(), "scheduler.claim")
	header := nats.Header{}
	telemetry.InjectNATS(claimCtx, header)
	claim.End()
	ctx := telemetry.ExtractNATS(context.Background(), header)
	d := fixture.Due(t, due)
	for k, v := range header {
		d.Header[k] = v
	}
	require.NoError(t, h.Handle(ctx, d))

	spans := byName(recorder.Ended())
	deliver, post := spans["dispatcher.deliver"], spans["HTTP POST"]
	require.NotNil(t, deliver)
	require.NotNil(t, post)
	require.Equal(t, claim.SpanContext().SpanID(), deliver.Parent().SpanID())
	require.Equal(t, claim.SpanContext().TraceID(), deliver.SpanContext().TraceID())
	require.Equal(t, deliver.SpanContext().SpanID(), post.Parent().SpanID())
	require.Equal(t, trace.SpanKindClient, post.SpanKind())
	attrs := map[string]string{}
	for _, kv := range deliver.Attributes() {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	require.Equal(t, due.GetHookId(), attrs["hook.id"])
	require.Equal(t, "1", attrs["attempt"])
	require.Equal(t, "200", attrs["http.status_code"])
	require.Equal(t, "success", attrs["outcome"])
	for _, s := range recorder.Ended() {
		for _, kv := range s.Attributes() {
			v := kv.Value.String()
			require.NotContains(t, v, "whsec_", "%s.%s", s.Name(), kv.Key)
			require.NotContains(t, v, "y=1", "%s.%s", s.Name(), kv.Key)
			require.NotContains(t, v, "/hooks/x", "%s.%s", s.Name(), kv.Key)
		}
	}

	// The AttemptResult carries the deliver span's context to the scheduler.
	res := fixture.LastResult(t, b.js)
	require.NotNil(t, res)
	got := trace.SpanContextFromContext(telemetry.ExtractMap(context.Background(), res.GetTraceContext()))
	require.Equal(t, deliver.SpanContext().SpanID(), got.SpanID())
	require.Equal(t, deliver.SpanContext().TraceID(), got.TraceID())

	lateness := histogram(t, reader, "sundial.dispatcher.lateness")
	require.EqualValues(t, 1, lateness.Count)
	require.GreaterOrEqual(t, lateness.Sum, 0.0)
}

func byName(spans []sdktrace.ReadOnlySpan) map[string]sdktrace.ReadOnlySpan {
	m := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		m[s.Name()] = s
	}
	return m
}

func histogram(t *testing.T, reader *sdkmetric.ManualReader, name string) metricdata.HistogramDataPoint[float64] {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if data, ok := m.Data.(metricdata.Histogram[float64]); ok && strings.EqualFold(m.Name, name) {
				require.Len(t, data.DataPoints, 1)
				return data.DataPoints[0]
			}
		}
	}
	require.FailNow(t, "no histogram "+name)
	return metricdata.HistogramDataPoint[float64]{}
}

// reporter records what a dispatch.Handler reports through a batcher.
type reporter struct{ got chan *eventv1.AttemptResult }

func (r reporter) Report(_ context.Context, res *eventv1.AttemptResult) error {
	r.got <- res
	return nil
}

// reportingHandler is a handler whose results go to the reporter it
// returns, with its spans made by tp.
func (b bundle) reportingHandler(tp trace.TracerProvider, unsampledRecordsNothing bool) (*dispatch.Handler, reporter) {
	rep := reporter{got: make(chan *eventv1.AttemptResult, 1)}
	return dispatch.NewHandler(dispatch.Config{
		Credentials:             credential.NewCache(credential.NewStore(b.pool, secrettest.Keyring()), time.Minute, 100),
		Sender:                  b.client,
		Results:                 rep,
		HandBack:                bus.Retrying{Publisher: bus.NewPublisher(b.js)},
		Log:                     slog.New(slog.NewTextHandler(io.Discard, nil)),
		TracerProvider:          tp,
		UnsampledRecordsNothing: unsampledRecordsNothing,
	}), rep
}

func TestBatchedResultCarriesTheDeliverSpan(t *testing.T) {
	t.Parallel()
	b := setup(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	recorder := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
	h, rep := b.reportingHandler(tp, false)
	due := b.dueHook(t, fixture.Project{ActiveKey: "k"})
	require.NoError(t, h.Handle(context.Background(), fixture.Due(t, due)))

	res := <-rep.got
	require.Equal(t, due.GetHookId(), res.GetHookId())
	deliver := byName(recorder.Ended())["dispatcher.deliver"]
	require.NotNil(t, deliver)
	got := trace.SpanContextFromContext(telemetry.ExtractMap(context.Background(), res.GetTraceContext()))
	require.Equal(t, deliver.SpanContext().SpanID(), got.SpanID())
	require.Equal(t, deliver.SpanContext().TraceID(), got.TraceID())
	require.Nil(t, fixture.LastResult(t, b.js), "nothing published on its own")
}

// TestAnUnsampledDeliveryStartsNoSpan is the handler under a tracer that
// records nothing under an unsampled parent (telemetry.Setup without a
// trace exporter): it starts no span there, and its result carries the
// parent's trace context; under a sampled parent it records both spans.
func TestAnUnsampledDeliveryStartsNoSpan(t *testing.T) {
	t.Parallel()
	b := setup(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	recorder := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())),
		sdktrace.WithSpanProcessor(recorder))
	h, rep := b.reportingHandler(tp, true)
	project := fixture.Project{ActiveKey: "k"}
	handle := func(parent trace.SpanContext) trace.SpanContext {
		due := b.dueHook(t, project)
		ctx := trace.ContextWithRemoteSpanContext(context.Background(), parent)
		require.NoError(t, h.Handle(ctx, fixture.Due(t, due)))
		res := <-rep.got
		require.Equal(t, due.GetHookId(), res.GetHookId())
		return trace.SpanContextFromContext(telemetry.ExtractMap(context.Background(), res.GetTraceContext()))
	}
	parent := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, Remote: true,
	})

	got := handle(parent)
	require.Empty(t, recorder.Ended(), "no span under an unsampled parent")
	require.Equal(t, parent.TraceID(), got.TraceID(), "the result stays in the parent's trace")
	require.Equal(t, parent.SpanID(), got.SpanID())

	got = handle(parent.WithTraceFlags(trace.FlagsSampled))
	spans := byName(recorder.Ended())
	require.Contains(t, spans, "dispatcher.deliver")
	require.Contains(t, spans, "HTTP POST")
	require.Equal(t, spans["dispatcher.deliver"].SpanContext().SpanID(), got.SpanID())
	require.Equal(t, parent.TraceID(), got.TraceID())
}
