package bus_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/testkit/natstest"
)

// TestMain installs the W3C propagator once: services get it from
// telemetry.Setup, and the bus reads the global one.
func TestMain(m *testing.M) {
	otel.SetTextMapPropagator(propagation.TraceContext{})
	os.Exit(m.Run())
}

// env is one test's JetStream server with Sundial's streams.
type env struct {
	ctx context.Context
	js  jetstream.JetStream
	pub *bus.Publisher
}

func setup(t *testing.T) env {
	t.Helper()
	srv := natstest.Start(t, natstest.Options{})
	_, js := srv.Connect(t)
	ctx := t.Context()
	require.NoError(t, event.EnsureStreams(ctx, js, event.DefaultReplicas))
	return env{ctx: ctx, js: js, pub: bus.NewPublisher(js)}
}

func alertMsg(id string) bus.Message {
	return bus.Message{
		Subject: event.SubjectAlert,
		MsgID:   event.MsgID(event.KindAlert, id, 1),
		Body:    &eventv1.Alert{AlertId: id, Kind: eventv1.AlertKind_ALERT_KIND_HOOK_FAILED, ProjectId: "p1"},
	}
}

func (e env) publish(t *testing.T, id string) {
	t.Helper()
	require.NoError(t, e.pub.Publish(e.ctx, alertMsg(id)))
}

func (e env) streamMsgs(t *testing.T) uint64 {
	t.Helper()
	s, err := e.js.Stream(e.ctx, event.StreamAlerts)
	require.NoError(t, err)
	info, err := s.Info(e.ctx)
	require.NoError(t, err)
	return info.State.Msgs
}

// consumerInfo is the notifier consumer's state. It is read in the
// conditions of Eventually and Never, which run in goroutines of their
// own: one still running when the test returns sees the test's context
// cancelled, and gets an empty state rather than failing a test that
// already passed.
func (e env) consumerInfo(t *testing.T) *jetstream.ConsumerInfo {
	t.Helper()
	var info *jetstream.ConsumerInfo
	c, err := e.js.Consumer(e.ctx, event.StreamAlerts, event.ConsumerNotifier)
	if err == nil {
		info, err = c.Info(e.ctx)
	}
	if e.ctx.Err() != nil {
		return &jetstream.ConsumerInfo{}
	}
	require.NoError(t, err)
	return info
}

// consume runs bus.Consume on the notifier's consumer until the returned
// stop is called (or the test ends); done is closed when Consume returned.
func (e env) consume(t *testing.T, h bus.Handler, opts bus.ConsumeOptions) (stop context.CancelFunc, done <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(e.ctx)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		_ = bus.Consume(ctx, e.js, event.NotifierConsumer(event.DefaultReplicas), h, opts)
	}()
	t.Cleanup(func() { cancel(); <-finished })
	return cancel, finished
}

func decodeAlert(t *testing.T, data []byte) *eventv1.Alert {
	t.Helper()
	var a eventv1.Alert
	require.NoError(t, proto.Unmarshal(data, &a))
	return &a
}

// alertID decodes a delivery in a handler, where a test must not call
// FailNow; an undecodable message yields "".
func alertID(data []byte) string {
	var a eventv1.Alert
	if proto.Unmarshal(data, &a) != nil {
		return ""
	}
	return a.GetAlertId()
}

// counter is an int64 that handlers update concurrently.
type counter struct{ v atomic.Int64 }

func (c *counter) add(d int64) int64 { return c.v.Add(d) }
func (c *counter) get() int64        { return c.v.Load() }

// max raises the counter to n if n is larger.
func (c *counter) max(n int64) {
	for {
		cur := c.v.Load()
		if n <= cur || c.v.CompareAndSwap(cur, n) {
			return
		}
	}
}

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestPublishSetsMsgIDAndDeduplicates(t *testing.T) {
	t.Parallel()
	e := setup(t)

	e.publish(t, "a1")
	e.publish(t, "a1")

	require.Equal(t, uint64(1), e.streamMsgs(t), "the second publish with the same id is a duplicate")
	s, err := e.js.Stream(e.ctx, event.StreamAlerts)
	require.NoError(t, err)
	raw, err := s.GetMsg(e.ctx, 1)
	require.NoError(t, err)
	require.Equal(t, "alert:a1:1", raw.Header.Get(jetstream.MsgIDHeader))
	require.Equal(t, "a1", decodeAlert(t, raw.Data).GetAlertId())

	e.publish(t, "a2")
	require.Equal(t, uint64(2), e.streamMsgs(t), "another id is another message")
}

// tracedDelivery publishes one alert inside a span of an SDK tracer provider,
// and the handler starts a span of its own from the context it is given. It
// returns both spans and the delivery.
func tracedDelivery(t *testing.T) (published, handled sdktrace.ReadOnlySpan, d bus.Delivery) {
	t.Helper()
	e := setup(t)
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, span := tp.Tracer("bus_test").Start(e.ctx, "publish")
	require.NoError(t, e.pub.Publish(ctx, alertMsg("traced")))
	span.End()

	type seen struct {
		d    bus.Delivery
		span sdktrace.ReadOnlySpan
	}
	got := make(chan seen, 1)
	e.consume(t, func(ctx context.Context, d bus.Delivery) error {
		_, child := tp.Tracer("bus_test").Start(ctx, "handle")
		child.End()
		got <- seen{d: d, span: child.(sdktrace.ReadOnlySpan)}
		return nil
	}, bus.ConsumeOptions{})
	select {
	case s := <-got:
		return span.(sdktrace.ReadOnlySpan), s.span, s.d
	case <-time.After(10 * time.Second):
		t.Fatal("message not handled")
		return nil, nil, bus.Delivery{}
	}
}

func TestPublishCarriesTraceContext(t *testing.T) {
	t.Parallel()
	published, handled, _ := tracedDelivery(t)

	want, parent := published.SpanContext(), handled.Parent()
	require.True(t, parent.IsValid(), "the handler's context carries the publisher's span")
	require.True(t, parent.IsRemote(), "it came over NATS")
	require.Equal(t, want.TraceID(), parent.TraceID())
	require.Equal(t, want.SpanID(), parent.SpanID())
	require.Equal(t, want.TraceID(), handled.SpanContext().TraceID(), "the handler's work joins the trace")
}

func TestPublishWritesW3CTraceparentHeader(t *testing.T) {
	t.Parallel()
	published, _, d := tracedDelivery(t)

	want := published.SpanContext()
	require.Equal(t, "00-"+want.TraceID().String()+"-"+want.SpanID().String()+"-"+want.TraceFlags().String(),
		traceparent(d), "header names written: %v", headerNames(d))
}

// traceparent reads the W3C header by its exact name: NATS header names are
// case-sensitive, and consumers in other languages look up "traceparent".
func traceparent(d bus.Delivery) string {
	return d.Header.Get("traceparent")
}

func headerNames(d bus.Delivery) []string {
	names := make([]string, 0, len(d.Header))
	for k := range d.Header {
		names = append(names, k)
	}
	return names
}

func TestPublishAllReportsStored(t *testing.T) {
	t.Parallel()
	e := setup(t)

	stored, err := e.pub.PublishAll(e.ctx, []bus.Message{alertMsg("b1"), alertMsg("b2"), alertMsg("b3")})
	require.NoError(t, err)
	require.Equal(t, 3, stored)
	require.Equal(t, uint64(3), e.streamMsgs(t))
}

func TestPublishAllReportsFailures(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lost := alertMsg("nowhere")
	lost.Subject = "sundial.v1.no.stream"
	lost.Items = 5
	batch := alertMsg("c2")
	batch.Items = 3

	stored, err := e.pub.PublishAll(e.ctx, []bus.Message{alertMsg("c1"), lost, batch})
	require.Error(t, err)
	require.Contains(t, err.Error(), "sundial.v1.no.stream")
	require.Equal(t, 4, stored, "1 item, then the 3 of a batch; the lost batch's 5 are not counted")
	require.Equal(t, uint64(2), e.streamMsgs(t))
}

func TestConsumeAcksOnNil(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.publish(t, "ok")
	handled := make(chan string, 10)
	outcomes := make(chan bus.Outcome, 10)

	e.consume(t, func(_ context.Context, d bus.Delivery) error {
		handled <- alertID(d.Data)
		return nil
	}, bus.ConsumeOptions{Settled: func(o bus.Outcome) { outcomes <- o }})

	require.Equal(t, "ok", <-handled)
	require.Equal(t, bus.OutcomeAck, <-outcomes)
	require.Eventually(t, func() bool {
		ci := e.consumerInfo(t)
		return ci.NumAckPending == 0 && ci.NumPending == 0 && ci.NumRedelivered == 0
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, uint64(0), e.streamMsgs(t), "an acknowledged work-queue message is removed")
	require.Empty(t, handled)
}

// redeliveries runs a handler that fails the first delivery with failure
// and succeeds on the next, and returns the NumDelivered of each call.
func redeliveries(t *testing.T, failure error) []uint64 {
	t.Helper()
	e := setup(t)
	e.publish(t, "again")
	delivered := make(chan uint64, 10)
	e.consume(t, func(_ context.Context, d bus.Delivery) error {
		delivered <- d.NumDelivered
		if d.NumDelivered == 1 {
			return failure
		}
		return nil
	}, bus.ConsumeOptions{})

	var got []uint64
	for len(got) < 2 {
		select {
		case n := <-delivered:
			got = append(got, n)
		case <-time.After(10 * time.Second):
			t.Fatalf("deliveries so far: %v", got)
		}
	}
	require.Eventually(t, func() bool { return e.consumerInfo(t).NumAckPending == 0 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, uint64(0), e.streamMsgs(t))
	return got
}

func TestConsumeRetryRedelivers(t *testing.T) {
	t.Parallel()
	got := redeliveries(t, bus.Retry(errors.New("not yet"), 20*time.Millisecond))
	require.Equal(t, []uint64{1, 2}, got)
}

func TestConsumeOtherErrorRedeliversWithBackoff(t *testing.T) {
	t.Parallel()
	got := redeliveries(t, errors.New("database unavailable"))
	require.Equal(t, []uint64{1, 2}, got)
}

func TestConsumeDropTerminates(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.publish(t, "bad")
	calls := make(chan string, 10)
	outcomes := make(chan bus.Outcome, 10)
	e.consume(t, func(_ context.Context, d bus.Delivery) error {
		id := alertID(d.Data)
		calls <- id
		if id == "bad" {
			return bus.Drop(errors.New("malformed"))
		}
		return nil
	}, bus.ConsumeOptions{Settled: func(o bus.Outcome) { outcomes <- o }})

	require.Equal(t, "bad", <-calls)
	require.Equal(t, bus.OutcomeDrop, <-outcomes)
	require.Eventually(t, func() bool {
		ci := e.consumerInfo(t)
		return ci.NumAckPending == 0 && ci.NumPending == 0
	}, 10*time.Second, 10*time.Millisecond)

	// A later message goes through; the dropped one never comes back.
	e.publish(t, "good")
	require.Equal(t, "good", <-calls)
	require.Equal(t, bus.OutcomeAck, <-outcomes)
	ci := e.consumerInfo(t)
	require.Zero(t, ci.NumRedelivered)
	require.Zero(t, ci.NumAckPending)
	require.Equal(t, uint64(0), e.streamMsgs(t), "a terminated work-queue message is removed")
	require.Empty(t, calls)
}

func TestConsumeBoundsConcurrency(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const limit, total = 3, 12
	for i := range total {
		e.publish(t, "m"+strconv.Itoa(i))
	}
	var running, peak, handled counter
	release := make(chan struct{})
	// The server would hand out 10 at once (MaxAckPending); the bus must hold it to 3.
	e.consume(t, func(context.Context, bus.Delivery) error {
		peak.max(running.add(1))
		<-release
		running.add(-1)
		handled.add(1)
		return nil
	}, bus.ConsumeOptions{Concurrency: limit})

	require.Eventually(t, func() bool { return running.get() == limit }, 10*time.Second, 5*time.Millisecond)
	close(release)
	require.Eventually(t, func() bool { return handled.get() == total }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, int64(limit), peak.get(), "never more than Concurrency handlers at once")
}

// goroutineID is the id of the calling goroutine, from its stack header
// ("goroutine 42 [running]:").
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	fields := strings.Fields(string(buf))
	if len(fields) < 2 {
		return ""
	}
	return fields[1]
}

func TestConsumeReusesHandlerGoroutines(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const limit, total = 2, 40
	for i := range total {
		e.publish(t, "m"+strconv.Itoa(i))
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	var handled counter
	e.consume(t, func(context.Context, bus.Delivery) error {
		mu.Lock()
		seen[goroutineID()] = true
		mu.Unlock()
		handled.add(1)
		return nil
	}, bus.ConsumeOptions{Concurrency: limit})
	require.Eventually(t, func() bool { return handled.get() == total }, 10*time.Second, 5*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.LessOrEqual(t, len(seen), limit, "handlers run on a pool of at most Concurrency goroutines")
}

func TestConsumeDrainsRunningHandlersOnCancel(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.publish(t, "slow")
	started, release := make(chan struct{}), make(chan struct{})
	var finished counter
	stop, done := e.consume(t, func(ctx context.Context, _ bus.Delivery) error {
		close(started)
		<-release
		finished.add(1)
		return ctx.Err() // nil: the handler's context outlives Consume's during the drain
	}, bus.ConsumeOptions{DrainTimeout: time.Minute})

	waitClosed(t, started, "the handler to start")
	stop()
	select {
	case <-done:
		t.Fatal("Consume returned while a handler was still running")
	default:
	}
	close(release)
	waitClosed(t, done, "Consume to return")
	require.Equal(t, int64(1), finished.get())
	require.Eventually(t, func() bool { return e.streamMsgs(t) == 0 }, 10*time.Second, 10*time.Millisecond,
		"the drained handler's message is acknowledged")
}

// handedBackAsync starts a second Consume that reports what it gets.
func (e env) handedBackAsync(t *testing.T) <-chan bus.Delivery {
	t.Helper()
	got := make(chan bus.Delivery, 10)
	e.consume(t, func(_ context.Context, d bus.Delivery) error {
		got <- d
		return nil
	}, bus.ConsumeOptions{})
	return got
}

// handedBack starts a second Consume and returns the first message it gets:
// a message handed back by a Consume that stopped is redelivered at once,
// not after the consumer's one-minute AckWait.
func (e env) handedBack(t *testing.T) bus.Delivery {
	t.Helper()
	select {
	case d := <-e.handedBackAsync(t):
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("no message handed back")
		return bus.Delivery{}
	}
}

func TestConsumeHandsBackAfterDrainTimeout(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.publish(t, "stuck")
	started := make(chan struct{})
	stop, done := e.consume(t, func(ctx context.Context, _ bus.Delivery) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	}, bus.ConsumeOptions{DrainTimeout: 50 * time.Millisecond})

	waitClosed(t, started, "the handler to start")
	stop()
	waitClosed(t, done, "Consume to return after the drain timeout")

	d := e.handedBack(t)
	require.Equal(t, "stuck", alertID(d.Data))
	require.Equal(t, uint64(2), d.NumDelivered)
}

// Once ctx is done, Consume lets running handlers finish but starts no new
// ones: a message the client already holds is handed back. Whether a
// handler would slip in depends on goroutine timing, so the scenario runs in
// several rounds.
func TestConsumeStartsNoHandlerAfterCancel(t *testing.T) {
	t.Parallel()
	for round := range 10 {
		t.Run(fmt.Sprintf("round %d", round), func(t *testing.T) {
			t.Parallel()
			startsNoHandlerAfterCancel(t)
		})
	}
}

func startsNoHandlerAfterCancel(t *testing.T) {
	e := setup(t)
	e.publish(t, "first")
	e.publish(t, "second")
	calls := make(chan string, 10)
	release := make(chan struct{})
	stop, done := e.consume(t, func(_ context.Context, d bus.Delivery) error {
		calls <- alertID(d.Data)
		<-release
		return nil
	}, bus.ConsumeOptions{Concurrency: 1, DrainTimeout: time.Minute})

	require.Equal(t, "first", <-calls)
	stop()
	close(release)
	waitClosed(t, done, "Consume to return")

	// Either the stopped Consume still ran "second" (and acknowledged it), or
	// it handed it back, or never pulled it, and a new Consume gets it.
	select {
	case id := <-calls:
		t.Fatalf("a handler started for %q after Consume's context was done", id)
	case d := <-e.handedBackAsync(t):
		require.Equal(t, "second", alertID(d.Data))
	case <-time.After(10 * time.Second):
		t.Fatal("the second message was neither handled nor handed back")
	}
}

// TestConsumePullsNoMoreThanItsFreeHandlers: a message that no handler can
// take stays on the server, where another replica may take it, instead of
// waiting in this process with its AckWait running.
func TestConsumePullsNoMoreThanItsFreeHandlers(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.publish(t, "first")
	e.publish(t, "second")
	calls := make(chan string, 10)
	release := make(chan struct{})
	e.consume(t, func(_ context.Context, d bus.Delivery) error {
		calls <- alertID(d.Data)
		<-release
		return nil
	}, bus.ConsumeOptions{Concurrency: 1})
	require.Equal(t, "first", <-calls)
	// Pulls go on while the handler runs (each lasts at most a second):
	// none takes the second message.
	require.Never(t, func() bool { return e.consumerInfo(t).NumAckPending > 1 }, 3*time.Second, 20*time.Millisecond)
	require.Equal(t, uint64(1), e.consumerInfo(t).NumPending, "the second message waits on the server")
	close(release)
	require.Equal(t, "second", <-calls)
}

// TestAReleasedHandlerLetsTheNextMessageIn: a handler that releases its
// slot (Delivery.Release) goes on running while the next message is
// handled, up to ConsumeOptions.Released such handlers; its message is
// settled when it returns, and a second Release does nothing.
func TestAReleasedHandlerLetsTheNextMessageIn(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for _, id := range []string{"first", "second", "third"} {
		e.publish(t, id)
	}
	calls := make(chan string, 10)
	release := make(chan struct{})
	e.consume(t, func(_ context.Context, d bus.Delivery) error {
		calls <- alertID(d.Data)
		d.Release()
		d.Release()
		<-release
		return nil
	}, bus.ConsumeOptions{Concurrency: 1, Released: 1})
	// Cleanups run last first: a failed test releases the handlers before
	// Consume drains them.
	releaseAll := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseAll)
	require.Equal(t, "first", <-calls)
	require.Equal(t, "second", <-calls, "the released first handler let the second message in")
	// The second could not be released (the room holds one): the third
	// waits on the server.
	require.Never(t, func() bool { return e.consumerInfo(t).NumAckPending > 2 }, 2*time.Second, 20*time.Millisecond)
	require.Equal(t, uint64(1), e.consumerInfo(t).NumPending, "the third message waits on the server")
	releaseAll()
	require.Equal(t, "third", <-calls)
	require.Eventually(t, func() bool {
		info := e.consumerInfo(t)
		return info.NumAckPending == 0 && info.NumPending == 0
	}, 10*time.Second, 5*time.Millisecond, "every message settled")
}

// TestConsumeKeepsAMessageInProgressWhileItsHandlerRuns: a handler may run
// for many times its consumer's AckWait; its message is not delivered again
// meanwhile, so a short AckWait bounds only how long the messages of a
// process that died wait.
func TestConsumeKeepsAMessageInProgressWhileItsHandlerRuns(t *testing.T) {
	t.Parallel()
	e := setup(t)
	short := event.NotifierConsumer(event.DefaultReplicas)
	short.Config.AckWait = 400 * time.Millisecond
	e.publish(t, "long")
	var calls counter
	release := make(chan struct{})
	ctx, cancel := context.WithCancel(e.ctx)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		_ = bus.Consume(ctx, e.js, short, func(context.Context, bus.Delivery) error {
			calls.add(1)
			<-release
			return nil
		}, bus.ConsumeOptions{Concurrency: 2})
	}()
	t.Cleanup(func() { cancel(); <-finished })
	// Cleanups run last first: a failed test releases the handlers before
	// Consume drains them.
	releaseAll := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseAll)
	require.Eventually(t, func() bool { return calls.get() == 1 }, 10*time.Second, 5*time.Millisecond)
	require.Never(t, func() bool { return calls.get() > 1 || e.consumerInfo(t).NumRedelivered > 0 },
		2*time.Second, 20*time.Millisecond, "redelivered while its handler ran: five AckWaits")
	releaseAll()
	require.Eventually(t, func() bool { return e.consumerInfo(t).NumAckPending == 0 }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, int64(1), calls.get())
}

func TestConsumeRecreatesDeletedStream(t *testing.T) {
	t.Parallel()
	e := setup(t)
	handled := make(chan string, 10)
	e.consume(t, func(_ context.Context, d bus.Delivery) error {
		handled <- alertID(d.Data)
		return nil
	}, bus.ConsumeOptions{})
	e.publish(t, "before")
	require.Equal(t, "before", <-handled)

	require.NoError(t, e.js.DeleteStream(e.ctx, event.StreamAlerts))

	// Consume notices, re-creates the stream and its consumer, and resumes.
	// The server may drop the 409 it owes a pull request whose stream is
	// deleted; then only the missing pull heartbeat tells Consume, after
	// 2 x 15 s with the client's default 30 s pull expiry: hence the bound.
	require.Eventually(t, func() bool {
		_, err := e.js.Consumer(e.ctx, event.StreamAlerts, event.ConsumerNotifier)
		return err == nil
	}, 45*time.Second, 20*time.Millisecond)
	e.publish(t, "after")
	require.Eventually(t, func() bool {
		select {
		case id := <-handled:
			return id == "after"
		default:
			return false
		}
	}, 10*time.Second, 10*time.Millisecond)
}
