package sundial

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
)

// maxListenMessage bounds a message from the server: a hook carries its
// data and, forwarded, the request body again.
const maxListenMessage = 16 << 20

// maxNackError bounds a nack's error text: the server closes a socket that
// sends more than 64 KiB, and keeps only the start of it anyway.
const maxNackError = 4 << 10

// session is one WebSocket connection of a listener.
type session struct {
	l    *listener
	conn *websocket.Conn
	// handlerCtx is the context of the handler calls: Listen's.
	handlerCtx context.Context

	// done is closed when the connection has ended, with err saying why.
	done chan struct{}
	err  error
	// closing is closed when the server said it is shutting down.
	closing     chan struct{}
	closingOnce sync.Once

	mu       sync.Mutex
	inFlight int
	draining bool
}

// connect gets a ticket, opens the socket and starts reading it.
func (l *listener) connect(ctx context.Context) (*session, error) {
	t, err := l.ticket(ctx)
	if err != nil {
		return nil, err
	}
	target, err := dialURL(t, l.cfg.forward)
	if err != nil {
		return nil, err
	}
	// The client's own transport (TLS settings, proxies); its per-request
	// timeout would cut the socket, so the dial has its own bound.
	hc := *l.c.http
	hc.Timeout = 0
	dialCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(dialCtx, target, &websocket.DialOptions{
		HTTPClient: &hc,
		HTTPHeader: http.Header{"User-Agent": {l.c.userAgent}},
	})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return nil, dialError(err, t.Ticket)
	}
	conn.SetReadLimit(maxListenMessage)
	s := &session{
		l: l, conn: conn, handlerCtx: ctx,
		done: make(chan struct{}), closing: make(chan struct{}),
	}
	l.mu.Lock()
	l.sessions[s] = struct{}{}
	l.mu.Unlock()
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		s.read()
	}()
	return s, nil
}

// dialURL is the ticket's url with the ticket (and forward) in its query.
func dialURL(t listenTicket, forward bool) (string, error) {
	u, err := url.Parse(t.URL)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss" && u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("sundial: listen: the ticket's url %q is not a WebSocket address", t.URL)
	}
	q := u.Query()
	q.Set("ticket", t.Ticket)
	if forward {
		q.Set("forward", "true")
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// dialError says why the socket did not open without the ticket, a
// credential until it is redeemed: the HTTP client's errors quote the URL.
func dialError(err error, ticket string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("sundial: listen: open the socket: %s %s: %w", ue.Op, redactTicket(ue.URL), ue.Err)
	}
	return &redactedError{
		msg: "sundial: listen: open the socket: " + strings.ReplaceAll(err.Error(), ticket, "REDACTED"),
		err: err,
	}
}

// redactTicket is raw with its ticket parameter blanked.
func redactTicket(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the ticket's url"
	}
	q := u.Query()
	if q.Has("ticket") {
		q.Set("ticket", "REDACTED")
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// redactedError is an error whose message had a secret taken out.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// read handles the server's messages until the connection ends.
func (s *session) read() {
	defer func() {
		s.l.mu.Lock()
		delete(s.l.sessions, s)
		s.l.mu.Unlock()
		close(s.done)
	}()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), s.l.cfg.idleTimeout)
		typ, raw, err := s.conn.Read(ctx)
		idle := ctx.Err() != nil
		cancel()
		if err != nil {
			s.err = s.readError(err, idle)
			s.conn.CloseNow()
			return
		}
		if typ == websocket.MessageText {
			s.handle(raw)
		}
	}
}

// readError says why the connection ended.
func (s *session) readError(err error, idle bool) error {
	var ce websocket.CloseError
	switch {
	case errors.As(err, &ce) && ce.Code == closeTicketRejected:
		return fmt.Errorf("%w: %s", ErrTicketRejected, ce.Reason)
	case errors.As(err, &ce) && ce.Code == closeAccessRevoked:
		return fmt.Errorf("%w: %s", ErrAccessRevoked, ce.Reason)
	case idle:
		return fmt.Errorf("sundial: listen: no message from the server for %s: connection taken for dead", s.l.cfg.idleTimeout)
	}
	return fmt.Errorf("sundial: listen: connection lost: %w", err)
}

// handle acts on one message. What it does not know it ignores: the
// server may add types.
func (s *session) handle(raw []byte) {
	var head struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &head) != nil {
		return
	}
	switch head.Type {
	case "ping":
		s.send(map[string]string{"type": "pong"})
	case "hook":
		s.dispatch(raw)
	case "connected":
		var info ConnectionInfo
		if json.Unmarshal(raw, &info) == nil {
			s.l.cfg.observe(ListenEvent{Type: ListenConnected, Connection: info})
		}
	case "closing", "error", "ack_timeout", "async_ack":
		if ev, err := decodeEvent(head.Type, raw); err == nil {
			s.l.cfg.observe(ev)
		}
		if head.Type == "closing" {
			s.drain()
		}
	}
}

// hookMessage is the server's hook message.
type hookMessage struct {
	ID             string          `json:"id"`
	Path           string          `json:"path"`
	Data           json.RawMessage `json:"data"`
	PostAt         time.Time       `json:"postAt"`
	PostedAt       time.Time       `json:"postedAt"`
	CreatedAt      time.Time       `json:"createdAt"`
	UpdatedAt      time.Time       `json:"updatedAt"`
	Timestamp      int64           `json:"timestamp"`
	Attempt        int             `json:"attempt"`
	MaxAttempts    int             `json:"maxAttempts"`
	AckURL         string          `json:"ackUrl"`
	NackURL        string          `json:"nackUrl"`
	ForwardRequest *ForwardRequest `json:"forwardRequest"`
}

func (m *hookMessage) delivery() *ListenDelivery {
	d := &ListenDelivery{
		Delivery: Delivery{
			ID: m.ID, Path: m.Path, Data: m.Data,
			PostAt: m.PostAt, PostedAt: m.PostedAt, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt,
			AckURL: m.AckURL, NackURL: m.NackURL,
		},
		Attempt: m.Attempt, MaxAttempts: m.MaxAttempts,
		Forward: m.ForwardRequest,
	}
	if m.Timestamp > 0 {
		d.SignedAt = time.Unix(m.Timestamp, 0).UTC()
	}
	if f := m.ForwardRequest; f != nil {
		d.Body = []byte(f.Body)
		d.Header = make(http.Header, len(f.Headers))
		for k, v := range f.Headers {
			// Canonicalised, as a Go server would have them; Forward keeps
			// them as Sundial spells them, for a program that forwards.
			d.Header.Set(k, v)
		}
	}
	return d
}

// dispatch runs the handler for one hook, at once if fewer than
// maxInFlight are running, else after those that came before it (first in,
// first out: a backlog is handled in the order the server sent it, the
// order its hooks fell due). Waiting does not hold up the reading of the
// connection (pings are still answered, other answers still go out); a
// hook that waits longer than the server's ack timeout is reported by the
// server as ack_timeout, the honest answer for a handler that cannot keep
// up. Only beyond maxBacklog waiting hooks is one nacked at once
// ("listener busy"): the wait is bounded.
func (s *session) dispatch(raw []byte) {
	var m hookMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		var id struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(raw, &id) == nil && id.ID != "" {
			s.answer(id.ID, Nack(fmt.Errorf("the listener could not read the hook message: %w", err)))
		}
		return
	}
	s.mu.Lock()
	s.inFlight++
	s.mu.Unlock()
	switch s.l.work.add(job{s: s, m: m}, s.l.cfg.maxInFlight) {
	case jobStarted:
		s.l.wg.Add(1)
		go s.l.work.run(&s.l.wg, job{s: s, m: m})
	case jobRefused:
		s.answer(m.ID, Nack(fmt.Errorf("listener busy: %d deliveries waiting for a handler", maxBacklog)))
		s.finished()
	}
}

// maxBacklog bounds the hooks waiting for a handler; it is far above what
// the server has in flight to one connection at the delivery rates Sundial
// sustains, so it only trips on a handler that has stopped.
const maxBacklog = 10000

// job is one hook for the handler.
type job struct {
	s *session
	m hookMessage
}

// do runs the handler for the job and answers, unless its connection or
// the listener has ended meanwhile (the server hands the hook out again).
func (j job) do() {
	defer j.s.finished()
	select {
	case <-j.s.done:
		return
	case <-j.s.handlerCtx.Done():
		return
	default:
	}
	j.s.answer(j.m.ID, j.s.call(j.m.delivery()))
}

// workQueue runs jobs on at most maxInFlight goroutines, the rest waiting
// in a queue, first in first out.
type workQueue struct {
	mu      sync.Mutex
	running int
	queue   []job
}

type jobFate int

const (
	jobStarted jobFate = iota // the caller starts run with it
	jobQueued
	jobRefused // the queue is full
)

func (w *workQueue) add(j job, maxInFlight int) jobFate {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.running < maxInFlight:
		w.running++
		return jobStarted
	case len(w.queue) >= maxBacklog:
		return jobRefused
	}
	w.queue = append(w.queue, j)
	return jobQueued
}

// run does j, then the queued jobs one after another until none is left.
func (w *workQueue) run(wg *sync.WaitGroup, j job) {
	defer wg.Done()
	for {
		j.do()
		w.mu.Lock()
		if len(w.queue) == 0 {
			w.running--
			w.mu.Unlock()
			return
		}
		j = w.queue[0]
		w.queue[0] = job{}
		w.queue = w.queue[1:]
		w.mu.Unlock()
	}
}

// call runs the handler; a panic is a nack, not a crash of the program.
func (s *session) call(d *ListenDelivery) (res Result) {
	defer func() {
		if r := recover(); r != nil {
			res = Nack(fmt.Errorf("handler panicked: %v", r))
		}
	}()
	return s.l.h(s.handlerCtx, d)
}

// answer sends the handler's result for hook id.
func (s *session) answer(id string, res Result) {
	switch res.status {
	case http.StatusAccepted:
		secs := int64(0)
		if res.timeout > 0 {
			secs = int64(min(res.timeout, maxAsyncTimeout)+time.Second-1) / int64(time.Second)
		}
		s.send(map[string]any{"type": "accept", "hookId": id, "timeout": secs})
	case http.StatusInternalServerError:
		s.send(map[string]any{"type": "nack", "hookId": id, "error": truncate(res.err.Error(), maxNackError)})
	default:
		s.send(map[string]any{"type": "ack", "hookId": id})
	}
}

// send writes one message. A failed write ends nothing by itself: the
// read loop finds the connection broken, and the server times the hook
// out.
func (s *session) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.l.cfg.answerTimeout)
	defer cancel()
	_ = s.conn.Write(ctx, websocket.MessageText, b)
}

// drain marks the connection as going away: it answers the hooks it holds,
// then closes.
func (s *session) drain() {
	s.closingOnce.Do(func() { close(s.closing) })
	s.mu.Lock()
	s.draining = true
	idle := s.inFlight == 0
	s.mu.Unlock()
	if idle {
		s.closeAsync("drained")
	}
}

// finished counts a handler call done, and closes a draining connection
// that has answered everything.
func (s *session) finished() {
	s.mu.Lock()
	s.inFlight--
	last := s.draining && s.inFlight == 0
	s.mu.Unlock()
	if last {
		s.closeAsync("drained")
	}
}

// closeAsync closes the connection without holding up the read loop,
// which must go on reading for the close handshake to complete.
func (s *session) closeAsync(reason string) {
	s.l.wg.Add(1)
	go func() {
		defer s.l.wg.Done()
		s.close(reason)
	}()
}

// close closes the connection with 1000 and waits for its read loop.
func (s *session) close(reason string) {
	_ = s.conn.Close(websocket.StatusNormalClosure, reason)
	<-s.done
}

// truncate cuts s to at most n bytes of valid UTF-8.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return strings.TrimSpace(s) + "…"
}
