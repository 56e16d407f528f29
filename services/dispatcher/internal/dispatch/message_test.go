package dispatch_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
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
	return hooks, batchDelivery(t, hooks)
}

// batchDelivery is the delivery of a DueHooks message carrying hooks.
func batchDelivery(t *testing.T, hooks []*eventv1.DueHook) bus.Delivery {
	t.Helper()
	header := nats.Header{}
	header.Set(event.TypeHeader, event.TypeDueHooks)
	return bus.Delivery{
		Subject: event.SubjectDue, Header: header, NumDelivered: 1,
		Data: fixture.Encode(t, &eventv1.DueHooks{Hooks: hooks}),
	}
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
	hosts := hostlimit.New(1)
	h := b.limitedHandler(t, hosts)
	t.Cleanup(h.Close)
	busy, ok := hosts.TryAcquire(hostlimit.Key(url))
	require.True(t, ok)
	t.Cleanup(busy)
	return h
}

// TestHandleHandsBackTheHooksOfABatchWhoseHostIsBusy: two hooks of a
// batch find their host busy, the third is delivered elsewhere.
func TestHandleHandsBackTheHooksOfABatchWhoseHostIsBusy(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	h := b.busyHostHandler(t, b.receiver.URL)
	hooks, _ := b.batch(t, 3)
	other := fixture.StartReceiver(t, nil)
	hooks[2].Url = other.URL + "/hooks/x?y=1"
	d := batchDelivery(t, hooks)

	// The batch is done with; its busy host's hooks wait in a message of
	// their own, which JetStream can hand back until the host has room.
	require.NoError(t, h.Handle(context.Background(), d))
	require.Empty(t, b.receiver.Received())
	require.Len(t, other.Received(), 1)
	res := results(t, b)
	require.Len(t, res, 1)
	require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, res[hooks[2].GetHookId()].GetOutcome())
	msgs := natstest.StreamMessages(t, b.js, event.StreamDue)
	require.Len(t, msgs, 1)
	require.Equal(t, event.TypeDueHooks, msgs[0].Header.Get(event.TypeHeader), "a DueHooks message")
	var back eventv1.DueHooks
	require.NoError(t, proto.Unmarshal(msgs[0].Data, &back))
	want := map[string]*eventv1.DueHook{hooks[0].GetHookId(): hooks[0], hooks[1].GetHookId(): hooks[1]}
	require.Len(t, back.GetHooks(), 2)
	for _, due := range back.GetHooks() {
		require.True(t, proto.Equal(want[due.GetHookId()], due), "handed back as it came")
		delete(want, due.GetHookId())
	}
	require.Equal(t, bus.DueHooks(back.GetHooks()).MsgID, msgs[0].Header.Get("Nats-Msg-Id"))
}

// TestHandleHandsBackABatchWhoseHooksAllFindTheirHostBusy: with nothing
// delivered, the message itself goes back, as a DueHook alone does.
func TestHandleHandsBackABatchWhoseHooksAllFindTheirHostBusy(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	h := b.busyHostHandler(t, b.receiver.URL)
	_, d := b.batch(t, 2)

	err := h.Handle(context.Background(), d)
	require.ErrorContains(t, err, "destination host at its concurrency limit")
	require.False(t, bus.IsDrop(err))
	require.Empty(t, b.receiver.Received())
	require.Empty(t, results(t, b))
	require.Empty(t, natstest.StreamMessages(t, b.js, event.StreamDue), "nothing published again")
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
