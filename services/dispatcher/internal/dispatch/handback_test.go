package dispatch_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/dispatcher/internal/dispatch"
	"github.com/sundial-run/sundial/services/dispatcher/internal/fixture"
	"github.com/sundial-run/sundial/testkit/natstest"
)

// TestHandBackSplitsLargeHooks hands back three hooks of 300 KiB of data
// each (their deliveries cut short by shutdown, a fault: flow control
// defers instead): together they would make a message near 1 MiB
// (nats-server's default max_payload), so they go back in messages of
// bus.DueBatchBytes at most, here one each, every hook once
// (docs/security.md, "Sizes agree end to end").
func TestHandBackSplitsLargeHooks(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	hanging := fixture.StartReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})
	h := b.handlerWith(t, dispatch.Config{DeliveryTimeout: 10 * time.Second})
	t.Cleanup(h.Close)
	hooks, _ := b.batch(t, 4)
	large := []byte(`{"s":"` + strings.Repeat("x", 300<<10) + `"}`)
	for _, due := range hooks[:3] {
		due.Data = large
		due.Url = hanging.URL + "/hang"
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Handle(ctx, fixture.Due(t, hooks...)) }()
	hanging.WaitFor(t, 3)
	require.Eventually(t, func() bool { return len(results(t, b)) == 1 }, 10*time.Second, 10*time.Millisecond,
		"the small hook's result")
	cancel() // shutdown cuts the three large deliveries short
	require.NoError(t, <-done)

	msgs := natstest.StreamMessages(t, b.js, event.StreamDue)
	require.Len(t, msgs, 3, "one message per hook larger than half the budget")
	want := map[string]bool{}
	for _, due := range hooks[:3] {
		want[due.GetHookId()] = true
	}
	for _, m := range msgs {
		var back eventv1.DueHooks
		require.NoError(t, proto.Unmarshal(m.Data, &back))
		require.Len(t, back.GetHooks(), 1)
		due := back.GetHooks()[0]
		require.True(t, want[due.GetHookId()], "handed back once: %s", due.GetHookId())
		delete(want, due.GetHookId())
		require.Equal(t, large, due.GetData())
		require.Equal(t, bus.DueHooks(back.GetHooks()).MsgID, m.Header.Get("Nats-Msg-Id"))
	}
	require.Empty(t, want)
}
