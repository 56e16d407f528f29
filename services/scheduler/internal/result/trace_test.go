package result_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/telemetry"
	"github.com/sundial-run/sundial/services/scheduler/internal/claim"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/result"
	"github.com/sundial-run/sundial/testkit/natstest"
)

// The services install the W3C propagator in telemetry.Setup; the tests
// install the same one once, before any test runs.
func init() { otel.SetTextMapPropagator(propagation.TraceContext{}) }

// TestOneTraceFromClaimToAppliedResult follows one hook: the claim's span
// context travels in the DueHook's headers, a stand-in for the dispatcher
// continues it (the dispatcher's own test checks its side) and sends it
// back in the AttemptResult's headers, and applying the result continues it.
func TestOneTraceFromClaimToAppliedResult(t *testing.T) {
	t.Parallel()
	b := setup(t)
	recorder := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
	project := fixture.Project(t, b.q, domain, fixed30)
	hook := fixture.Insert(t, b.q, fixture.Hook{ProjectID: project, Domain: domain, Path: "/p?secret=1", DueIn: -time.Second})
	c, err := claim.New(b.pool, b.js, claim.Config{BatchSize: 10, Lease: time.Minute, PollInterval: time.Second, TracerProvider: tp}, b.log)
	require.NoError(t, err)
	n, err := c.ClaimOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)

	msgs := natstest.StreamMessages(t, b.js, event.StreamDue)
	require.Len(t, msgs, 1)
	dueCtx := telemetry.ExtractNATS(context.Background(), msgs[0].Header)
	deliverCtx, deliver := tp.Tracer("test").Start(dueCtx, "dispatcher.deliver")
	header := nats.Header{}
	telemetry.InjectNATS(deliverCtx, header)
	deliver.End()

	applier, err := result.New(b.pool, b.js, event.DefaultReplicas, b.log, lowJitter, telemetry.WithProviders(tp, nil))
	require.NoError(t, err)
	ctx := telemetry.ExtractNATS(context.Background(), header)
	batcher := runBatcher(t, applier, result.BatchConfig{MaxBatch: 1, InFlight: 1})
	require.NoError(t, batcher.Handle(ctx, resultsDelivery(t, header, resultFor(fixture.Get(t, b.q, hook.ID), eventv1.Outcome_OUTCOME_SUCCESS, 200, ""))))
	require.Equal(t, "completed", fixture.Get(t, b.q, hook.ID).Status)

	spans := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range recorder.Ended() {
		spans[s.SpanContext().SpanID()] = s
		byName[s.Name()] = s
		for _, kv := range s.Attributes() {
			require.NotContains(t, kv.Value.String(), "secret", "%s.%s", s.Name(), kv.Key)
		}
	}
	require.Equal(t, []string{"scheduler.apply_result", "dispatcher.deliver", "scheduler.publish_due", "scheduler.claim"},
		ancestry(spans, byName["scheduler.apply_result"]))
	claimSpan := byName["scheduler.claim"]
	for _, s := range spans {
		if s.Name() == "scheduler.apply_results" {
			continue
		}
		require.Equal(t, claimSpan.SpanContext().TraceID(), s.SpanContext().TraceID(), s.Name())
	}
	// The batch that applied the result (every result goes through one)
	// serves many traces: it starts its own and links the result's span.
	batch := byName["scheduler.apply_results"]
	require.NotNil(t, batch)
	require.Len(t, batch.Links(), 1)
	require.Equal(t, byName["scheduler.apply_result"].SpanContext().SpanID(), batch.Links()[0].SpanContext.SpanID())
}

// ancestry names s and its recorded ancestors, nearest first.
func ancestry(spans map[trace.SpanID]sdktrace.ReadOnlySpan, s sdktrace.ReadOnlySpan) []string {
	var names []string
	for s != nil {
		names = append(names, s.Name())
		s = spans[s.Parent().SpanID()]
	}
	return names
}
