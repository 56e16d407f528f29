package result_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/scheduler/internal/batchratio"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/result"
)

// batchDelivery is an AttemptResults message as a dispatcher that batches
// publishes it.
func batchDelivery(t *testing.T, delivered uint64, rs ...*eventv1.AttemptResult) bus.Delivery {
	t.Helper()
	data, err := proto.Marshal(&eventv1.AttemptResults{Results: rs})
	require.NoError(t, err)
	return bus.Delivery{Subject: event.SubjectResult, Data: data, NumDelivered: delivered,
		Header: nats.Header{event.TypeHeader: []string{event.TypeAttemptResults}}}
}

func TestBatchMessageAppliesEveryResult(t *testing.T) {
	t.Parallel()
	b := setup(t)
	success := b.leased(t, fixed30, time.Minute)
	failure := b.leased(t, fixed30, time.Minute)
	d := batchDelivery(t, 1,
		resultFor(success, eventv1.Outcome_OUTCOME_SUCCESS, 200, ""),
		resultFor(failure, eventv1.Outcome_OUTCOME_FAILURE, 503, "HTTP 503"))
	require.NoError(t, b.batcher.Handle(context.Background(), d))

	require.Equal(t, "completed", fixture.Get(t, b.q, success.ID).Status)
	require.Len(t, fixture.Attempts(t, b.q, success.ID), 1)
	row := fixture.Get(t, b.q, failure.ID)
	require.Equal(t, "retry", row.Status)
	require.Equal(t, "HTTP 503", *row.FailureError)
	require.Len(t, fixture.Attempts(t, b.q, failure.ID), 1)
}

func TestBatchMessageCountsItsResults(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ratio := &batchratio.Ratio{}
	batcher := runBatcher(t, b.applier, result.BatchConfig{MaxBatch: 10, Linger: time.Millisecond, InFlight: 1, Ratio: ratio})
	var rs []*eventv1.AttemptResult
	for range 3 {
		rs = append(rs, resultFor(b.leased(t, fixed30, time.Minute), eventv1.Outcome_OUTCOME_SUCCESS, 200, ""))
	}
	require.NoError(t, batcher.Handle(context.Background(), batchDelivery(t, 1, rs...)))
	// The claimer's bound on work in flight reads two such messages
	// waiting in the results queue as six results.
	require.Equal(t, 6, ratio.ItemsIn(2))
}

// A message waits for room to be decoded while messages of MaxBytes in all
// wait for their batches; one larger than the room takes all of it.
func TestBatchMessageWaitsForRoomToBeDecoded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hook := b.leased(t, fixed30, time.Minute)
	d := batchDelivery(t, 1, resultFor(hook, eventv1.Outcome_OUTCOME_SUCCESS, 200, ""))
	batcher := runBatcher(t, b.applier, result.BatchConfig{MaxBatch: 10, Linger: time.Millisecond, InFlight: 1, MaxBytes: len(d.Data) / 2})

	release := batcher.TakeRoom()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := batcher.Handle(ctx, d)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "room", "the message waited for room, and gave up with its context")
	require.Equal(t, "pending", fixture.Get(t, b.q, hook.ID).Status, "nothing applied")

	release()
	require.NoError(t, batcher.Handle(context.Background(), d), "a message larger than the room takes all of it")
	require.Equal(t, "completed", fixture.Get(t, b.q, hook.ID).Status)
}

func TestBatchMessageRedeliveredAppliesOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	failure := b.leased(t, fixed30, time.Minute)
	success := b.leased(t, fixed30, time.Minute)
	rs := []*eventv1.AttemptResult{
		resultFor(failure, eventv1.Outcome_OUTCOME_FAILURE, 500, "HTTP 500"),
		resultFor(success, eventv1.Outcome_OUTCOME_SUCCESS, 200, ""),
	}
	require.NoError(t, b.batcher.Handle(context.Background(), batchDelivery(t, 1, rs...)))
	afterFirst := fixture.Get(t, b.q, failure.ID)
	completed := fixture.Get(t, b.q, success.ID)

	// JetStream hands the message back (the ack was lost): nothing moves.
	require.NoError(t, b.batcher.Handle(context.Background(), batchDelivery(t, 2, rs...)))
	require.Equal(t, afterFirst, fixture.Get(t, b.q, failure.ID), "the retry is scheduled once")
	require.Equal(t, completed, fixture.Get(t, b.q, success.ID))
	require.Len(t, fixture.Attempts(t, b.q, failure.ID), 1)
	require.Len(t, fixture.Attempts(t, b.q, success.ID), 1)
}

// A result alone, not in an AttemptResults (no type, or the single type a
// publisher never sends), is refused as unreadable and applies nothing: the
// hook keeps its lease, which re-drives it.
func TestResultMessageOfAnotherTypeIsDropped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hook := b.leased(t, fixed30, time.Minute)
	alone, err := proto.Marshal(resultFor(hook, eventv1.Outcome_OUTCOME_SUCCESS, 200, ""))
	require.NoError(t, err)
	for _, header := range []nats.Header{
		{},
		{event.TypeHeader: []string{"sundial.event.v1.AttemptResult"}},
		{event.TypeHeader: []string{"sundial.event.v1.Nothing"}},
	} {
		err := b.batcher.Handle(context.Background(), bus.Delivery{Subject: event.SubjectResult, Data: alone,
			NumDelivered: 1, Header: header})
		require.True(t, bus.IsDrop(err), "%v: got %v", header, err)
		require.ErrorIs(t, err, event.ErrUnknownType)
	}
	// A batch without its type is refused all the same.
	d := batchDelivery(t, 1, resultFor(hook, eventv1.Outcome_OUTCOME_SUCCESS, 200, ""))
	d.Header = nats.Header{}
	require.True(t, bus.IsDrop(b.batcher.Handle(context.Background(), d)))
	require.Equal(t, "pending", fixture.Get(t, b.q, hook.ID).Status)
	require.Empty(t, fixture.Attempts(t, b.q, hook.ID))
}

func TestBatchMessageDropsOnlyItsMalformedResult(t *testing.T) {
	t.Parallel()
	b := setup(t)
	good := b.leased(t, fixed30, time.Minute)
	bad := resultFor(good, eventv1.Outcome_OUTCOME_SUCCESS, 200, "")
	bad.HookId = "not-a-uuid"
	require.NoError(t, b.batcher.Handle(context.Background(),
		batchDelivery(t, 1, bad, resultFor(good, eventv1.Outcome_OUTCOME_SUCCESS, 200, ""))))
	require.Equal(t, "completed", fixture.Get(t, b.q, good.ID).Status)
}

func TestBatchMessageResultsKeepTheirTraces(t *testing.T) {
	t.Parallel()
	b := setup(t)
	applier, _, recorder := b.tracedApplier(t)
	batcher := runBatcher(t, applier, result.BatchConfig{MaxBatch: 10, Linger: time.Millisecond, InFlight: 1})
	first, second := b.leased(t, fixed30, time.Minute), b.leased(t, fixed30, time.Minute)
	rs := []*eventv1.AttemptResult{
		resultFor(first, eventv1.Outcome_OUTCOME_SUCCESS, 200, ""),
		resultFor(second, eventv1.Outcome_OUTCOME_SUCCESS, 200, ""),
	}
	want := map[string]trace.TraceID{}
	for i, r := range rs {
		id := trace.TraceID{byte(i + 1), 2, 3}
		r.TraceContext = map[string]string{"traceparent": "00-" + id.String() + "-0102030405060708-01"}
		want[r.GetHookId()] = id
	}
	require.NoError(t, batcher.Handle(context.Background(), batchDelivery(t, 1, rs...)))

	got := map[string]trace.TraceID{}
	for _, s := range recorder.Ended() {
		if s.Name() != "scheduler.apply_result" {
			continue
		}
		for _, kv := range s.Attributes() {
			if kv.Key == "hook.id" {
				got[kv.Value.AsString()] = s.SpanContext().TraceID()
			}
		}
	}
	require.Equal(t, want, got, "each result's span continues its own delivery's trace")
}
