package event_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
)

func heldHook() *eventv1.DueHook {
	return &eventv1.DueHook{
		HookId: uuid.NewString(), ProjectId: uuid.NewString(), Attempt: 1, LeaseSeq: 7,
		LeaseExpiresAt: timestamppb.New(time.Now().Add(30 * time.Second)),
		Url:            "https://r.example.com/p", Path: "/p", Data: []byte(`{"a":1}`),
		PostAt: timestamppb.Now(), Hold: durationpb.New(150 * time.Millisecond),
	}
}

func TestDecodeDueReadsEveryForm(t *testing.T) {
	t.Parallel()
	hook := heldHook()
	for typ, body := range map[string]proto.Message{
		event.TypeHeldDueHooks: &eventv1.HeldDueHooks{Hooks: []*eventv1.DueHook{hook}},
		event.TypeDueHooks:     &eventv1.DueHooks{Hooks: []*eventv1.DueHook{hook}},
		event.TypeDueHook:      hook,
		"":                     hook,
	} {
		data, err := proto.Marshal(body)
		require.NoError(t, err)
		got, err := event.DecodeDue(typ, data)
		require.NoError(t, err, typ)
		require.Len(t, got, 1, typ)
		require.True(t, proto.Equal(hook, got[0]), typ)
	}
}

// A dispatcher of an earlier release reads a message whose type it does
// not know as a DueHook alone. A HeldDueHooks must not come out of that as
// a hook it could deliver (at once: early): it either fails to decode or
// yields no well-formed hook id, and the message is dropped.
func TestAHeldMessageIsNoHookToAnEarlierDispatcher(t *testing.T) {
	t.Parallel()
	for range 50 {
		data, err := proto.Marshal(&eventv1.HeldDueHooks{Hooks: []*eventv1.DueHook{heldHook(), heldHook()}})
		require.NoError(t, err)
		var as eventv1.DueHook
		if err := proto.Unmarshal(data, &as); err != nil {
			continue
		}
		_, err = uuid.Parse(as.GetHookId())
		require.Error(t, err, "read as a DueHook, a HeldDueHooks has a hook id")
	}
}
