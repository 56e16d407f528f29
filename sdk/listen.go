package sundial

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// The close codes after which Listen stops instead of reconnecting
// (docs/listener.md, "Close codes").
const (
	closeTicketRejected = 4001
	closeAccessRevoked  = 4003
)

// ErrTicketRejected is the server closing the listener's socket with code
// 4001: its ticket was bad, used or expired. A ticket lives 60 s, so a
// clock far off or a connection that took that long to open is the usual
// cause; Listen stops rather than loop on it.
var ErrTicketRejected = errors.New("sundial: listen: the server rejected the ticket (close 4001)")

// ErrAccessRevoked is the server closing the listener's socket with code
// 4003: the API key was revoked or the project deleted. Listen stops: no
// reconnection can succeed with this key.
var ErrAccessRevoked = errors.New("sundial: listen: the API key was revoked or the project deleted (close 4003)")

// ListenHandler handles one delivery received through Listen, as a
// receiver's HandlerFunc does: its Result is sent back as ack, accept or
// nack. It is called concurrently; ctx ends when Listen stops.
type ListenHandler func(ctx context.Context, d *ListenDelivery) Result

// ListenDelivery is a hook received through Listen: the delivery as an
// HTTPS receiver would get it, and the attempt it is. The server checked
// the API key that opened the connection, so there is no signature to
// check here; Header and Body carry it, for a program that forwards them.
type ListenDelivery struct {
	// Delivery's Header and Body are set only with WithForward (from
	// Forward); AckURL and NackURL answer it later after an Accept.
	Delivery
	// Attempt counts from 1; MaxAttempts is the hook's retry budget.
	Attempt     int
	MaxAttempts int
	// SignedAt is the time the delivery's signature covers.
	SignedAt time.Time
	// Forward is the request exactly as it would be POSTed to the project's
	// domain; nil without WithForward.
	Forward *ForwardRequest
}

// ForwardRequest is a delivery's HTTPS request (the hook message's
// forwardRequest): its raw body and every header, signatures included.
// The other fields repeat single headers, as the hosted service's clients
// read them.
type ForwardRequest struct {
	Body              string            `json:"body"`
	Headers           map[string]string `json:"headers"`
	Signature         string            `json:"signature,omitempty"`
	Authorization     string            `json:"authorization,omitempty"`
	PosthookID        string            `json:"posthookId,omitempty"`
	PosthookTimestamp string            `json:"posthookTimestamp,omitempty"`
	PosthookSignature string            `json:"posthookSignature,omitempty"`
}

// ConnectionInfo is what the server says of a listener connection when it
// opens.
type ConnectionInfo struct {
	ConnectionID string    `json:"connectionId"`
	ProjectID    string    `json:"projectId"`
	ProjectName  string    `json:"projectName"`
	ServerTime   time.Time `json:"serverTime"`
}

// ListenEventType names what a ListenEvent reports.
type ListenEventType string

// The events an observer (WithListenObserver) receives.
const (
	// ListenConnected: a connection opened (Connection).
	ListenConnected ListenEventType = "connected"
	// ListenDisconnected: a connection ended or could not open (Err), and
	// the next try is in Retry.
	ListenDisconnected ListenEventType = "disconnected"
	// ListenClosing: the server is shutting down (Reason, Message); Listen
	// opens a new connection at once.
	ListenClosing ListenEventType = "closing"
	// ListenAckTimeout: a delivery got no answer within the server's 10 s
	// (HookID, Attempt); the attempt is recorded failed.
	ListenAckTimeout ListenEventType = "ack_timeout"
	// ListenAsyncAck: an Accept was recorded (HookID, AckURL, NackURL,
	// Deadline).
	ListenAsyncAck ListenEventType = "async_ack"
	// ListenServerError: the server could not use a message (Code,
	// Message); the connection stays open.
	ListenServerError ListenEventType = "error"
)

// ListenEvent is something that happened to a listener's connection; which
// fields are set depends on Type.
type ListenEvent struct {
	Type       ListenEventType
	Connection ConnectionInfo
	HookID     string
	Attempt    int
	AckURL     string
	NackURL    string
	Deadline   time.Time
	Code       string
	Reason     string
	Message    string
	Err        error
	Retry      time.Duration
}

// ListenOption configures Listen.
type ListenOption func(*listenConfig)

// WithForward asks the server for each delivery's HTTPS request
// (ListenDelivery.Forward, Header and Body), for a program that forwards
// deliveries to a local server as `sundial listen` does.
func WithForward() ListenOption {
	return func(c *listenConfig) { c.forward = true }
}

// WithMaxInFlight bounds the handler calls running at once (default 64). A
// delivery that arrives while the bound is reached waits for a slot; the
// connection keeps being read and pinged meanwhile.
func WithMaxInFlight(n int) ListenOption {
	return func(c *listenConfig) {
		if n > 0 {
			c.maxInFlight = n
		}
	}
}

// WithListenObserver calls fn for each ListenEvent. It is called from the
// listener's own goroutines, one event at a time per connection: it must
// return quickly.
func WithListenObserver(fn func(ListenEvent)) ListenOption {
	return func(c *listenConfig) { c.observe = fn }
}

type listenConfig struct {
	forward     bool
	maxInFlight int
	observe     func(ListenEvent)
	// idleTimeout: a connection that got no message for this long is dead
	// (the server pings every 30 s).
	idleTimeout time.Duration
	// The wait before a reconnection doubles from backoffMin to
	// backoffMax, and starts again from backoffMin after a connection that
	// lasted stableAfter.
	backoffMin, backoffMax, stableAfter time.Duration
	// wakeEvery is how often the wall clock is compared with the monotonic
	// one; a gap over wakeSlack means the machine slept.
	wakeEvery, wakeSlack time.Duration
	// answerTimeout bounds the write of one answer.
	answerTimeout time.Duration
	// wake, when set, is the wake signal instead of a channel of the
	// listener's own (tests signal a wake through it).
	wake chan struct{}
}

func defaultListenConfig() listenConfig {
	return listenConfig{
		maxInFlight:   64,
		observe:       func(ListenEvent) {},
		idleTimeout:   45 * time.Second,
		backoffMin:    time.Second,
		backoffMax:    30 * time.Second,
		stableAfter:   30 * time.Second,
		wakeEvery:     5 * time.Second,
		wakeSlack:     5 * time.Second,
		answerTimeout: 10 * time.Second,
	}
}

// Listen receives the project's deliveries through the gateway instead of
// at its domain, without a public address: while a listener is connected,
// the project's hooks come to it (docs/listener.md). Each delivery is
// handed to h in its own goroutine (at most 64 at once, WithMaxInFlight),
// and h's Result is sent back as ack, accept or nack.
//
// Listen gets a ticket (POST /v1/ws/ticket), opens the WebSocket, answers
// the server's pings, and reconnects for ever when the connection drops:
// after 1 s, doubling to 30 s, from 1 s again after a connection that
// lasted; at once when the server says it is closing or the machine wakes
// from sleep. A connection silent for 45 s is taken for dead.
//
// It returns, once the handler calls in flight have returned (their
// context ends with ctx), ctx's error when ctx ends (the socket closed
// with 1000), an
// error wrapping ErrTicketRejected or ErrAccessRevoked when the server
// closes the socket with 4001 or 4003, and the *APIError when the ticket
// request is refused with 401, 403 or 404 (a bad key, or a server without
// the listener), for none of these can be cured by trying again.
func (c *Client) Listen(ctx context.Context, h ListenHandler, opts ...ListenOption) error {
	if h == nil {
		return errors.New("sundial: listen: nil handler")
	}
	cfg := defaultListenConfig()
	for _, o := range opts {
		o(&cfg)
	}
	l := &listener{
		c:        c,
		h:        h,
		cfg:      cfg,
		wake:     cfg.wake,
		sessions: map[*session]struct{}{},
	}
	if l.wake == nil {
		l.wake = make(chan struct{}, 1)
	}
	return l.run(ctx)
}

// listener is one Listen call: its connections, the one current and those
// draining after the server said it was closing.
type listener struct {
	c   *Client
	h   ListenHandler
	cfg listenConfig
	// work is the handler calls running and waiting, across connections.
	work workQueue
	// wake is signalled when the machine woke from sleep.
	wake chan struct{}
	// wg counts every goroutine the listener started.
	wg sync.WaitGroup

	mu       sync.Mutex
	sessions map[*session]struct{}
}

func (l *listener) run(ctx context.Context) error {
	watchCtx, stopWatch := context.WithCancel(ctx)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.watchWake(watchCtx)
	}()
	err := l.loop(ctx)
	stopWatch()
	l.closeAll()
	l.wg.Wait()
	return err
}

// loop opens one connection after the other until a fatal error or ctx's
// end.
func (l *listener) loop(ctx context.Context) error {
	b := backoff{min: l.cfg.backoffMin, max: l.cfg.backoffMax}
	var delay time.Duration
	for {
		if err := l.pause(ctx, delay, &b); err != nil {
			return err
		}
		s, err := l.connect(ctx)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil && fatalTicketError(err):
			return err
		case err != nil:
			delay = b.next()
			l.cfg.observe(ListenEvent{Type: ListenDisconnected, Err: err, Retry: delay})
			continue
		}
		if delay, err = l.hold(ctx, s, &b); err != nil {
			return err
		}
	}
}

// pause waits delay before the next connection; a wake cuts it short.
func (l *listener) pause(ctx context.Context, delay time.Duration, b *backoff) error {
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-l.wake:
			b.reset()
		case <-t.C:
		}
	}
	// A wake noticed before the next connection opens is no reason to
	// drop it.
	select {
	case <-l.wake:
	default:
	}
	return nil
}

// hold keeps s until it ends, the server says it is closing, or the
// machine wakes; it returns the wait before the next connection, or the
// error that ends Listen.
func (l *listener) hold(ctx context.Context, s *session, b *backoff) (time.Duration, error) {
	opened := time.Now()
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-s.closing:
		// The server is going away: a new connection at once, while this
		// one answers what it holds (it closes itself once done).
		b.reset()
		return 0, nil
	case <-l.wake:
		// After a sleep the socket is most likely dead and the server has
		// let it go: do not wait 45 s to find out.
		s.conn.CloseNow()
		<-s.done
		b.reset()
		l.cfg.observe(ListenEvent{Type: ListenDisconnected, Err: errors.New("the machine woke from sleep")})
		return 0, nil
	case <-s.done:
	}
	if errors.Is(s.err, ErrTicketRejected) || errors.Is(s.err, ErrAccessRevoked) {
		return 0, s.err
	}
	if time.Since(opened) >= l.cfg.stableAfter {
		b.reset()
	}
	delay := b.next()
	l.cfg.observe(ListenEvent{Type: ListenDisconnected, Err: s.err, Retry: delay})
	return delay, nil
}

// fatalTicketError reports a ticket refusal that trying again cannot cure.
func fatalTicketError(err error) bool {
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
		return true
	}
	return false
}

// closeAll closes every connection still open with 1000 and lets their
// goroutines end.
func (l *listener) closeAll() {
	l.mu.Lock()
	open := make([]*session, 0, len(l.sessions))
	for s := range l.sessions {
		open = append(open, s)
	}
	l.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range open {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.close("listener stopped")
		}()
	}
	wg.Wait()
}

// listenTicket is the answer of POST /v1/ws/ticket.
type listenTicket struct {
	Ticket    string    `json:"ticket"`
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// ticket asks for a single-use ticket. Repeating the request only makes
// another ticket (an unused one expires), so it is retried like a GET.
func (l *listener) ticket(ctx context.Context) (listenTicket, error) {
	t, err := get[listenTicket](ctx, l.c, call{method: http.MethodPost, path: "/ws/ticket", idempotent: true})
	if err != nil {
		return t, fmt.Errorf("sundial: listen: ticket: %w", err)
	}
	if t.Ticket == "" || t.URL == "" {
		return t, errors.New("sundial: listen: ticket: the answer has no ticket or url")
	}
	return t, nil
}

// watchWake signals l.wake when the wall clock ran ahead of the monotonic
// clock between two ticks: Linux's monotonic clock stops while the machine
// is suspended, the wall clock does not.
func (l *listener) watchWake(ctx context.Context) {
	t := time.NewTicker(l.cfg.wakeEvery)
	defer t.Stop()
	prev := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		wall, mono := elapsed(prev, now)
		prev = now
		if slept(wall, mono, l.cfg.wakeSlack) {
			select {
			case l.wake <- struct{}{}:
			default:
			}
		}
	}
}

// elapsed is the time between prev and now by the wall clock and by the
// monotonic clock (time.Now carries both readings).
func elapsed(prev, now time.Time) (wall, mono time.Duration) {
	return now.Round(0).Sub(prev.Round(0)), now.Sub(prev)
}

// slept reports whether the wall clock advanced more than slack beyond the
// monotonic clock: the machine was suspended meanwhile. A wall clock set
// back is not a sleep.
func slept(wall, mono, slack time.Duration) bool {
	return wall-mono > slack
}

// backoff is the wait before each reconnection: min, doubling to max.
type backoff struct {
	min, max, cur time.Duration
}

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(2*b.cur, b.max)
	}
	return b.cur
}

func (b *backoff) reset() { b.cur = 0 }

// decodeEvent is the observer's view of the server's notices.
func decodeEvent(typ string, raw []byte) (ListenEvent, error) {
	var m struct {
		HookID   string    `json:"hookId"`
		Attempt  int       `json:"attempt"`
		AckURL   string    `json:"ackUrl"`
		NackURL  string    `json:"nackUrl"`
		Deadline time.Time `json:"deadline"`
		Code     string    `json:"code"`
		Reason   string    `json:"reason"`
		Message  string    `json:"message"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return ListenEvent{}, err
	}
	return ListenEvent{
		Type: ListenEventType(typ), HookID: m.HookID, Attempt: m.Attempt,
		AckURL: m.AckURL, NackURL: m.NackURL, Deadline: m.Deadline,
		Code: m.Code, Reason: m.Reason, Message: m.Message,
	}, nil
}
