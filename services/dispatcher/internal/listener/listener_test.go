package listener_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/dispatcher/internal/listener"
	"github.com/sundial-run/sundial/testkit/natstest"
)

type bundle struct {
	requester *listener.Requester
	gateway   *nats.Conn
}

func setup(t *testing.T, timeout time.Duration) bundle {
	t.Helper()
	srv := natstest.Start(t, natstest.Options{})
	nc, _ := srv.Connect(t)
	gateway, _ := srv.Connect(t)
	return bundle{requester: listener.New(nc, timeout), gateway: gateway}
}

// serve answers the project's requests in the gateways' queue group with
// what reply returns (nil: no reply).
func (b bundle) serve(t *testing.T, projectID string, reply func(*eventv1.ListenerDelivery) *eventv1.ListenerAnswer) {
	t.Helper()
	sub, err := b.gateway.QueueSubscribe(event.ListenerDeliverSubject(projectID), event.ListenerQueue, func(m *nats.Msg) {
		var d eventv1.ListenerDelivery
		if proto.Unmarshal(m.Data, &d) != nil {
			return
		}
		if a := reply(&d); a != nil {
			data, _ := proto.Marshal(a)
			_ = m.Respond(data)
		}
	})
	require.NoError(t, err)
	require.NoError(t, b.gateway.Flush())
	t.Cleanup(func() { _ = sub.Unsubscribe() })
}

func TestDeliverReturnsTheGatewaysAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t, time.Second)
	b.serve(t, "p1", func(d *eventv1.ListenerDelivery) *eventv1.ListenerAnswer {
		return &eventv1.ListenerAnswer{Kind: eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_NACK, Error: "for " + d.GetHookId()}
	})

	a, err := b.requester.Deliver(context.Background(), &eventv1.ListenerDelivery{HookId: "h1", ProjectId: "p1"})

	require.NoError(t, err)
	require.Equal(t, eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_NACK, a.GetKind())
	require.Equal(t, "for h1", a.GetError())
}

func TestDeliverWithNoGatewayIsErrNoListener(t *testing.T) {
	t.Parallel()
	b := setup(t, time.Second)
	b.serve(t, "other", func(*eventv1.ListenerDelivery) *eventv1.ListenerAnswer { return &eventv1.ListenerAnswer{} })

	_, err := b.requester.Deliver(context.Background(), &eventv1.ListenerDelivery{HookId: "h1", ProjectId: "p1"})

	require.ErrorIs(t, err, listener.ErrNoListener)
}

func TestDeliverUnansweredIsErrNoAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t, 200*time.Millisecond)
	b.serve(t, "p1", func(*eventv1.ListenerDelivery) *eventv1.ListenerAnswer { return nil })

	_, err := b.requester.Deliver(context.Background(), &eventv1.ListenerDelivery{HookId: "h1", ProjectId: "p1"})

	require.ErrorIs(t, err, listener.ErrNoAnswer)
}

func TestDeliverCutShortIsTheContextsError(t *testing.T) {
	t.Parallel()
	b := setup(t, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	b.serve(t, "p1", func(*eventv1.ListenerDelivery) *eventv1.ListenerAnswer {
		cancel()
		return nil
	})

	_, err := b.requester.Deliver(ctx, &eventv1.ListenerDelivery{HookId: "h1", ProjectId: "p1"})

	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, listener.ErrNoAnswer)
}
