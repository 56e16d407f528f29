package claim

import (
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
	"github.com/sundial-run/sundial/testkit/natstest"
)

// A claim's messages published again (a retried publish) must be stored
// once, a hook alone in its batch included: its id comes from the hook and
// its lease alone. The hook's next claim, under a new lease, is a new
// message.
func TestABatchOfOneIsStoredOnceWhenItsClaimIsPublishedAgain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	js := withStreams(t)
	c, err := New(nil, js, Config{BatchSize: 1, Lease: time.Minute, PollInterval: time.Second}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	hookID := uuid.New()
	row := store.ClaimDueHooksRow{ID: hookID, LeaseSeq: 3, Domain: "receiver.example.com", Path: "/p", Data: []byte(`{}`)}

	publish := func() {
		t.Helper()
		n, err := c.pub.PublishAll(ctx, c.messages(ctx, []store.ClaimDueHooksRow{row}))
		require.NoError(t, err)
		require.Equal(t, 1, n)
	}
	publish()
	publish()
	msgs := natstest.StreamMessages(t, js, event.StreamDue)
	require.Len(t, msgs, 1, "the same claim published twice is stored once")
	require.Equal(t, event.TypeDueHooks, msgs[0].Header.Get(event.TypeHeader))
	require.Equal(t, event.DuesMsgID([]string{hookID.String()}, []int64{3}), msgs[0].Header.Get(jetstream.MsgIDHeader))

	row.LeaseSeq = 4
	publish()
	msgs = natstest.StreamMessages(t, js, event.StreamDue)
	require.Len(t, msgs, 2, "the next claim's batch is a message of its own")
	require.Equal(t, event.DuesMsgID([]string{hookID.String()}, []int64{4}), msgs[1].Header.Get(jetstream.MsgIDHeader))
}
