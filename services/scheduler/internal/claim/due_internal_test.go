package claim

import (
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
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
	row := store.ClaimHooksRow{ID: hookID, LeaseSeq: 3, Domain: "receiver.example.com", Path: "/p", Data: []byte(`{}`)}

	publish := func() {
		t.Helper()
		n, err := c.pub.PublishAll(ctx, c.messages(ctx, []store.ClaimHooksRow{row}, answerClock([]store.ClaimHooksRow{row}, nil, time.Now())))
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

// A claim's hooks go out at once: one not yet due by the database clock
// carries the hold left until it is (never more than what the database
// clock still had to run when the claim's answer arrived), in the same
// DueHooks message as a hook already due, which carries none.
func TestAHookNotYetDueGoesOutAtOnceWithItsHold(t *testing.T) {
	t.Parallel()
	c, err := New(nil, nil, Config{BatchSize: 10, DueBatch: 10, Lease: time.Minute, PollInterval: time.Second}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	dbNow := time.Now().Add(time.Hour) // only differences of its readings count
	due := store.ClaimHooksRow{ID: uuid.New(), LeaseSeq: 1, Domain: "r.example.com", Path: "/", Data: []byte(`{}`),
		DueAt: dbNow.Add(-time.Millisecond), DbNow: dbNow}
	early := due
	early.ID, early.DueAt = uuid.New(), dbNow.Add(150*time.Millisecond)

	received := time.Now()
	msgs := c.messages(t.Context(), []store.ClaimHooksRow{due, early}, dbClock{local: received, db: dbNow})
	built := time.Now()
	require.Len(t, msgs, 1)
	require.Equal(t, event.TypeDueHooks, msgs[0].Type)
	hooks := msgs[0].Body.(*eventv1.DueHooks).GetHooks()
	require.Len(t, hooks, 2)
	require.Nil(t, hooks[0].GetHold(), "a hook already due is not held")
	hold := hooks[1].GetHold().AsDuration()
	require.LessOrEqual(t, hold, 150*time.Millisecond)
	require.GreaterOrEqual(t, hold, 150*time.Millisecond-built.Sub(received),
		"the hold is what is left of the 150 ms once the message is built")

}
