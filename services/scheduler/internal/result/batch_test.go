package result_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sundial-run/sundial/pkg/batch"
	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/telemetry"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/result"
	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

// handleAll hands the results to handle at once, as the consumer's
// handlers do, and returns each one's answer.
func handleAll(t *testing.T, handle bus.Handler, rs ...*eventv1.AttemptResult) []error {
	t.Helper()
	errs := make([]error, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		d := resultsDelivery(t, nil, r)
		wg.Go(func() {
			errs[i] = handle(context.Background(), d)
		})
	}
	wg.Wait()
	return errs
}

// exactBatch gathers exactly n results into a batch: its linger is far
// longer than the time the handlers take to arrive.
func exactBatch(n int) result.BatchConfig {
	return result.BatchConfig{MaxBatch: n, Linger: result.MaxLinger, InFlight: 1}
}

func TestBatchAppliesEveryKindInOneTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	success := b.leased(t, fixed30, time.Minute)
	failure := b.leased(t, fixed30, time.Minute)
	last := b.leased(t, noRetries, time.Minute)
	async := b.leased(t, fixed30, time.Minute)
	stale := b.leased(t, fixed30, time.Minute)
	staleResult := resultFor(stale, eventv1.Outcome_OUTCOME_SUCCESS, 200, "")
	staleResult.LeaseSeq-- // a result of an earlier delivery
	dup := b.leased(t, fixed30, time.Minute)
	dupResult := resultFor(dup, eventv1.Outcome_OUTCOME_SUCCESS, 200, "")

	batcher := runBatcher(t, b.applier, exactBatch(7))
	errs := handleAll(t, batcher.Handle,
		resultFor(success, eventv1.Outcome_OUTCOME_SUCCESS, 200, ""),
		resultFor(failure, eventv1.Outcome_OUTCOME_FAILURE, 503, "HTTP 503"),
		resultFor(last, eventv1.Outcome_OUTCOME_FAILURE, 500, "HTTP 500"),
		resultFor(async, eventv1.Outcome_OUTCOME_ASYNC, 202, ""),
		staleResult, dupResult, dupResult)
	for i, err := range errs {
		require.NoError(t, err, "result %d", i)
	}
	now := fixture.DBNow(t, b.q)

	row := fixture.Get(t, b.q, success.ID)
	require.Equal(t, "completed", row.Status)
	require.EqualValues(t, 1, row.Attempts)
	require.Nil(t, row.RunAt)
	require.Nil(t, row.LeaseExpiresAt)
	// now() is the transaction's start: one value means one transaction.
	txTime := row.UpdatedAt

	row = fixture.Get(t, b.q, failure.ID)
	require.Equal(t, "retry", row.Status)
	require.Equal(t, "HTTP 503", *row.FailureError)
	require.Equal(t, row.TryAt, row.RunAt)
	require.WithinDuration(t, now.Add(30*time.Second), *row.TryAt, 2*time.Second, "fixed 30 s, no jitter")
	require.Nil(t, row.LeaseExpiresAt)
	require.True(t, txTime.Equal(row.UpdatedAt))

	row = fixture.Get(t, b.q, last.ID)
	require.Equal(t, "failed", row.Status)
	require.Equal(t, "HTTP 500", *row.FailureError)
	require.Nil(t, row.RunAt)
	require.True(t, txTime.Equal(row.UpdatedAt))
	msgs := natstest.StreamMessages(t, b.js, event.StreamAlerts)
	require.Len(t, msgs, 1, "one hook.failed alert, after the commit")
	alert := fixture.Alert(t, msgs[0])
	require.Equal(t, last.ID.String(), alert.GetHookId())
	require.Equal(t, event.HookFailedAlertID(last.ID, last.LeaseSeq), alert.GetAlertId())
	require.True(t, txTime.Equal(alert.GetOccurredAt().AsTime()))

	row = fixture.Get(t, b.q, async.ID)
	require.Equal(t, "pending", row.Status)
	require.Nil(t, row.RunAt)
	require.NotNil(t, row.AsyncDeadline)
	require.True(t, txTime.Equal(row.UpdatedAt))
	attempts := fixture.Attempts(t, b.q, async.ID)
	require.Len(t, attempts, 1)
	require.Equal(t, "async", attempts[0].Outcome)
	require.Equal(t, "waiting", *attempts[0].AsyncState)

	require.Equal(t, stale, fixture.Get(t, b.q, stale.ID), "a stale result changes nothing")
	require.Empty(t, fixture.Attempts(t, b.q, stale.ID))

	row = fixture.Get(t, b.q, dup.ID)
	require.Equal(t, "completed", row.Status)
	require.True(t, txTime.Equal(row.UpdatedAt))
	require.Len(t, fixture.Attempts(t, b.q, dup.ID), 1, "a result twice in a batch applies once")

	for _, h := range []storetest.Hook{success, failure, last} {
		attempts := fixture.Attempts(t, b.q, h.ID)
		require.Len(t, attempts, 1)
		require.Equal(t, h.LeaseSeq, attempts[0].LeaseSeq)
	}
	require.Equal(t, "success", fixture.Attempts(t, b.q, success.ID)[0].Outcome)
	failed := fixture.Attempts(t, b.q, failure.ID)[0]
	require.Equal(t, "failure", failed.Outcome)
	require.EqualValues(t, 503, *failed.StatusCode)
	require.Equal(t, "HTTP 503", *failed.Error)
}

// Two different outcomes of one lease in a batch (two dispatchers that
// both delivered it): the first applies and the other is stale, across the
// two ways a batch takes its hooks (successes completed with the lease
// checked, the others locked first).
func TestTwoOutcomesOfOneLeaseInABatchApplyOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hooks := make([]storetest.Hook, 4)
	var rs []*eventv1.AttemptResult
	for i := range hooks {
		hooks[i] = b.leased(t, fixed30, time.Minute)
		rs = append(rs, resultFor(hooks[i], eventv1.Outcome_OUTCOME_SUCCESS, 200, ""),
			resultFor(hooks[i], eventv1.Outcome_OUTCOME_FAILURE, 503, "HTTP 503"))
	}
	batcher := runBatcher(t, b.applier, exactBatch(len(rs)))
	for i, err := range handleAll(t, batcher.Handle, rs...) {
		require.NoError(t, err, "result %d", i)
	}
	for _, h := range hooks {
		attempts := fixture.Attempts(t, b.q, h.ID)
		require.Len(t, attempts, 1, "one outcome of the lease applies")
		row := fixture.Get(t, b.q, h.ID)
		switch attempts[0].Outcome {
		case "success":
			require.Equal(t, "completed", row.Status)
		case "failure":
			require.Equal(t, "retry", row.Status)
		default:
			t.Fatalf("attempt outcome %q", attempts[0].Outcome)
		}
	}
}

// TestPoisonResultIsDroppedWhileTheOthersApply runs the real consumer: the
// database refuses one result of a batch (an attempt number below the
// hook's retry budget base violates a check), which must not keep the
// others from applying nor be redelivered for ever.
func TestPoisonResultIsDroppedWhileTheOthersApply(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.leased(t, fixed30, time.Minute)
	poison := b.leased(t, fixed30, time.Minute)
	n, err := b.q.SetAttemptsForTest(context.Background(), storetest.SetAttemptsForTestParams{ID: poison.ID, N: 5})
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	poison = fixture.Get(t, b.q, poison.ID)
	poisonResult := resultFor(poison, eventv1.Outcome_OUTCOME_SUCCESS, 200, "")
	poisonResult.Attempt = 1
	last := b.leased(t, fixed30, time.Minute)

	publish(t, b,
		resultFor(first, eventv1.Outcome_OUTCOME_SUCCESS, 200, ""),
		poisonResult,
		resultFor(last, eventv1.Outcome_OUTCOME_FAILURE, 503, "HTTP 503"))
	batcher := runBatcher(t, b.applier, exactBatch(3))
	outcomes := consume(t, b, batcher, 3)
	slices.Sort(outcomes)
	require.Equal(t, []bus.Outcome{bus.OutcomeAck, bus.OutcomeAck, bus.OutcomeDrop}, outcomes)

	require.Equal(t, "completed", fixture.Get(t, b.q, first.ID).Status)
	require.Equal(t, "retry", fixture.Get(t, b.q, last.ID).Status)
	require.Equal(t, poison, fixture.Get(t, b.q, poison.ID), "the refused result changed nothing")
	require.Empty(t, fixture.Attempts(t, b.q, poison.ID))
}

// consume runs the scheduler's result consumer with batcher until n
// messages are settled, and returns their outcomes.
func consume(t *testing.T, b bundle, batcher *result.Batcher, n int) []bus.Outcome {
	t.Helper()
	settled := make(chan bus.Outcome, n)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = bus.Consume(ctx, b.js, event.SchedulerConsumer(event.DefaultReplicas), batcher.Handle, bus.ConsumeOptions{
			Concurrency: n, Logger: b.log, Settled: func(o bus.Outcome) { settled <- o },
		})
	}()
	defer func() { cancel(); <-done }()
	var outcomes []bus.Outcome
	for range n {
		select {
		case o := <-settled:
			outcomes = append(outcomes, o)
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d results settled", len(outcomes), n)
		}
	}
	return outcomes
}

// TestConcurrentBatchesOverOverlappingHooks gives every result to two
// batchers at once, in opposite orders and in batches that overlap: each
// hook is applied exactly once, and no batch fails (a deadlock would fail
// one).
func TestConcurrentBatchesOverOverlappingHooks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reader := sdkmetric.NewManualReader()
	applier, err := result.New(b.pool, b.js, event.DefaultReplicas, b.log, lowJitter,
		telemetry.WithProviders(nil, sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	require.NoError(t, err)
	project := fixture.Project(t, b.q, domain, fixed30)
	const hooks = 120
	for range hooks {
		fixture.Insert(t, b.q, fixture.Hook{ProjectID: project, Domain: domain, DueIn: -time.Second})
	}
	claimer := b.claimer(t, time.Minute)
	for claimed := 0; claimed < hooks; {
		n, err := claimer.ClaimOnce(context.Background())
		require.NoError(t, err)
		require.Positive(t, n)
		claimed += n
	}
	var results []*eventv1.AttemptResult
	for _, msg := range natstest.StreamMessages(t, b.js, event.StreamDue) {
		due := fixture.DueHook(t, msg)
		id := uuid.MustParse(due.GetHookId())
		results = append(results, resultFor(fixture.Get(t, b.q, id), eventv1.Outcome_OUTCOME_SUCCESS, 200, ""))
	}
	slices.SortFunc(results, func(x, y *eventv1.AttemptResult) int { return compareIDs(x.GetHookId(), y.GetHookId()) })
	reversed := slices.Clone(results)
	slices.Reverse(reversed)

	// The second takes only the results already waiting (no linger).
	one := runBatcher(t, applier, result.BatchConfig{MaxBatch: 25, Linger: 5 * time.Millisecond, InFlight: 3})
	two := runBatcher(t, applier, result.BatchConfig{MaxBatch: 25, Linger: 0, InFlight: 3})
	var errsOne, errsTwo []error
	var wg sync.WaitGroup
	wg.Go(func() { errsOne = handleAll(t, one.Handle, results...) })
	wg.Go(func() { errsTwo = handleAll(t, two.Handle, reversed...) })
	wg.Wait()
	for i := range results {
		require.NoError(t, errsOne[i])
		require.NoError(t, errsTwo[i])
	}
	for _, r := range results {
		id := uuid.MustParse(r.GetHookId())
		require.Equal(t, "completed", fixture.Get(t, b.q, id).Status)
		require.Len(t, fixture.Attempts(t, b.q, id), 1)
	}
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	require.EqualValues(t, hooks, counterSum(rm, "sundial.scheduler.results_applied"), "each hook applied once")
	require.EqualValues(t, hooks, counterSum(rm, "sundial.scheduler.results_stale"), "its second result stale")
}

func compareIDs(x, y string) int {
	a, b := uuid.MustParse(x), uuid.MustParse(y)
	return slices.Compare(a[:], b[:])
}

func counterSum(rm metricdata.ResourceMetrics, name string) int64 {
	var total int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == name {
				for _, dp := range sum.DataPoints {
					total += dp.Value
				}
			}
		}
	}
	return total
}

// TestBatchThatCannotReachTheDatabaseFailsEveryResult runs the real
// consumer: a transient failure is every handler's error, so the bus
// redelivers each message (none is dropped).
func TestBatchThatCannotReachTheDatabaseFailsEveryResult(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hook := b.leased(t, fixed30, time.Minute)
	pool, _ := pgtest.NewPool(t)
	applier, err := result.New(pool, b.js, event.DefaultReplicas, b.log, lowJitter)
	require.NoError(t, err)
	pool.Close()
	other := resultFor(hook, eventv1.Outcome_OUTCOME_FAILURE, 500, "HTTP 500")
	other.HookId = uuid.Must(uuid.NewV7()).String()
	publish(t, b, resultFor(hook, eventv1.Outcome_OUTCOME_SUCCESS, 200, ""), other)
	outcomes := consume(t, b, runBatcher(t, applier, exactBatch(2)), 2)
	require.Equal(t, []bus.Outcome{bus.OutcomeRetry, bus.OutcomeRetry}, outcomes)
	require.Equal(t, "pending", fixture.Get(t, b.q, hook.ID).Status)
}

// publish puts results on the results stream, each in an AttemptResults
// message of its own.
func publish(t *testing.T, b bundle, rs ...*eventv1.AttemptResult) {
	t.Helper()
	pub := bus.NewPublisher(b.js)
	for _, r := range rs {
		require.NoError(t, pub.Publish(context.Background(), bus.AttemptResults([]*eventv1.AttemptResult{r})))
	}
}

// TestStoppedBatcherHandsResultsBack: once Run has returned, Handle
// answers at once with an error, so the bus hands the message back.
func TestStoppedBatcherHandsResultsBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	batcher, err := b.applier.NewBatcher(result.BatchConfig{MaxBatch: 10, Linger: time.Millisecond, InFlight: 1})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	batcher.Run(ctx) // returns: its context is done
	hook := b.leased(t, fixed30, time.Minute)
	errs := handleAll(t, batcher.Handle, resultFor(hook, eventv1.Outcome_OUTCOME_SUCCESS, 200, ""))
	require.ErrorIs(t, errs[0], batch.ErrStopped)
	require.Equal(t, "pending", fixture.Get(t, b.q, hook.ID).Status)
}

// TestBatchSpanLinksEachResultsSpan: each result keeps its
// scheduler.apply_result span in the delivery's trace; the batch that
// applied it has its own span, linked to each.
func TestBatchSpanLinksEachResultsSpan(t *testing.T) {
	t.Parallel()
	b := setup(t)
	applier, tp, recorder := b.tracedApplier(t)
	batcher := runBatcher(t, applier, exactBatch(2))
	var rs []*eventv1.AttemptResult
	for range 2 {
		rs = append(rs, resultFor(b.leased(t, fixed30, time.Minute), eventv1.Outcome_OUTCOME_SUCCESS, 200, ""))
	}
	deliverCtx, deliver := tp.Tracer("test").Start(context.Background(), "dispatcher.deliver")
	header := nats.Header{}
	telemetry.InjectNATS(deliverCtx, header)
	deliver.End()
	errs := make([]error, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		d := resultsDelivery(t, header, r)
		wg.Go(func() {
			ctx := telemetry.ExtractNATS(context.Background(), header)
			errs[i] = batcher.Handle(ctx, d)
		})
	}
	wg.Wait()
	require.NoError(t, firstErr(errs))

	var applies []sdktrace.ReadOnlySpan
	var batches []sdktrace.ReadOnlySpan
	for _, s := range recorder.Ended() {
		switch s.Name() {
		case "scheduler.apply_result":
			applies = append(applies, s)
		case "scheduler.apply_results":
			batches = append(batches, s)
		}
	}
	require.Len(t, applies, 2)
	require.Len(t, batches, 1)
	var linked []string
	for _, l := range batches[0].Links() {
		linked = append(linked, l.SpanContext.SpanID().String())
	}
	for _, s := range applies {
		require.Equal(t, deliver.SpanContext().SpanID(), s.Parent().SpanID(), "a child of the delivery")
		require.Equal(t, deliver.SpanContext().TraceID(), s.SpanContext().TraceID())
		require.Contains(t, linked, s.SpanContext().SpanID().String())
	}
}

// TestUnsampledResultsStartNoSpan: under a tracer that records nothing
// below an unsampled parent (telemetry.Setup without a trace exporter),
// neither a result nor its batch starts a span, and the result applies.
func TestUnsampledResultsStartNoSpan(t *testing.T) {
	t.Parallel()
	b := setup(t)
	recorder := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())),
		sdktrace.WithSpanProcessor(recorder))
	// A span that records nothing never reaches the recorder: the starts
	// are counted at the tracer.
	starts := &atomic.Int64{}
	applier, err := result.New(b.pool, b.js, event.DefaultReplicas, b.log, lowJitter, telemetry.Using(telemetry.Providers{
		Tracer: countingProvider{TracerProvider: tp, starts: starts}, UnsampledRecordsNothing: true, Meter: sdkmetric.NewMeterProvider(),
	}))
	require.NoError(t, err)
	batcher := runBatcher(t, applier, exactBatch(1))
	hook := b.leased(t, fixed30, time.Minute)
	deliverCtx, deliver := tp.Tracer("test").Start(context.Background(), "dispatcher.deliver")
	require.False(t, deliver.SpanContext().IsSampled())
	header := nats.Header{}
	telemetry.InjectNATS(deliverCtx, header)
	ctx := telemetry.ExtractNATS(context.Background(), header)
	require.NoError(t, batcher.Handle(ctx, resultsDelivery(t, header, resultFor(hook, eventv1.Outcome_OUTCOME_SUCCESS, 200, ""))))
	require.Equal(t, "completed", fixture.Get(t, b.q, hook.ID).Status)
	require.Zero(t, starts.Load(), "spans started for an unsampled result")

	// The same result under a sampled parent is traced as usual.
	sampled := trace.ContextWithRemoteSpanContext(context.Background(), deliver.SpanContext().WithTraceFlags(trace.FlagsSampled))
	hook = b.leased(t, fixed30, time.Minute)
	require.NoError(t, batcher.Handle(sampled, resultsDelivery(t, nil, resultFor(hook, eventv1.Outcome_OUTCOME_SUCCESS, 200, ""))))
	var names []string
	for _, s := range recorder.Ended() {
		names = append(names, s.Name())
	}
	require.Equal(t, []string{"scheduler.apply_result"}, names,
		"only the sampled result's span: the batch's root is never sampled")
}

// countingProvider counts the spans its tracers start.
type countingProvider struct {
	trace.TracerProvider
	starts *atomic.Int64
}

func (p countingProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return countingTracer{Tracer: p.TracerProvider.Tracer(name, opts...), starts: p.starts}
}

type countingTracer struct {
	trace.Tracer
	starts *atomic.Int64
}

func (t countingTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	t.starts.Add(1)
	return t.Tracer.Start(ctx, name, opts...)
}

func firstErr(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// TestStoppingMidBatchAnswersEveryHandler stops a batcher while results
// are arriving: Run returns, and every handler gets an answer (a result
// reported applied is applied; the others are handed back by the bus).
func TestStoppingMidBatchAnswersEveryHandler(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var rs []*eventv1.AttemptResult
	for range 20 {
		rs = append(rs, resultFor(b.leased(t, fixed30, time.Minute), eventv1.Outcome_OUTCOME_SUCCESS, 200, ""))
	}
	batcher, err := b.applier.NewBatcher(result.BatchConfig{MaxBatch: 3, Linger: time.Millisecond, InFlight: 2})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); batcher.Run(ctx) }()

	answered := make(chan struct{})
	var errs []error
	go func() { defer close(answered); errs = handleAll(t, batcher.Handle, rs...) }()
	cancel()
	for name, ch := range map[string]chan struct{}{"Run": stopped, "every handler": answered} {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not return after the batcher was stopped", name)
		}
	}
	for i, err := range errs {
		if err == nil {
			require.Equal(t, "completed", fixture.Get(t, b.q, uuid.MustParse(rs[i].GetHookId())).Status)
		}
	}
}

// tracedApplier returns an Applier on the bundle's pool and streams whose
// spans, like those of the returned provider, go to the returned recorder.
func (b bundle) tracedApplier(t *testing.T) (*result.Applier, *sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	t.Helper()
	recorder := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
	applier, err := result.New(b.pool, b.js, event.DefaultReplicas, b.log, lowJitter, telemetry.WithProviders(tp, nil))
	require.NoError(t, err)
	return applier, tp, recorder
}
