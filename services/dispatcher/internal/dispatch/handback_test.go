package dispatch_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/dispatcher/internal/fixture"
	"github.com/sundial-run/sundial/testkit/natstest"
)

// TestHandBackSplitsLargeHooks hands back three hooks of 300 KiB of data
// each: together they would make a message near 1 MiB (nats-server's
// default max_payload), so they go back in messages of bus.DueBatchBytes at
// most, here one each, every hook once (docs/security.md, "Sizes agree end
// to end").
func TestHandBackSplitsLargeHooks(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	h := b.busyHostHandler(t, b.receiver.URL)
	hooks, _ := b.batch(t, 4)
	large := []byte(`{"s":"` + strings.Repeat("x", 300<<10) + `"}`)
	for _, due := range hooks[:3] {
		due.Data = large
	}
	other := fixture.StartReceiver(t, nil)
	hooks[3].Url = other.URL + "/hooks/x"

	require.NoError(t, h.Handle(context.Background(), batchDelivery(t, hooks)))
	require.Len(t, other.Received(), 1)
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
