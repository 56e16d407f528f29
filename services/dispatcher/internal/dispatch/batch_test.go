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
	header := nats.Header{}
	header.Set(event.TypeHeader, event.TypeDueHooks)
	return hooks, bus.Delivery{
		Subject: event.SubjectDue, Header: header, NumDelivered: 1,
		Data: fixture.Encode(t, &eventv1.DueHooks{Hooks: hooks}),
	}
}

// results returns the AttemptResults on the results stream by hook id.
func results(t *testing.T, b bundle) map[string]*eventv1.AttemptResult {
	t.Helper()
	out := map[string]*eventv1.AttemptResult{}
	for _, m := range natstest.StreamMessages(t, b.js, event.StreamResults) {
		var r eventv1.AttemptResult
		require.NoError(t, proto.Unmarshal(m.Data, &r))
		out[r.GetHookId()] = &r
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

func TestHandleHandsBackTheHooksOfABatchWhoseHostIsBusy(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	hosts := hostlimit.New(1)
	h := b.limitedHandler(hosts)
	t.Cleanup(h.Close)
	hooks, d := b.batch(t, 2)
	busy, ok := hosts.TryAcquire(hostlimit.Key(hooks[0].GetUrl()))
	require.True(t, ok)
	defer busy()

	// The batch is done with; its hooks wait as messages of their own,
	// which JetStream can hand back until the host has room.
	require.NoError(t, h.Handle(context.Background(), d))
	require.Empty(t, b.receiver.Received())
	require.Empty(t, results(t, b))
	msgs := natstest.StreamMessages(t, b.js, event.StreamDue)
	require.Len(t, msgs, 2)
	want := map[string]*eventv1.DueHook{hooks[0].GetHookId(): hooks[0], hooks[1].GetHookId(): hooks[1]}
	for _, m := range msgs {
		require.Empty(t, m.Header.Get(event.TypeHeader), "a single DueHook")
		var due eventv1.DueHook
		require.NoError(t, proto.Unmarshal(m.Data, &due))
		require.True(t, proto.Equal(want[due.GetHookId()], &due), "handed back as it came")
		require.Equal(t, event.MsgID(event.KindDue, due.GetHookId(), due.GetLeaseSeq()), m.Header.Get("Nats-Msg-Id"))
		delete(want, due.GetHookId())
	}
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
	h := b.handlerWith(dispatch.Config{Concurrency: 2})
	t.Cleanup(h.Close)
	_, d := b.batch(t, 8)
	require.NoError(t, h.Handle(context.Background(), d))
	require.Len(t, b.receiver.Received(), 8)
	require.LessOrEqual(t, peak.Load(), int32(2))
}
