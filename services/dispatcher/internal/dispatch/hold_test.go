package dispatch_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/dispatcher/internal/dispatch"
	"github.com/sundial-run/sundial/services/dispatcher/internal/fixture"
	"github.com/sundial-run/sundial/services/dispatcher/internal/report"
	"github.com/sundial-run/sundial/testkit/natstest"
)

// arrivals records when each hook's request reached the receiver.
type arrivals struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (a *arrivals) answer(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.at[r.Header.Get("Sundial-Id")] = time.Now()
	a.mu.Unlock()
}

func (a *arrivals) of(id string) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.at[id]
}

// A claim's hooks come together, each with the hold it still needs: a held
// hook is sent no sooner than its hold after the message arrived, and a
// hook without one is not kept waiting behind it.
func TestHandleStartsAHeldHookNoSoonerThanItsHold(t *testing.T) {
	t.Parallel()
	got := &arrivals{at: map[string]time.Time{}}
	b := setup(t, got.answer)
	hooks, _ := b.batch(t, 2)
	const hold = 300 * time.Millisecond
	// The held hook first in the message: the dispatcher orders by hold.
	hooks[0].Hold = durationpb.New(hold)
	hooks[0].LeaseDuration = durationpb.New(time.Minute)
	d := fixture.Due(t, hooks...)

	sent := time.Now() // before the message reaches the handler
	require.NoError(t, b.handler.Handle(context.Background(), d))

	held, now := got.of(hooks[0].GetHookId()), got.of(hooks[1].GetHookId())
	require.False(t, held.IsZero(), "held hook delivered")
	require.False(t, now.IsZero(), "hook without a hold delivered")
	require.GreaterOrEqual(t, held.Sub(sent), hold, "a held hook is never sent before its hold has passed")
	require.True(t, now.Before(held), "the hook without a hold went first")
	res := results(t, b)
	for _, due := range hooks {
		require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, res[due.GetHookId()].GetOutcome())
	}
	require.Empty(t, natstest.StreamMessages(t, b.js, event.StreamDue), "nothing handed back")
}

// While a claim's hooks wait out their holds, the dispatcher opens a
// connection to their cold receiver, so that the first of them does not
// spend its due instant on the handshakes, and is sent on it.
func TestAHeldHookFindsItsReceiverConnected(t *testing.T) {
	t.Parallel()
	requireConnectedDuringTheHold(t, 1)
}

// Hooks due together at a cold host go out side by side: the hold opens a
// connection for each, and they find them open at their due instant.
func TestAHeldCrowdFindsAConnectionForEachHook(t *testing.T) {
	t.Parallel()
	requireConnectedDuringTheHold(t, 4)
}

// requireConnectedDuringTheHold hands n hooks due together at a cold
// receiver to the handler and checks that n connections open during their
// hold, before anything is sent, and that the deliveries then use them.
func requireConnectedDuringTheHold(t *testing.T, n int) {
	t.Helper()
	b := setup(t, nil)
	hooks, _ := b.batch(t, n)
	const hold = 2 * time.Second
	for _, hk := range hooks {
		hk.Hold = durationpb.New(hold)
		hk.LeaseDuration = durationpb.New(time.Minute)
	}
	d := fixture.Due(t, hooks...)

	start := time.Now()
	handled := make(chan error, 1)
	go func() { handled <- b.handler.Handle(context.Background(), d) }()
	// Within half the hold: a connection opened only for a delivery
	// would come after all of it.
	require.Eventually(t, func() bool { return b.receiver.Conns() == n }, hold/2, time.Millisecond,
		"a connection for each hook opened during the hold")
	require.Less(t, time.Since(start), hold, "the hold is still running")
	require.Empty(t, b.receiver.Received(), "nothing sent before the hold's end")
	require.NoError(t, <-handled)
	require.Len(t, b.receiver.Received(), n)
	require.Equal(t, n, b.receiver.Conns(), "the deliveries went on the warmed connections")
}

// hangingWarm is a Sender whose Warm waits for its context to end, as a
// dial to a receiver that never answers does.
type hangingWarm struct {
	dispatch.Sender
	entered  chan struct{}
	returned atomic.Bool
}

func (s *hangingWarm) Warm(ctx context.Context, _ string, _ int) error {
	close(s.entered) // the test's one held hook warms once
	<-ctx.Done()
	s.returned.Store(true)
	return ctx.Err()
}

// A connection being warmed may outlive its message: Close stops it and
// waits for it, so that none is opened after the client has closed.
func TestCloseWaitsForTheWarming(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	sender := &hangingWarm{Sender: b.client, entered: make(chan struct{})}
	h := b.newHandlerWith(t, b.js, report.DefaultRetry, sender)
	hooks, _ := b.batch(t, 1)
	hooks[0].Hold = durationpb.New(50 * time.Millisecond)
	hooks[0].LeaseDuration = durationpb.New(time.Minute)

	require.NoError(t, h.Handle(context.Background(), fixture.Due(t, hooks...)))
	require.Len(t, b.receiver.Received(), 1)
	<-sender.entered
	require.False(t, sender.returned.Load(), "the warming still hangs after its message")
	h.Close()
	require.True(t, sender.returned.Load(), "Close returned before the warming")
}

// Stopped while it holds a hook, the dispatcher hands it back with what is
// left of its hold, so that the next one does not send it early.
func TestHandleHandsBackAHeldHookWithTheHoldItStillNeeds(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	hooks, _ := b.batch(t, 2)
	const hold = 30 * time.Second // within the fixture's lease of a minute
	hooks[1].Hold = durationpb.New(hold)
	hooks[1].LeaseDuration = durationpb.New(time.Minute)
	d := fixture.Due(t, hooks...)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	started := time.Now()
	go func() { done <- b.handler.Handle(ctx, d) }()
	require.Eventually(t, func() bool { return len(results(t, b)) == 1 }, 10*time.Second, 10*time.Millisecond,
		"the first hook's result")
	cancel() // shutdown while the second is held
	require.NoError(t, <-done)
	stopped := time.Now()

	require.Len(t, b.receiver.Received(), 1, "the held hook was not sent")
	back := handedBack(t, b)
	require.Len(t, back, 1)
	require.Equal(t, hooks[1].GetHookId(), back[0].GetHookId())
	left := back[0].GetHold().AsDuration()
	// The handler counts from its own receipt, before the first hook's
	// result; the first hook's delivery came between the two.
	require.Less(t, left, hold, "only what is left of the hold")
	require.GreaterOrEqual(t, left, hold-stopped.Sub(started), "the rest of the hold is kept")
}

// A hold longer than the hook's lease is no scheduler's (its holds are at
// most its claim-ahead): the hook is skipped, not kept in hand past the
// instant its lease re-drives it.
func TestHandleSkipsAHookHeldBeyondItsLease(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	hooks, _ := b.batch(t, 2)
	hooks[1].LeaseDuration = durationpb.New(time.Minute)
	hooks[1].Hold = durationpb.New(2 * time.Minute)
	require.NoError(t, b.handler.Handle(context.Background(), fixture.Due(t, hooks...)))

	require.Len(t, b.receiver.Received(), 1, "only the well-formed hook is sent")
	require.Equal(t, hooks[0].GetHookId(), b.receiver.Received()[0].Header.Get("Sundial-Id"))
	require.Empty(t, natstest.StreamMessages(t, b.js, event.StreamDue), "nothing handed back")
}
