package claim

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/scheduler/internal/batchratio"
	"github.com/sundial-run/sundial/testkit/natstest"
)

// withStreams starts a NATS server with Sundial's streams and connects.
func withStreams(t *testing.T) jetstream.JetStream {
	t.Helper()
	_, js := natstest.Start(t, natstest.Options{}).Connect(t)
	require.NoError(t, event.EnsureStreams(t.Context(), js, event.DefaultReplicas))
	return js
}

func TestAdmissionCountsReservationsUntilReleased(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	js := withStreams(t)
	a := &admission{js: js, limit: 5}

	// Claims running side by side share the room: the second gets what
	// the first left, the third nothing.
	require.Equal(t, 3, a.reserve(ctx, 3))
	require.Equal(t, 2, a.reserve(ctx, 3))
	require.Zero(t, a.reserve(ctx, 3))
	// Ids a claim did not get back give their room back.
	a.release(2)
	require.Equal(t, 2, a.reserve(ctx, 3))
}

func TestAdmissionAdmitsWhenTheQueuesCannotBeRead(t *testing.T) {
	t.Parallel()
	// No streams: the queues cannot be measured, and holding claims back
	// would only add lateness (the leases still protect the hooks).
	_, js := natstest.Start(t, natstest.Options{}).Connect(t)
	a := &admission{js: js, limit: 1}
	require.Equal(t, 10, a.reserve(t.Context(), 10))
	require.Equal(t, 10, a.reserve(t.Context(), 10))
}

func TestAdmissionWithoutBoundAdmitsAll(t *testing.T) {
	t.Parallel()
	a := &admission{}
	require.Equal(t, 7, a.reserve(t.Context(), 7))
	a.release(7)
}

func TestAdmissionCountsTheHooksOfDueBatches(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	js := withStreams(t)
	a := &admission{js: js, limit: 100}
	// Two messages in the due queue, each a batch of 10 hooks, as this
	// scheduler published them.
	publishDueBatches(t, js, a, 2)

	n, err := a.measure(ctx)
	require.NoError(t, err)
	require.Equal(t, 20, n, "two messages of the due queue carry 20 hooks")
	require.Equal(t, 80, a.reserve(ctx, 100))
}

func TestAdmissionCountsTheResultsOfResultBatches(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	js := withStreams(t)
	perResult := &batchratio.Ratio{}
	a := &admission{js: js, limit: 100, perResult: perResult}
	// Three messages in the results queue, each a batch of 25 results,
	// as the result batcher decoded them.
	var msgs []bus.Message
	for m := range 3 {
		results := make([]*eventv1.AttemptResult, 25)
		for i := range results {
			results[i] = &eventv1.AttemptResult{HookId: fmt.Sprint("h", m, "-", i), LeaseSeq: 1}
		}
		msgs = append(msgs, bus.AttemptResults(results))
	}
	_, err := bus.NewPublisher(js).PublishAll(ctx, msgs)
	require.NoError(t, err)
	perResult.Count(3, 75)

	n, err := a.measure(ctx)
	require.NoError(t, err)
	require.Equal(t, 75, n, "three messages of the results queue carry 75 results")
	require.Equal(t, 25, a.reserve(ctx, 100))
}

func TestAdmissionCountsOnlyTheDueMessagesNoDispatcherTook(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	js := withStreams(t)
	a := &admission{js: js, limit: 100}
	publishDueBatches(t, js, a, 3)
	c := event.DispatcherConsumer(1)
	consumer, err := js.CreateOrUpdateConsumer(ctx, c.Stream, c.Config)
	require.NoError(t, err)

	// A dispatcher holds one message, unacknowledged while a slow hook
	// of it is answered: its ten hooks are being delivered, not waiting.
	batch, err := consumer.FetchNoWait(1)
	require.NoError(t, err)
	taken := 0
	for range batch.Messages() {
		taken++
	}
	require.Equal(t, 1, taken)

	n, err := a.measure(ctx)
	require.NoError(t, err)
	require.Equal(t, 20, n, "the two messages no dispatcher took carry 20 hooks")
}

// publishDueBatches publishes n DueHooks messages of 10 hooks each, as a's
// scheduler would, counting them in a's ratio of hooks to messages.
func publishDueBatches(t *testing.T, js jetstream.JetStream, a *admission, n int) {
	t.Helper()
	b := bus.DueBatch{Max: 10}
	var msgs []bus.Message
	for i := range 10 * n {
		if b.Add(&eventv1.DueHook{HookId: fmt.Sprint("h", i), LeaseSeq: 1, Data: []byte(`{}`)}) {
			msgs = append(msgs, b.Take())
		}
	}
	require.Len(t, msgs, n)
	a.countDue(msgs)
	_, err := bus.NewPublisher(js).PublishAll(t.Context(), msgs)
	require.NoError(t, err)
}
