package alert_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/notifier/internal/alert"
	"github.com/sundial-run/sundial/services/notifier/internal/intake"
	"github.com/sundial-run/sundial/testkit/natstest"
)

// recorder is an Intake that remembers what it was given and can be told
// to fail a number of times first, or to say the project is gone.
type recorder struct {
	mu       sync.Mutex
	sent     []*eventv1.Alert
	failures int
	gone     bool
	calls    chan *eventv1.Alert
}

func newRecorder(failures int) *recorder {
	return &recorder{failures: failures, calls: make(chan *eventv1.Alert, 100)}
}

func (r *recorder) TakeIn(_ context.Context, a intake.Alert, via string) (intake.Result, error) {
	r.calls <- a.Event
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gone {
		return intake.Result{}, intake.ErrProjectGone
	}
	if r.failures > 0 {
		r.failures--
		return intake.Result{}, errors.New("database unavailable")
	}
	r.sent = append(r.sent, a.Event)
	return intake.Result{}, nil
}

func (r *recorder) delivered() []*eventv1.Alert {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*eventv1.Alert(nil), r.sent...)
}

// next waits for the Intake's next call.
func (r *recorder) next(t *testing.T) *eventv1.Alert {
	t.Helper()
	select {
	case a := <-r.calls:
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("the Intake was not called")
		return nil
	}
}

type fixture struct {
	ctx      context.Context
	js       jetstream.JetStream
	pub      *bus.Publisher
	sender   *recorder
	outcomes chan bus.Outcome
}

// setup runs the alert Handler on the notifier's consumer of a fresh
// JetStream server, with an Intake that fails the first failures calls.
func setup(t *testing.T, failures int) fixture {
	t.Helper()
	srv := natstest.Start(t, natstest.Options{})
	_, js := srv.Connect(t)
	ctx := t.Context()
	require.NoError(t, event.EnsureStreams(ctx, js, event.DefaultReplicas))
	f := fixture{ctx: ctx, js: js, pub: bus.NewPublisher(js), sender: newRecorder(failures), outcomes: make(chan bus.Outcome, 100)}

	h := alert.NewHandler(f.sender, slog.New(slog.DiscardHandler))
	consumeCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = bus.Consume(consumeCtx, js, event.NotifierConsumer(event.DefaultReplicas), h.Handle, bus.ConsumeOptions{
			Concurrency: 4,
			Logger:      slog.New(slog.DiscardHandler),
			Settled:     func(o bus.Outcome) { f.outcomes <- o },
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return f
}

func hookFailed(id string) *eventv1.Alert {
	return &eventv1.Alert{
		AlertId:    id,
		Kind:       eventv1.AlertKind_ALERT_KIND_HOOK_FAILED,
		ProjectId:  "0190a3c4-6f1e-7c2b-9d3e-1a2b3c4d5e6f",
		OccurredAt: timestamppb.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)),
		HookId:     "0190a3c4-0000-7000-8000-000000000001",
		Path:       "/webhooks/reminder",
		Error:      "HTTP 503",
		Attempts:   6,
	}
}

func (f fixture) publish(t *testing.T, a *eventv1.Alert) {
	t.Helper()
	require.NoError(t, f.pub.Publish(f.ctx, bus.Message{
		Subject: event.SubjectAlert,
		MsgID:   event.MsgID(event.KindAlert, a.GetAlertId(), 0),
		Body:    a,
	}))
}

func (f fixture) publishRaw(t *testing.T, id string, data []byte) {
	t.Helper()
	msg := nats.NewMsg(event.SubjectAlert)
	msg.Data = data
	msg.Header.Set(jetstream.MsgIDHeader, id)
	_, err := f.js.PublishMsg(f.ctx, msg)
	require.NoError(t, err)
}

func (f fixture) outcome(t *testing.T) bus.Outcome {
	t.Helper()
	select {
	case o := <-f.outcomes:
		return o
	case <-time.After(10 * time.Second):
		t.Fatal("no message settled")
		return ""
	}
}

// settled waits until every message has left the stream and none awaits
// an acknowledgement.
func (f fixture) settled(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		s, err := f.js.Stream(f.ctx, event.StreamAlerts)
		if err != nil {
			return false
		}
		info, err := s.Info(f.ctx)
		if err != nil || info.State.Msgs != 0 {
			return false
		}
		c, err := f.js.Consumer(f.ctx, event.StreamAlerts, event.ConsumerNotifier)
		if err != nil {
			return false
		}
		ci, err := c.Info(f.ctx)
		return err == nil && ci.NumAckPending == 0 && ci.NumPending == 0
	}, 10*time.Second, 10*time.Millisecond)
}

func TestPublishedAlertIsTakenInOnce(t *testing.T) {
	t.Parallel()
	f := setup(t, 0)
	want := hookFailed("alert-1")

	f.publish(t, want)
	f.publish(t, want) // a producer's retry: same Nats-Msg-Id

	got := f.sender.next(t)
	require.True(t, proto.Equal(want, got), "got %v", got)
	require.Equal(t, bus.OutcomeAck, f.outcome(t))
	f.settled(t)
	require.Len(t, f.sender.delivered(), 1)
	require.Empty(t, f.sender.calls)
}

func TestMalformedMessagesAreDroppedBeforeIntake(t *testing.T) {
	t.Parallel()
	f := setup(t, 0)
	noKind := hookFailed("no-kind")
	noKind.Kind = eventv1.AlertKind_ALERT_KIND_UNSPECIFIED
	noProject := hookFailed("no-project")
	noProject.ProjectId = ""
	badProject := hookFailed("bad-project")
	badProject.ProjectId = "p1"
	future := hookFailed("future")
	future.Kind = eventv1.AlertKind(42)

	f.publishRaw(t, "garbage", []byte{0xff, 0xff, 0xff, 0xff})
	f.publish(t, noKind)
	f.publish(t, noProject)
	f.publish(t, badProject)
	f.publish(t, future)
	f.publish(t, hookFailed("good"))

	require.Equal(t, "good", f.sender.next(t).GetAlertId())
	outcomes := map[bus.Outcome]int{}
	for range 6 {
		outcomes[f.outcome(t)]++
	}
	require.Equal(t, map[bus.Outcome]int{bus.OutcomeDrop: 5, bus.OutcomeAck: 1}, outcomes)
	f.settled(t)
	require.Len(t, f.sender.delivered(), 1)
	require.Empty(t, f.sender.calls, "a dropped message never reaches the Intake")
}

func TestFailedIntakeIsRedelivered(t *testing.T) {
	t.Parallel()
	f := setup(t, 1)
	f.publish(t, hookFailed("flaky"))

	first := f.sender.next(t)
	require.Equal(t, bus.OutcomeRetry, f.outcome(t))
	second := f.sender.next(t)
	require.Equal(t, bus.OutcomeAck, f.outcome(t))

	require.Equal(t, "flaky", first.GetAlertId())
	require.True(t, proto.Equal(first, second))
	f.settled(t)
	require.Len(t, f.sender.delivered(), 1)
}

func TestValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, alert.Validate(hookFailed("ok")))

	future := hookFailed("future")
	future.Kind = eventv1.AlertKind(42)
	require.NoError(t, alert.Validate(future), "a kind from a newer producer is valid (the intake decides)")

	err := alert.Validate(&eventv1.Alert{AlertId: "empty"})
	require.Error(t, err)
	require.Contains(t, err.Error(), "kind")
	require.Contains(t, err.Error(), "project_id")
	require.Contains(t, err.Error(), "empty")
}

func TestDecode(t *testing.T) {
	t.Parallel()
	want := hookFailed("d1")
	data, err := proto.Marshal(want)
	require.NoError(t, err)
	got, err := alert.Decode(data)
	require.NoError(t, err)
	require.True(t, proto.Equal(want, got))

	_, err = alert.Decode([]byte{0xff, 0xff})
	require.ErrorContains(t, err, "undecodable")
	_, err = alert.Decode(nil) // an empty message decodes to an empty, invalid alert
	require.ErrorContains(t, err, "kind is not set")
}

func TestAlertOfAGoneProjectIsDropped(t *testing.T) {
	t.Parallel()
	f := setup(t, 0)
	f.sender.gone = true
	f.publish(t, hookFailed("orphan"))

	require.Equal(t, "orphan", f.sender.next(t).GetAlertId())
	require.Equal(t, bus.OutcomeDrop, f.outcome(t))
	f.settled(t)
}
