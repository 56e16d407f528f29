package sundial

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
)

// listenBundle is a Listen call running against a protoServer.
type listenBundle struct {
	p      *protoServer
	events chan ListenEvent
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// setupListen starts Listen with h against a fresh protocol server, with
// short backoffs and no wake watch (tests make no machine sleep).
func setupListen(t *testing.T, h ListenHandler, opts ...ListenOption) *listenBundle {
	t.Helper()
	b := &listenBundle{p: newProtoServer(t), events: make(chan ListenEvent, 256), done: make(chan struct{})}
	client := NewClient(testAPIKey, WithBaseURL(b.p.srv.URL))
	fast := func(c *listenConfig) {
		c.backoffMin, c.backoffMax = 10*time.Millisecond, 50*time.Millisecond
		c.wakeEvery = time.Hour
	}
	all := append([]ListenOption{fast, WithListenObserver(func(e ListenEvent) { b.events <- e })}, opts...)
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	go func() {
		b.err = client.Listen(ctx, h, all...)
		close(b.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-b.done
	})
	return b
}

// wait returns what Listen returned.
func (b *listenBundle) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-b.done:
		return b.err
	case <-time.After(20 * time.Second):
		t.Fatal("Listen did not return")
		return nil
	}
}

// event waits for the next event of type typ, skipping others.
func (b *listenBundle) event(t *testing.T, typ ListenEventType) ListenEvent {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-b.events:
			if e.Type == typ {
				return e
			}
		case <-deadline:
			t.Fatalf("no %s event", typ)
		}
	}
}

func ack(context.Context, *ListenDelivery) Result { return Ack() }

func TestListenAcksAHook(t *testing.T) {
	t.Parallel()
	got := make(chan *ListenDelivery, 1)
	b := setupListen(t, func(_ context.Context, d *ListenDelivery) Result {
		got <- d
		return Ack()
	})
	sc := b.p.next(t)
	require.Empty(t, sc.query.Get("forward"), "forward only when asked")
	connected := b.event(t, ListenConnected)
	require.Equal(t, ConnectionInfo{ConnectionID: "conn_1", ProjectID: "prj_1", ProjectName: "Acme",
		ServerTime: connected.Connection.ServerTime}, connected.Connection)

	sc.send(hook("h1"))
	require.Equal(t, map[string]any{"type": "ack", "hookId": "h1"}, sc.recv(t))
	d := <-got
	require.Equal(t, "h1", d.ID)
	require.Equal(t, "/webhooks/h1", d.Path)
	require.JSONEq(t, `{"n": 1}`, string(d.Data))
	require.Equal(t, 1, d.Attempt)
	require.Equal(t, 4, d.MaxAttempts)
	require.NotEmpty(t, d.AckURL)
	require.False(t, d.SignedAt.IsZero())
	require.Nil(t, d.Forward)
}

func TestListenNacksAndAccepts(t *testing.T) {
	t.Parallel()
	b := setupListen(t, func(_ context.Context, d *ListenDelivery) Result {
		switch d.ID {
		case "nack":
			return Nack(errors.New("boom"))
		case "accept":
			return Accept(90*time.Second + time.Millisecond)
		case "panic":
			panic("oops")
		}
		return Accept(0)
	})
	sc := b.p.next(t)
	sc.send(hook("nack"))
	require.Equal(t, map[string]any{"type": "nack", "hookId": "nack", "error": "boom"}, sc.recv(t))
	sc.send(hook("accept"))
	// Rounded up to whole seconds, as Sundial-Async-Timeout is.
	require.Equal(t, map[string]any{"type": "accept", "hookId": "accept", "timeout": float64(91)}, sc.recv(t))
	sc.send(hook("default"))
	require.Equal(t, map[string]any{"type": "accept", "hookId": "default", "timeout": float64(0)}, sc.recv(t))
	sc.send(hook("panic"))
	require.Equal(t, map[string]any{"type": "nack", "hookId": "panic", "error": "handler panicked: oops"}, sc.recv(t))
}

func TestListenForwardsTheRequest(t *testing.T) {
	t.Parallel()
	got := make(chan *ListenDelivery, 1)
	b := setupListen(t, func(_ context.Context, d *ListenDelivery) Result {
		got <- d
		return Ack()
	}, WithForward())
	sc := b.p.next(t)
	require.Equal(t, "true", sc.query.Get("forward"))
	m := hook("h1")
	m["forwardRequest"] = map[string]any{
		"body":      `{"id":"h1"}`,
		"headers":   map[string]string{"Sundial-Signature": "v1,abc", "Content-Type": "application/json"},
		"signature": "v1,abc",
	}
	sc.send(m)
	require.Equal(t, "ack", sc.recv(t)["type"])
	d := <-got
	require.NotNil(t, d.Forward)
	require.Equal(t, `{"id":"h1"}`, string(d.Body))
	require.Equal(t, "v1,abc", d.Forward.Signature)
	require.Equal(t, "v1,abc", d.Header.Get("Sundial-Signature"))
}

func TestListenAnswersPings(t *testing.T) {
	t.Parallel()
	b := setupListen(t, ack)
	sc := b.p.next(t)
	sc.send(map[string]any{"type": "ping", "timestamp": time.Now().UTC().Format(time.RFC3339)})
	require.Equal(t, map[string]any{"type": "pong"}, sc.recv(t))
}

func TestListenRunsHooksConcurrently(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	b := setupListen(t, func(ctx context.Context, d *ListenDelivery) Result {
		if d.ID == "slow" {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return Ack()
	})
	sc := b.p.next(t)
	sc.send(hook("slow"))
	sc.send(hook("fast"))
	// The slow hook holds up nothing: the fast one is answered first.
	require.Equal(t, "fast", sc.recv(t)["hookId"])
	close(release)
	require.Equal(t, "slow", sc.recv(t)["hookId"])
}

func TestListenQueuesBeyondMaxInFlight(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	b := setupListen(t, func(ctx context.Context, d *ListenDelivery) Result {
		if d.ID == "first" {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return Ack()
	}, WithMaxInFlight(1))
	sc := b.p.next(t)
	sc.send(hook("first"))
	sc.send(hook("second"))
	// The connection is still read while the handler is busy: a ping is
	// answered before either hook.
	sc.send(map[string]any{"type": "ping", "timestamp": 1})
	require.Equal(t, map[string]any{"type": "pong"}, sc.recv(t))
	close(release)
	require.Equal(t, map[string]any{"type": "ack", "hookId": "first"}, sc.recv(t))
	require.Equal(t, map[string]any{"type": "ack", "hookId": "second"}, sc.recv(t), "the second waited for the slot, not nacked")
}

func TestListenObservesServerNotices(t *testing.T) {
	t.Parallel()
	b := setupListen(t, ack)
	sc := b.p.next(t)
	sc.send(map[string]any{"type": "ack_timeout", "hookId": "h1", "attempt": 2})
	require.Equal(t, ListenEvent{Type: ListenAckTimeout, HookID: "h1", Attempt: 2}, b.event(t, ListenAckTimeout))
	deadline := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	sc.send(map[string]any{"type": "async_ack", "hookId": "h2", "ackUrl": "https://a", "nackUrl": "https://n", "deadline": deadline.Format(time.RFC3339)})
	require.Equal(t, ListenEvent{Type: ListenAsyncAck, HookID: "h2", AckURL: "https://a", NackURL: "https://n", Deadline: deadline},
		b.event(t, ListenAsyncAck))
	sc.send(map[string]any{"type": "error", "code": "unknown_hook", "message": "no such hook"})
	require.Equal(t, ListenEvent{Type: ListenServerError, Code: "unknown_hook", Message: "no such hook"}, b.event(t, ListenServerError))
}

func TestListenReconnectsWhenTheServerDrops(t *testing.T) {
	t.Parallel()
	b := setupListen(t, ack)
	first := b.p.next(t)
	first.c.CloseNow()
	require.Error(t, b.event(t, ListenDisconnected).Err)
	second := b.p.next(t)
	second.send(hook("h1"))
	require.Equal(t, "ack", second.recv(t)["type"])
}

func TestListenReconnectsAtOnceOnClosingAndDrains(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	b := setupListen(t, func(ctx context.Context, d *ListenDelivery) Result {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return Ack()
	}, func(c *listenConfig) { c.backoffMin, c.backoffMax = time.Hour, time.Hour })
	old := b.p.next(t)
	old.send(hook("held"))
	old.send(map[string]any{"type": "closing", "reason": "shutdown", "message": "replica stopping"})
	require.Equal(t, ListenEvent{Type: ListenClosing, Reason: "shutdown", Message: "replica stopping"}, b.event(t, ListenClosing))
	// With an hour of backoff, only "at once" opens the new socket in time.
	fresh := b.p.next(t)
	// The old socket answers the hook it holds, then closes itself.
	close(release)
	require.Equal(t, map[string]any{"type": "ack", "hookId": "held"}, old.recv(t))
	require.Equal(t, websocket.StatusNormalClosure, old.waitEnded(t))
	fresh.send(hook("next"))
	require.Equal(t, "next", fresh.recv(t)["hookId"])
}

func TestListenReconnectsAtOnceAfterAWake(t *testing.T) {
	t.Parallel()
	wake := make(chan struct{})
	b := setupListen(t, ack, func(c *listenConfig) {
		c.wake = wake
		c.backoffMin, c.backoffMax = time.Hour, time.Hour
	})
	old := b.p.next(t)
	b.event(t, ListenConnected)
	wake <- struct{}{}
	require.ErrorContains(t, b.event(t, ListenDisconnected).Err, "woke from sleep")
	old.waitEnded(t)
	// With an hour of backoff, only "at once" opens the new socket in time.
	fresh := b.p.next(t)
	fresh.send(hook("h1"))
	require.Equal(t, "ack", fresh.recv(t)["type"])
}

func TestListenTakesASilentConnectionForDead(t *testing.T) {
	t.Parallel()
	b := setupListen(t, ack, func(c *listenConfig) { c.idleTimeout = 200 * time.Millisecond })
	first := b.p.next(t)
	// The server sends nothing more: the client gives up on it.
	e := b.event(t, ListenDisconnected)
	require.ErrorContains(t, e.Err, "no message from the server")
	first.waitEnded(t)
	second := b.p.next(t)
	second.send(map[string]any{"type": "ping", "timestamp": "x"})
	require.Equal(t, "pong", second.recv(t)["type"])
}

func TestListenStopsOnRejectedTicket(t *testing.T) {
	t.Parallel()
	p := newProtoServer(t)
	p.badTicket = true
	err := NewClient(testAPIKey, WithBaseURL(p.srv.URL)).Listen(context.Background(), ack)
	require.ErrorIs(t, err, ErrTicketRejected)
}

func TestListenStopsOnRevokedKey(t *testing.T) {
	t.Parallel()
	b := setupListen(t, ack)
	sc := b.p.next(t)
	require.NoError(t, sc.c.Close(closeAccessRevoked, "api key revoked"))
	err := b.wait(t)
	require.ErrorIs(t, err, ErrAccessRevoked)
	require.ErrorContains(t, err, "api key revoked")
}

func TestListenStopsOnARefusedKey(t *testing.T) {
	t.Parallel()
	p := newProtoServer(t)
	err := NewClient("sdk_wrong_key", WithBaseURL(p.srv.URL)).Listen(context.Background(), ack)
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusUnauthorized, apiErr.StatusCode)
}

func TestListenClosesNormallyWhenCancelled(t *testing.T) {
	t.Parallel()
	b := setupListen(t, ack)
	sc := b.p.next(t)
	// Once the client holds the socket (a cancel during the dial drops it).
	b.event(t, ListenConnected)
	b.cancel()
	require.ErrorIs(t, b.wait(t), context.Canceled)
	require.Equal(t, websocket.StatusNormalClosure, sc.waitEnded(t))
}

func TestListenBackoff(t *testing.T) {
	t.Parallel()
	b := backoff{min: time.Second, max: 30 * time.Second}
	var got []time.Duration
	for range 7 {
		got = append(got, b.next())
	}
	require.Equal(t, []time.Duration{1, 2, 4, 8, 16, 30, 30}, scaleDown(got, time.Second))
	b.reset()
	require.Equal(t, time.Second, b.next())
}

func scaleDown(ds []time.Duration, unit time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d / unit
	}
	return out
}

func TestSleptComparesWallAndMonotonicClocks(t *testing.T) {
	t.Parallel()
	slack := 5 * time.Second
	require.False(t, slept(5*time.Second, 5*time.Second, slack), "a tick as expected")
	require.False(t, slept(5*time.Second+slack, 5*time.Second, slack), "within the slack")
	require.True(t, slept(10*time.Minute, 5*time.Second, slack), "suspended for ten minutes")
	require.False(t, slept(-time.Hour, 5*time.Second, slack), "a wall clock set back is no sleep")

	// Readings of one clock: both elapsed times agree.
	prev := time.Now()
	wall, mono := elapsed(prev, prev.Add(3*time.Second))
	require.Equal(t, 3*time.Second, wall)
	require.Equal(t, 3*time.Second, mono)
	// A reading without its monotonic part (as after a suspension the wall
	// clock alone moved) is compared by the wall clock.
	wall, _ = elapsed(prev, prev.Round(0).Add(time.Minute))
	require.Equal(t, time.Minute, wall)
}

func TestDialURL(t *testing.T) {
	t.Parallel()
	u, err := dialURL(listenTicket{Ticket: "a b", URL: "wss://sundial.example.com/v1/ws"}, true)
	require.NoError(t, err)
	require.Equal(t, "wss://sundial.example.com/v1/ws?forward=true&ticket=a+b", u)
	_, err = dialURL(listenTicket{Ticket: "t", URL: "ftp://x"}, false)
	require.Error(t, err)
}

func TestDialErrorsHideTheTicket(t *testing.T) {
	t.Parallel()
	refused := errors.New("connect: connection refused")
	err := dialError(fmt.Errorf("failed to WebSocket dial: %w",
		&url.Error{Op: "Get", URL: "http://gw.example/v1/ws?forward=true&ticket=tk_secret", Err: refused}), "tk_secret")
	require.NotContains(t, err.Error(), "tk_secret")
	require.Contains(t, err.Error(), "http://gw.example/v1/ws?forward=true&ticket=REDACTED")
	require.ErrorIs(t, err, refused)

	err = dialError(errors.New("handshake with tk_secret failed"), "tk_secret")
	require.Equal(t, "sundial: listen: open the socket: handshake with REDACTED failed", err.Error())
}

func TestListenRetriesASocketThatWillNotOpen(t *testing.T) {
	t.Parallel()
	// A ticket whose url answers no WebSocket: the dial fails, and is
	// retried, the ticket kept out of what the observer is told.
	mux := http.NewServeMux()
	var srvURL string
	mux.HandleFunc("POST /v1/ws/ticket", func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, `{"data": {"ticket": "tk_secret", "url": "%s/nowhere", "expiresAt": "2030-01-01T00:00:00Z"}}`,
			"ws"+strings.TrimPrefix(srvURL, "http"))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	srvURL = srv.URL
	events := make(chan ListenEvent, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- NewClient(testAPIKey, WithBaseURL(srv.URL)).Listen(ctx, ack,
			func(c *listenConfig) {
				c.backoffMin, c.backoffMax, c.wakeEvery = time.Millisecond, time.Millisecond, time.Hour
			},
			WithListenObserver(func(e ListenEvent) {
				select {
				case events <- e:
				default: // the test reads two; the retries go on
				}
			}))
	}()
	for range 2 {
		select {
		case e := <-events:
			require.Equal(t, ListenDisconnected, e.Type)
			require.ErrorContains(t, e.Err, "open the socket")
			require.NotContains(t, e.Err.Error(), "tk_secret")
		case <-time.After(10 * time.Second):
			t.Fatal("no retry")
		}
	}
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}

func TestListenBacksOffUnlessTheConnectionLasted(t *testing.T) {
	t.Parallel()
	retries := func(t *testing.T, opts ...ListenOption) []time.Duration {
		b := setupListen(t, ack, opts...)
		var got []time.Duration
		for range 3 {
			sc := b.p.next(t)
			b.event(t, ListenConnected) // the client holds it: no dial fails
			sc.c.CloseNow()
			got = append(got, b.event(t, ListenDisconnected).Retry)
		}
		return got
	}
	ms := time.Millisecond
	// Connections that drop at once: the wait doubles (setupListen: 10 ms
	// to 50 ms).
	require.Equal(t, []time.Duration{10 * ms, 20 * ms, 40 * ms}, retries(t))
	// Connections that lasted (any length does here): from the start.
	require.Equal(t, []time.Duration{10 * ms, 10 * ms, 10 * ms},
		retries(t, func(c *listenConfig) { c.stableAfter = 0 }))
}
