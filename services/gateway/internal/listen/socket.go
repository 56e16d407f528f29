package listen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/asyncurl"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
)

// Close codes of the protocol.
const (
	// StatusBadTicket: the ticket was unknown, used or expired.
	StatusBadTicket websocket.StatusCode = 4001
	// StatusForbidden: the key was revoked or the project deleted.
	StatusForbidden websocket.StatusCode = 4003
)

// Bounds of one socket.
const (
	// outQueue is how many frames may wait for the socket's writer; a
	// client that lets more pile up is too slow and is disconnected, so
	// that its deliveries go to the project's other sockets.
	outQueue = 1024
	// writeTimeout bounds one frame's write.
	writeTimeout = 10 * time.Second
	// maxNackError bounds the error text of a nack that is passed on.
	maxNackError = 1 << 10
	// recentAnswers is how many answered or timed-out hooks a socket
	// remembers, to tell a second answer from an answer for a hook it was
	// never sent.
	recentAnswers = 1024
	// maxEcho bounds what of a client's own text an error message repeats.
	maxEcho = 64
)

// socket is one listener's WebSocket. Its handler goroutine reads; one
// writer goroutine writes every frame, in the order queued; a supervisor
// pings it and closes it when it falls silent.
type socket struct {
	hub     *Hub
	id      string
	grant   Grant
	forward bool
	ws      *websocket.Conn
	opened  time.Time

	out      chan outbound
	closeReq chan closeRequest
	heard    atomic.Int64 // Unix nanoseconds of the last client message
	hooks    atomic.Int64 // deliveries written, for the log

	mu      sync.Mutex
	gone    bool // closed to deliveries: its pending ones were handed back
	pending map[string]*pending
	recent  recentHooks
}

// outbound is a frame for the writer; hook is set on a hook message, whose
// time of writing the answer reports.
type outbound struct {
	frame []byte
	hook  *pending
}

type closeRequest struct {
	code   websocket.StatusCode
	reason string
}

// pending is a delivery written (or queued) to a socket, waiting for the
// listener's answer; it is answered exactly once, by whoever removes it
// from the socket's pending set.
type pending struct {
	delivery *eventv1.ListenerDelivery
	msg      *nats.Msg
	deadline time.Time
	sentAt   time.Time // guarded by socket.mu
	timer    *time.Timer
}

func newSocket(h *Hub, id string, g Grant, forward bool, ws *websocket.Conn) *socket {
	s := &socket{
		hub: h, id: id, grant: g, forward: forward, ws: ws, opened: time.Now(),
		out: make(chan outbound, outQueue), closeReq: make(chan closeRequest, 1),
		pending: make(map[string]*pending), recent: newRecentHooks(recentAnswers),
	}
	s.heard.Store(time.Now().UnixNano())
	return s
}

// run serves the socket until it closes, then hands its unanswered
// deliveries back to the hub.
func (s *socket) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { s.write(ctx) })
	wg.Go(func() { s.supervise(ctx) })
	err := s.read(ctx)
	cancel()
	s.hub.remove(s)
	s.handBack()
	wg.Wait()
	_ = s.ws.CloseNow()
	return err
}

// read handles the client's messages until the socket fails or closes.
func (s *socket) read(ctx context.Context) error {
	for {
		_, data, err := s.ws.Read(ctx)
		if err != nil {
			return err
		}
		s.heard.Store(time.Now().UnixNano())
		s.handle(data)
	}
}

// handle acts on one client message. A message it cannot use is answered
// with an error message and changes nothing.
func (s *socket) handle(data []byte) {
	var m clientMessage
	if err := json.Unmarshal(data, &m); err != nil {
		s.sendError(CodeInvalidJSON, "the message is not a JSON object of the protocol: "+clip(err.Error()))
		return
	}
	switch m.Type {
	case typePong:
	case typeAck, typeNack, typeAccept:
		s.answer(m)
	default:
		s.sendError(CodeUnknownType, fmt.Sprintf("unknown message type %q: want pong, ack, accept or nack", clip(m.Type)))
	}
}

// answer passes the listener's answer for a hook on to the dispatcher.
func (s *socket) answer(m clientMessage) {
	if m.HookID == "" {
		s.sendError(CodeInvalidMessage, m.Type+": hookId is required")
		return
	}
	a := &eventv1.ListenerAnswer{ConnectionId: s.id}
	var asyncWait time.Duration
	switch m.Type {
	case typeAck:
		a.Kind = eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_ACK
	case typeNack:
		a.Kind = eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_NACK
		a.Error = bound(m.Error, maxNackError)
	case typeAccept:
		secs, ok := acceptTimeout(m.Timeout)
		if !ok {
			s.sendError(CodeInvalidMessage, "accept: timeout must be a whole number of seconds")
			return
		}
		a.Kind = eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_ACCEPT
		a.AsyncTimeoutSeconds = secs
		asyncWait = s.grant.AsyncTimeout
		if secs > 0 {
			asyncWait = time.Duration(secs) * time.Second
		}
	}
	p, code := s.take(m.HookID)
	if p == nil {
		s.sendError(code, notTaken(code, m.HookID))
		return
	}
	p.timer.Stop()
	s.hub.reply(p, a, s.sentAt(p))
	if a.Kind == eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_ACCEPT {
		s.send(encode(asyncAckMessage{
			Type: typeAsyncAck, HookID: m.HookID, AckURL: p.delivery.GetAckUrl(), NackURL: p.delivery.GetNackUrl(),
			Deadline: rfc3339(time.Now().Add(asyncWait)),
		}))
	}
}

// acceptTimeout reads an accept's timeout, a whole number of seconds:
// absent, or out of the async bounds, it is 0 (the project's async
// timeout), as a 202's header is.
func acceptTimeout(raw json.RawMessage) (int32, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, true
	}
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil || v < 0 || v != math.Trunc(v) {
		return 0, false
	}
	if v > float64(asyncurl.MaxTimeoutSecs) || !asyncurl.ValidTimeout(int64(v)) {
		return 0, true
	}
	return int32(v), true
}

func notTaken(code, hookID string) string {
	if code == CodeAlreadyAnswered {
		return fmt.Sprintf("hook %q was already answered or timed out on this connection", clip(hookID))
	}
	return fmt.Sprintf("hook %q was not sent on this connection", clip(hookID))
}

// deliver queues the hook message of d to the socket; false when the
// socket takes no more deliveries (it is closing, or too slow), and the
// caller tries another.
func (s *socket) deliver(d *eventv1.ListenerDelivery, msg *nats.Msg, deadline time.Time) bool {
	frame := hookFrame(d, s.hub.names, s.forward)
	id := d.GetHookId()
	p := &pending{delivery: d, msg: msg, deadline: deadline}
	s.mu.Lock()
	if s.gone {
		s.mu.Unlock()
		return false
	}
	old := s.pending[id]
	if old != nil {
		// The dispatcher gave up on the earlier attempt (its request timed
		// out) and sent the hook again: the earlier one can only be gone.
		old.timer.Stop()
	}
	s.pending[id] = p
	p.timer = time.AfterFunc(time.Until(deadline), func() { s.expire(p) })
	s.mu.Unlock()
	if old != nil {
		s.hub.reply(old, gone(s.id), time.Time{})
	}
	if !s.enqueue(outbound{frame: frame, hook: p}) {
		// run hands p back to the hub when the socket ends.
		return true
	}
	s.hooks.Add(1)
	return true
}

// expire answers a delivery the listener did not answer in time. When the
// client has sent nothing at all since the hook went out (not even a pong
// to the probes that supervise sends while deliveries wait), the connection
// is presumed dead, not slow — a network cut leaves a socket open and
// silent for as long as the silence interval: the hook is answered GONE
// (the dispatcher defers it, no attempt is counted) and the socket is
// closed, so that the project's next hooks are held for the resume window
// instead of failing one after another against it.
func (s *socket) expire(p *pending) {
	id := p.delivery.GetHookId()
	s.mu.Lock()
	if s.pending[id] != p {
		s.mu.Unlock()
		return
	}
	delete(s.pending, id)
	s.recent.add(id)
	sent := p.sentAt
	s.mu.Unlock()
	if s.silentSince(sent) {
		s.hub.reply(p, gone(s.id), sent)
		// No close handshake: nothing would carry it.
		_ = s.ws.CloseNow()
		return
	}
	s.hub.reply(p, &eventv1.ListenerAnswer{
		Kind: eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_TIMEOUT, Error: "ack_timeout", ConnectionId: s.id,
	}, sent)
	s.send(encode(ackTimeoutMessage{Type: typeAckTimeout, HookID: id, Attempt: p.delivery.GetAttempt()}))
}

// silentSince reports whether nothing was heard from the client since the
// hook was sent; a hook never written counts as silent.
func (s *socket) silentSince(sent time.Time) bool {
	return sent.IsZero() || time.Unix(0, s.heard.Load()).Before(sent)
}

// take removes the pending delivery of a hook for its answer; nil and the
// error code when there is none.
func (s *socket) take(hookID string) (*pending, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pending[hookID]
	if p == nil {
		if s.recent.has(hookID) {
			return nil, CodeAlreadyAnswered
		}
		return nil, CodeUnknownHook
	}
	delete(s.pending, hookID)
	s.recent.add(hookID)
	return p, ""
}

func (s *socket) sentAt(p *pending) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return p.sentAt
}

// handBack closes the socket to deliveries and gives its unanswered ones
// to the project's other sockets, or answers them GONE.
func (s *socket) handBack() {
	s.mu.Lock()
	s.gone = true
	left := make([]*pending, 0, len(s.pending))
	for id, p := range s.pending {
		p.timer.Stop()
		left = append(left, p)
		delete(s.pending, id)
	}
	s.mu.Unlock()
	for _, p := range left {
		s.hub.route(p.delivery, p.msg, p.deadline)
	}
}

// send queues a frame other than a hook message.
func (s *socket) send(frame []byte) {
	s.enqueue(outbound{frame: frame})
}

// enqueue queues a frame for the writer without waiting. A full queue
// means the client does not read: the socket is closed.
func (s *socket) enqueue(o outbound) bool {
	select {
	case s.out <- o:
		return true
	default:
		s.end(websocket.StatusPolicyViolation, "too slow: messages not read")
		_ = s.ws.CloseNow()
		return false
	}
}

func (s *socket) sendError(code, message string) {
	s.send(encode(errorMessage{Type: typeError, Code: code, Message: message}))
}

// end asks the writer to write what is queued, then close the socket.
func (s *socket) end(code websocket.StatusCode, reason string) {
	select {
	case s.closeReq <- closeRequest{code: code, reason: reason}:
	default: // already asked
	}
}

// write writes the queued frames in order, until the socket closes.
func (s *socket) write(ctx context.Context) {
	for {
		select {
		case o := <-s.out:
			if !s.writeFrame(ctx, o) {
				return
			}
		case c := <-s.closeReq:
			for n := len(s.out); n > 0; n-- {
				if !s.writeFrame(ctx, <-s.out) {
					return
				}
			}
			_ = s.ws.Close(c.code, c.reason)
			return
		case <-ctx.Done():
			return
		}
	}
}

func (s *socket) writeFrame(ctx context.Context, o outbound) bool {
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	if o.hook != nil {
		s.mu.Lock()
		o.hook.sentAt = time.Now()
		s.mu.Unlock()
	}
	if err := s.ws.Write(wctx, websocket.MessageText, o.frame); err != nil {
		_ = s.ws.CloseNow() // the reader stops, and run ends the socket
		return false
	}
	return true
}

// waiting reports whether deliveries wait for the client's answers.
func (s *socket) waiting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending) > 0
}

// supervise pings the client and closes the socket when nothing was heard
// from it for the silence interval.
func (s *socket) supervise(ctx context.Context) {
	iv := s.hub.cfg.Intervals
	ping := time.NewTicker(iv.Ping)
	defer ping.Stop()
	check := time.NewTicker(max(iv.Silence/6, time.Millisecond))
	defer check.Stop()
	probe := time.NewTicker(iv.Probe)
	defer probe.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ping.C:
			s.send(encode(pingMessage{Type: typePing, Timestamp: rfc3339(now)}))
		case now := <-probe.C:
			// While deliveries wait for their answers, a client quiet for
			// a Probe is pinged: a live one answers at once, even with its
			// handlers busy, which tells a slow listener (ack_timeout) from
			// a dead connection (GONE: expire).
			if s.waiting() && now.Sub(time.Unix(0, s.heard.Load())) > iv.Probe {
				s.send(encode(pingMessage{Type: typePing, Timestamp: rfc3339(now)}))
			}
		case now := <-check.C:
			if now.Sub(time.Unix(0, s.heard.Load())) > iv.Silence {
				s.end(websocket.StatusGoingAway, "no message from the client in "+iv.Silence.String())
				return
			}
		}
	}
}

// logClose is the socket's one log line.
func (s *socket) logClose(log *slog.Logger, err error) {
	status := websocket.CloseStatus(err)
	level := slog.LevelInfo
	if status == -1 && !errors.Is(err, context.Canceled) && !isClosed(err) {
		level = slog.LevelWarn
	}
	log.Log(context.Background(), level, "listener socket closed",
		"connection_id", s.id, "project_id", s.grant.ProjectID, "forward", s.forward,
		"hooks", s.hooks.Load(), "duration", time.Since(s.opened).Round(time.Millisecond),
		"close_status", int(status), "error", errText(err))
}

func isClosed(err error) bool {
	return err != nil && strings.Contains(err.Error(), "use of closed network connection")
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// gone is the answer for a delivery no socket took.
func gone(connectionID string) *eventv1.ListenerAnswer {
	return &eventv1.ListenerAnswer{Kind: eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_GONE, ConnectionId: connectionID}
}

// withTiming completes an answer with when the hook was written and how
// long the answer took.
func withTiming(a *eventv1.ListenerAnswer, sent time.Time) *eventv1.ListenerAnswer {
	if !sent.IsZero() {
		a.SentAt = timestamppb.New(sent)
		a.Duration = durationpb.New(time.Since(sent))
	}
	return a
}

// bound cuts s to at most n bytes, on a character boundary.
func bound(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// clip bounds what an error message repeats of the client's text.
func clip(s string) string {
	return bound(s, maxEcho)
}

// recentHooks remembers the last hooks answered on a socket, up to its
// bound; it grows as answers come, so that an idle socket costs nothing.
type recentHooks struct {
	bound int
	ring  []string
	next  int
	set   map[string]struct{}
}

func newRecentHooks(bound int) recentHooks {
	return recentHooks{bound: bound, set: make(map[string]struct{})}
}

func (r *recentHooks) add(id string) {
	if _, ok := r.set[id]; ok {
		return
	}
	if len(r.ring) < r.bound {
		r.ring = append(r.ring, id)
	} else {
		delete(r.set, r.ring[r.next])
		r.ring[r.next] = id
		r.next = (r.next + 1) % r.bound
	}
	r.set[id] = struct{}{}
}

func (r *recentHooks) has(id string) bool {
	_, ok := r.set[id]
	return ok
}
