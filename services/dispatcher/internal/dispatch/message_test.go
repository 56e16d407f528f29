package dispatch_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/dispatcher/internal/dispatch"
	"github.com/sundial-run/sundial/services/dispatcher/internal/fixture"
	"github.com/sundial-run/sundial/services/dispatcher/internal/hostlimit"
	"github.com/sundial-run/sundial/testkit/natstest"
)

// batch returns n DueHooks of one project and the delivery of a DueHooks
// message carrying them.
func (b bundle) batch(t *testing.T, n int) ([]*eventv1.DueHook, bus.Delivery) {
	t.Helper()
	first := b.dueHook(t, fixture.Project{ActiveKey: "k"})
	hooks := []*eventv1.DueHook{first}
	for range n - 1 {
		due := proto.Clone(first).(*eventv1.DueHook)
		due.HookId = uuid.NewString()
		hooks = append(hooks, due)
	}
	return hooks, fixture.Due(t, hooks...)
}

// results returns the results on the results stream by hook id; each came
// in an AttemptResults message.
func results(t *testing.T, b bundle) map[string]*eventv1.AttemptResult {
	t.Helper()
	out := map[string]*eventv1.AttemptResult{}
	for _, m := range natstest.StreamMessages(t, b.js, event.StreamResults) {
		require.Equal(t, event.TypeAttemptResults, m.Header.Get(event.TypeHeader))
		var rs eventv1.AttemptResults
		require.NoError(t, proto.Unmarshal(m.Data, &rs))
		for _, r := range rs.GetResults() {
			out[r.GetHookId()] = r
		}
	}
	return out
}

// handedBack returns the hooks of the one message the handler published
// back on the due subject, a DueHooks (event.DecodeDue).
func handedBack(t *testing.T, b bundle) []*eventv1.DueHook {
	t.Helper()
	msgs := natstest.StreamMessages(t, b.js, event.StreamDue)
	require.Len(t, msgs, 1)
	hooks, err := event.DecodeDue(msgs[0].Header.Get(event.TypeHeader), msgs[0].Data)
	require.NoError(t, err)
	return hooks
}

func TestHandleDeliversEveryHookOfABatch(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	hooks, d := b.batch(t, 3)
	require.NoError(t, b.handler.Handle(context.Background(), d))

	got := map[string]bool{}
	for _, req := range b.receiver.Received() {
		got[req.Header.Get("Sundial-Id")] = true
	}
	res := results(t, b)
	for _, due := range hooks {
		require.True(t, got[due.GetHookId()], "hook %s delivered", due.GetHookId())
		require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, res[due.GetHookId()].GetOutcome())
		require.Equal(t, due.GetLeaseSeq(), res[due.GetHookId()].GetLeaseSeq())
	}
	require.Len(t, b.receiver.Received(), 3)
	require.Empty(t, natstest.StreamMessages(t, b.js, event.StreamDue), "nothing handed back")
}

// busyHostHandler returns a handler allowing one delivery at a time per
// host, whose one slot on url's host is taken until the test ends.
func (b bundle) busyHostHandler(t *testing.T, url string) *dispatch.Handler {
	t.Helper()
	hosts := hostlimit.New(hostlimit.Config{Ceiling: 1})
	h := b.limitedHandler(t, hosts)
	t.Cleanup(h.Close)
	// Another project's delivery holds the host's only slot.
	busy, _ := hosts.Acquire(context.Background(), hostlimit.Key{Project: "another", Host: hostlimit.Host(url)}, 0, 0)
	require.NotNil(t, busy)
	t.Cleanup(func() { busy.Done(hostlimit.Sample{}) })
	return h
}

// requireDeferred checks that r defers due: same attempt and lease,
// nothing sent, a delay within the bounds.
func requireDeferred(t *testing.T, due *eventv1.DueHook, r *eventv1.AttemptResult) {
	t.Helper()
	require.NotNil(t, r, "no result for hook %s", due.GetHookId())
	require.Equal(t, eventv1.Outcome_OUTCOME_DEFERRED, r.GetOutcome())
	require.Equal(t, due.GetAttempt(), r.GetAttempt())
	require.Equal(t, due.GetLeaseSeq(), r.GetLeaseSeq())
	require.Equal(t, due.GetProjectId(), r.GetProjectId())
	require.Zero(t, r.GetStatusCode())
	require.GreaterOrEqual(t, r.GetDeferFor().AsDuration(), event.MinDefer)
	require.LessOrEqual(t, r.GetDeferFor().AsDuration(), event.MaxDefer)
}

// TestHandleDefersTheHooksOfABatchWhoseHostIsBusy: two hooks of a batch
// find their host busy, the third is delivered elsewhere.
func TestHandleDefersTheHooksOfABatchWhoseHostIsBusy(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	h := b.busyHostHandler(t, b.receiver.URL)
	hooks, _ := b.batch(t, 3)
	other := fixture.StartReceiver(t, nil)
	hooks[2].Url = other.URL + "/hooks/x?y=1"
	d := fixture.Due(t, hooks...)

	// The batch is done with; its busy host's hooks go back to the
	// scheduler as deferred results, through the results stream like
	// every result, not back to JetStream.
	require.NoError(t, h.Handle(context.Background(), d))
	require.Empty(t, b.receiver.Received())
	require.Len(t, other.Received(), 1)
	res := results(t, b)
	require.Len(t, res, 3)
	require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, res[hooks[2].GetHookId()].GetOutcome())
	requireDeferred(t, hooks[0], res[hooks[0].GetHookId()])
	requireDeferred(t, hooks[1], res[hooks[1].GetHookId()])
	require.Empty(t, natstest.StreamMessages(t, b.js, event.StreamDue), "nothing handed back")
}

// TestHandleDefersABatchWhoseHooksAllFindTheirHostBusy: with nothing
// delivered, the message is still done with.
func TestHandleDefersABatchWhoseHooksAllFindTheirHostBusy(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	h := b.busyHostHandler(t, b.receiver.URL)
	hooks, d := b.batch(t, 2)

	require.NoError(t, h.Handle(context.Background(), d))
	require.Empty(t, b.receiver.Received())
	res := results(t, b)
	require.Len(t, res, 2)
	for _, due := range hooks {
		requireDeferred(t, due, res[due.GetHookId()])
	}
	require.Empty(t, natstest.StreamMessages(t, b.js, event.StreamDue), "nothing published again")
}

// TestHandleDefersHooksWhileTheDeliveryPoolStaysBusy: with the handler's
// one delivery slot and its slow room held by a receiver that does not
// answer, a batch's hooks are deferred once the pool has stayed busy for
// its bound, not held until their leases expire.
func TestHandleDefersHooksWhileTheDeliveryPoolStaysBusy(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	slow, releaseSlow := b.hangingReceiver(t)
	h := b.handlerWith(t, dispatch.Config{Concurrency: 1, DeliveryTimeout: 10 * time.Second})
	t.Cleanup(h.Close)
	t.Cleanup(releaseSlow)

	// One blocker at a time: each waits for the slot until the one before
	// moves to the slow room (slowAfter), never the pool's bound.
	blockers := 1 + dispatch.SlowRoom(1)
	handled := make(chan error, blockers)
	for i := range blockers {
		blocker := b.dueHook(t, fixture.Project{ActiveKey: "k"})
		blocker.Url = slow.URL + "/slow"
		go func() { handled <- b.handle(t, h, blocker) }()
		slow.WaitFor(t, i+1)
	}

	hooks, d := b.batch(t, 3)
	require.NoError(t, h.Handle(context.Background(), d))
	require.Empty(t, b.receiver.Received())
	res := results(t, b)
	require.Len(t, res, 3)
	for _, due := range hooks {
		requireDeferred(t, due, res[due.GetHookId()])
	}
	releaseSlow()
	for range blockers {
		require.NoError(t, <-handled)
	}
}

// TestASlowDeliveryGivesItsSlotToTheNextHooks: a delivery waiting on a
// receiver that does not answer moves to the slow room, and the hooks of
// the next message are delivered on its slot meanwhile, not deferred.
func TestASlowDeliveryGivesItsSlotToTheNextHooks(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	slow, releaseSlow := b.hangingReceiver(t)
	h := b.handlerWith(t, dispatch.Config{Concurrency: 1, DeliveryTimeout: 10 * time.Second})
	t.Cleanup(h.Close)
	t.Cleanup(releaseSlow)

	blocker := b.dueHook(t, fixture.Project{ActiveKey: "k"})
	blocker.Url = slow.URL + "/slow"
	first := make(chan error, 1)
	go func() { first <- b.handle(t, h, blocker) }()
	slow.WaitFor(t, 1)

	_, d := b.batch(t, 3)
	require.NoError(t, h.Handle(context.Background(), d))
	require.Len(t, b.receiver.Received(), 3, "delivered while the slow delivery hangs")
	releaseSlow()
	require.NoError(t, <-first)
}

// hangingReceiver is a receiver that answers 200 only once release is
// called (or its request ends); release may be called any number of times.
func (b *bundle) hangingReceiver(t *testing.T) (*fixture.Receiver, func()) {
	t.Helper()
	hold := make(chan struct{})
	r := fixture.StartReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hold:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusOK)
	})
	return r, sync.OnceFunc(func() { close(hold) })
}

func TestHandleDropsABatchThatDoesNotDecode(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	_, d := b.batch(t, 1)
	d.Data = []byte{0xff, 0xff}
	err := b.handler.Handle(context.Background(), d)
	require.True(t, bus.IsDrop(err), "got %v", err)
}

func TestConcurrencyBoundsTheDeliveriesOfABatch(t *testing.T) {
	t.Parallel()
	var running, peak atomic.Int32
	var mu sync.Mutex
	b := setup(t, func(w http.ResponseWriter, _ *http.Request) {
		now := running.Add(1)
		defer running.Add(-1)
		mu.Lock()
		peak.Store(max(peak.Load(), now))
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	})
	h := b.handlerWith(t, dispatch.Config{Concurrency: 2})
	t.Cleanup(h.Close)
	_, d := b.batch(t, 8)
	require.NoError(t, h.Handle(context.Background(), d))
	require.Len(t, b.receiver.Received(), 8)
	require.LessOrEqual(t, peak.Load(), int32(2))
}

// TestHandleHandsBackAHookWhoseDeliveryShutdownCutShort: a fault, not
// flow control, still goes back to JetStream: with one hook of a batch
// delivered and the other cut short by shutdown, the message is done with
// and the cut one is published again in a DueHooks message of its own.
func TestHandleHandsBackAHookWhoseDeliveryShutdownCutShort(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	hanging := fixture.StartReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})
	h := b.handlerWith(t, dispatch.Config{DeliveryTimeout: 10 * time.Second})
	t.Cleanup(h.Close)
	hooks, _ := b.batch(t, 2)
	hooks[1].Url = hanging.URL + "/hang"
	d := fixture.Due(t, hooks...)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Handle(ctx, d) }()
	hanging.WaitFor(t, 1)
	require.Eventually(t, func() bool { return len(results(t, b)) == 1 }, 10*time.Second, 10*time.Millisecond,
		"the first hook's result")
	cancel() // shutdown
	require.NoError(t, <-done)

	res := results(t, b)
	require.Len(t, res, 1, "the cut delivery has no result")
	require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, res[hooks[0].GetHookId()].GetOutcome())
	back := handedBack(t, b)
	require.Len(t, back, 1)
	require.True(t, proto.Equal(hooks[1], back[0]), "handed back as it came")
}
