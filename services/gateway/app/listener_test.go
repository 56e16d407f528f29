package app_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/internal/listen"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

// The listener's protocol, from docs/listener.md: these tests are its
// conformance test. A NATS request on the real subject stands for the
// dispatcher; coder/websocket's client for the listener.

// listenerBundle is a gateway with a NATS connection of the test's own.
type listenerBundle struct {
	bundle
	nc        *nats.Conn
	projectID uuid.UUID
}

func setupListener(t *testing.T, iv listen.Intervals) listenerBundle {
	t.Helper()
	var natsURL string
	b := setup(t, func(c *app.Config) {
		natsURL = c.NATSURL
		c.ListenerIntervals = iv
	})
	nc, err := nats.Connect(natsURL)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	return listenerBundle{bundle: b, nc: nc, projectID: uuid.MustParse(b.creds.ProjectID)}
}

// ticketJSON is POST /v1/ws/ticket's answer, decoded strictly.
type ticketJSON struct {
	Data struct {
		Ticket    string `json:"ticket"`
		URL       string `json:"url"`
		ExpiresAt string `json:"expiresAt"`
	} `json:"data"`
}

// ticket asks for a ticket, checked against the OpenAPI document.
func (b listenerBundle) ticket() ticketJSON {
	b.t.Helper()
	res := b.do(http.MethodPost, "/v1/ws/ticket", nil)
	require.Equal(b.t, http.StatusOK, res.status, string(res.body))
	return decodeStrict[ticketJSON](b.t, res.body)
}

// wsClient is a listener's socket.
type wsClient struct {
	t *testing.T
	c *websocket.Conn
}

// message is a server message: its members, raw.
type message map[string]json.RawMessage

func (m message) str(t *testing.T, key string) string {
	t.Helper()
	var s string
	require.NoError(t, json.Unmarshal(m[key], &s), "%s: %s", key, m[key])
	return s
}

func (m message) num(t *testing.T, key string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, json.Unmarshal(m[key], &n), "%s: %s", key, m[key])
	return n
}

// hasFields checks that the message has exactly the protocol's fields.
func (m message) hasFields(t *testing.T, fields ...string) {
	t.Helper()
	require.ElementsMatch(t, append([]string{"type"}, fields...), slices.Collect(maps.Keys(m)), "fields of %v", m)
}

// dial opens a socket with a fresh ticket; query is added to the ticket's
// (e.g. "&forward=true").
func (b listenerBundle) dial(query string) *wsClient {
	b.t.Helper()
	tk := b.ticket()
	return dialURL(b.t, tk.Data.URL+"?ticket="+tk.Data.Ticket+query)
}

func dialURL(t *testing.T, url string) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, res, err := websocket.Dial(ctx, url, nil)
	require.NoError(t, err)
	if res.Body != nil {
		_ = res.Body.Close()
	}
	c.SetReadLimit(1 << 20)
	t.Cleanup(func() { _ = c.CloseNow() })
	return &wsClient{t: t, c: c}
}

// read returns the next server message, pings included.
func (w *wsClient) read() message {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.t.Context(), 10*time.Second)
	defer cancel()
	typ, data, err := w.c.Read(ctx)
	require.NoError(w.t, err)
	require.Equal(w.t, websocket.MessageText, typ)
	var m message
	require.NoError(w.t, json.Unmarshal(data, &m), "%s", data)
	return m
}

// expect returns the next message other than a ping, which must be of
// type typ.
func (w *wsClient) expect(typ string) message {
	w.t.Helper()
	for {
		m := w.read()
		got := m.str(w.t, "type")
		if got == "ping" && typ != "ping" {
			continue
		}
		require.Equal(w.t, typ, got, "message %v", m)
		return m
	}
}

func (w *wsClient) send(v any) {
	w.t.Helper()
	b, err := json.Marshal(v)
	require.NoError(w.t, err)
	w.sendRaw(b)
}

func (w *wsClient) sendRaw(b []byte) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.t.Context(), 10*time.Second)
	defer cancel()
	require.NoError(w.t, w.c.Write(ctx, websocket.MessageText, b))
}

// closedWith reads until the server closes the socket, skipping what it
// sends before, and returns the close code.
func (w *wsClient) closedWith() websocket.StatusCode {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.t.Context(), 10*time.Second)
	defer cancel()
	for range 1000 {
		if _, _, err := w.c.Read(ctx); err != nil {
			return websocket.CloseStatus(err)
		}
	}
	w.t.Fatal("the socket was not closed")
	return 0
}

// connected reads the connected message and returns the connection id.
func (w *wsClient) connected() string {
	w.t.Helper()
	return w.expect("connected").str(w.t, "connectionId")
}

// delivery is a ListenerDelivery of the project, as the dispatcher sends.
func delivery(projectID uuid.UUID, attempt int32) *eventv1.ListenerDelivery {
	id := uuid.NewString()
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	body := `{"id":"` + id + `","path":"/orders","data":{"n":1}}`
	return &eventv1.ListenerDelivery{
		HookId: id, ProjectId: projectID.String(), Attempt: attempt, MaxAttempts: 6, Path: "/orders",
		Data: []byte(`{"n":1}`), PostAt: timestamppb.New(at), PostedAt: timestamppb.New(at.Add(time.Second)),
		CreatedAt: timestamppb.New(at.Add(-time.Hour)), UpdatedAt: timestamppb.New(at.Add(-time.Minute)),
		Timestamp: at.Unix(), AckUrl: "https://sundial.example.com/v1/async/" + id + "/1/t/ack",
		NackUrl: "https://sundial.example.com/v1/async/" + id + "/1/t/nack", Body: []byte(body),
		Headers: map[string]string{
			"Content-Type": "application/json", "Sundial-Id": id, "Sundial-Timestamp": "1795694400",
			"Sundial-Signature": "v1,abc", "X-Sundial-Signature": "def", "Authorization": "Bearer x",
		},
	}
}

type answerResult struct {
	a   *eventv1.ListenerAnswer
	err error
}

// request sends d as the dispatcher does, on the real subject with its
// 12 s timeout; the answer comes on the channel.
func (b listenerBundle) request(d *eventv1.ListenerDelivery) <-chan answerResult {
	b.t.Helper()
	data, err := proto.Marshal(d)
	require.NoError(b.t, err)
	out := make(chan answerResult, 1)
	go func() {
		m, err := b.nc.Request(listen.Subject+d.GetProjectId(), data, 12*time.Second)
		if err != nil {
			out <- answerResult{err: err}
			return
		}
		var a eventv1.ListenerAnswer
		out <- answerResult{a: &a, err: proto.Unmarshal(m.Data, &a)}
	}()
	return out
}

func answerOf(t *testing.T, ch <-chan answerResult) *eventv1.ListenerAnswer {
	t.Helper()
	select {
	case r := <-ch:
		require.NoError(t, r.err)
		return r.a
	case <-time.After(15 * time.Second):
		t.Fatal("no answer to the delivery")
		return nil
	}
}

var hookFields = []string{"id", "path", "data", "postAt", "postedAt", "createdAt", "updatedAt", "timestamp",
	"attempt", "maxAttempts", "ackUrl", "nackUrl"}

func TestListenerTicketAndConnected(t *testing.T) {
	t.Parallel()
	b := setupListener(t, listen.Intervals{})
	before := time.Now()
	tk := b.ticket()
	require.Len(t, tk.Data.Ticket, 43, "32 random bytes, base64url")
	require.Equal(t, "ws://"+b.app.Addr()+"/v1/ws", tk.Data.URL, "no SUNDIAL_PUBLIC_URL: the request's address")
	exp, err := time.Parse(time.RFC3339, tk.Data.ExpiresAt)
	require.NoError(t, err)
	require.WithinDuration(t, before.Add(listen.TicketTTL), exp, 5*time.Second)

	n, err := b.tq.CountListenerTickets(b.ctx, b.projectID)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	sum := sha256.Sum256([]byte(tk.Data.Ticket))
	_, err = b.q.RedeemListenerTicket(b.ctx, sum[:]) // only the hash finds it
	require.NoError(t, err)
	c := dialURL(t, tk.Data.URL+"?ticket="+tk.Data.Ticket)
	require.Equal(t, listen.StatusBadTicket, c.closedWith(), "redeemed already")

	w := b.dial("")
	m := w.expect("connected")
	m.hasFields(t, "connectionId", "projectId", "projectName", "serverTime")
	require.Equal(t, b.creds.ProjectID, m.str(t, "projectId"))
	require.Equal(t, "Acme", m.str(t, "projectName"))
	_, err = uuid.Parse(m.str(t, "connectionId"))
	require.NoError(t, err)
	st, err := time.Parse(time.RFC3339Nano, m.str(t, "serverTime"))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), st, 10*time.Second)
	require.True(t, strings.HasSuffix(m.str(t, "serverTime"), "Z"), "UTC")

	n, err = b.tq.CountListenerTickets(b.ctx, b.projectID)
	require.NoError(t, err)
	require.Zero(t, n, "redeemed tickets are deleted")
	require.NotContains(t, b.logs.String(), tk.Data.Ticket, "tickets are never logged")
}

func TestListenerTicketNeedsAnAPIKey(t *testing.T) {
	t.Parallel()
	b := setupListener(t, listen.Intervals{})
	res := b.do(http.MethodPost, "/v1/ws/ticket", nil, header("X-API-Key", ""))
	require.Equal(t, http.StatusUnauthorized, res.status)
}

func TestListenerTicketURLIsThePublicURL(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *app.Config) { c.PublicURL = "https://sundial.example.com/base" })
	res := b.do(http.MethodPost, "/v1/ws/ticket", nil)
	require.Equal(t, http.StatusOK, res.status)
	require.Equal(t, "wss://sundial.example.com/base/v1/ws", decodeStrict[ticketJSON](t, res.body).Data.URL)
}

func TestListenerBadTicketsClose4001(t *testing.T) {
	t.Parallel()
	b := setupListener(t, listen.Intervals{})
	base := "ws://" + b.app.Addr() + "/v1/ws"
	for _, q := range []string{"", "?ticket=", "?ticket=nope", "?ticket=" + strings.Repeat("x", 500)} {
		require.Equal(t, listen.StatusBadTicket, dialURL(t, base+q).closedWith(), "query %q", q)
	}

	expired := b.ticket()
	_, err := b.tq.ExpireListenerTickets(b.ctx, b.projectID)
	require.NoError(t, err)
	require.Equal(t, listen.StatusBadTicket, dialURL(t, expired.Data.URL+"?ticket="+expired.Data.Ticket).closedWith())
}

func TestListenerRevokedKeyCloses4003(t *testing.T) {
	t.Parallel()
	b := setupListener(t, listen.Intervals{Recheck: 20 * time.Millisecond})
	w := b.dial("")
	w.connected()
	tk := b.ticket()
	revoked, err := apiKeyRevoke(b.bundle)
	require.NoError(t, err)
	require.True(t, revoked)
	require.Equal(t, listen.StatusForbidden, w.closedWith(), "checked while open")
	require.Equal(t, listen.StatusForbidden, dialURL(t, tk.Data.URL+"?ticket="+tk.Data.Ticket).closedWith(),
		"checked at connect")
}

func TestListenerDeletedProjectCloses4003(t *testing.T) {
	t.Parallel()
	b := setupListener(t, listen.Intervals{Recheck: 20 * time.Millisecond})
	w := b.dial("")
	w.connected()
	_, err := b.tq.DeleteProject(b.ctx, b.projectID)
	require.NoError(t, err)
	require.Equal(t, listen.StatusForbidden, w.closedWith())
}

func TestListenerOversizedMessageCloses1009(t *testing.T) {
	t.Parallel()
	b := setupListener(t, listen.Intervals{})
	w := b.dial("")
	w.connected()
	// At the limit: used (an unknown type), and the socket stays open.
	atLimit := `{"type":"` + strings.Repeat("x", listen.MaxMessageBytes-11) + `"}`
	require.Len(t, atLimit, listen.MaxMessageBytes)
	w.sendRaw([]byte(atLimit))
	require.Equal(t, listen.CodeUnknownType, w.expect("error").str(t, "code"))
	w.sendRaw([]byte(`{"type":"` + strings.Repeat("x", listen.MaxMessageBytes) + `"}`))
	require.Equal(t, websocket.StatusMessageTooBig, w.closedWith())
}

func TestListenerDeliveryAck(t *testing.T) {
	t.Parallel()
	b := setupListener(t, listen.Intervals{})
	w := b.dial("")
	conn := w.connected()
	d := delivery(b.projectID, 2)
	answer := b.request(d)

	m := w.expect("hook")
	m.hasFields(t, hookFields...)
	require.Equal(t, d.HookId, m.str(t, "id"))
	require.Equal(t, "/orders", m.str(t, "path"))
	require.JSONEq(t, `{"n":1}`, string(m["data"]))
	require.Equal(t, "2026-11-26T12:00:00Z", m.str(t, "postAt"))
	require.Equal(t, "2026-11-26T12:00:01Z", m.str(t, "postedAt"))
	require.Equal(t, "2026-11-26T11:00:00Z", m.str(t, "createdAt"))
	require.Equal(t, "2026-11-26T11:59:00Z", m.str(t, "updatedAt"))
	require.Equal(t, d.Timestamp, m.num(t, "timestamp"))
	require.EqualValues(t, 2, m.num(t, "attempt"))
	require.EqualValues(t, 6, m.num(t, "maxAttempts"))
	require.Equal(t, d.AckUrl, m.str(t, "ackUrl"))
	require.Equal(t, d.NackUrl, m.str(t, "nackUrl"))

	w.send(map[string]string{"type": "ack", "hookId": d.HookId})
	a := answerOf(t, answer)
	require.Equal(t, eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_ACK, a.Kind)
	require.Equal(t, conn, a.ConnectionId)
	require.NotNil(t, a.SentAt)
	require.NotNil(t, a.Duration)
	require.WithinDuration(t, time.Now(), a.SentAt.AsTime(), 10*time.Second)
}

func TestListenerForwardRequest(t *testing.T) {
	t.Parallel()
	b := setupListener(t, listen.Intervals{})
	w := b.dial("&forward=true")
	w.connected()
	d := delivery(b.projectID, 1)
	answer := b.request(d)
	m := w.expect("hook")
	m.hasFields(t, append(hookFields, "forwardRequest")...)
	var fr message
	require.NoError(t, json.Unmarshal(m["forwardRequest"], &fr))
	require.ElementsMatch(t, []string{"body", "headers", "signature", "authorization", "posthookId", "posthookTimestamp",
		"posthookSignature"}, slices.Collect(maps.Keys(fr)))
	require.Equal(t, string(d.Body), fr.str(t, "body"))
	var headers map[string]string
	require.NoError(t, json.Unmarshal(fr["headers"], &headers))
	require.Equal(t, d.Headers, headers)
	require.Equal(t, "def", fr.str(t, "signature"))
	require.Equal(t, "Bearer x", fr.str(t, "authorization"))
	require.Equal(t, d.HookId, fr.str(t, "posthookId"))
	require.Equal(t, "1795694400", fr.str(t, "posthookTimestamp"))
	require.Equal(t, "v1,abc", fr.str(t, "posthookSignature"))
	w.send(map[string]string{"type": "ack", "hookId": d.HookId})
	require.Equal(t, eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_ACK, answerOf(t, answer).Kind)
}

func TestListenerDeliveryNack(t *testing.T) {
	t.Parallel()
	b := setupListener(t, listen.Intervals{})
	w := b.dial("")
	w.connected()
	d := delivery(b.projectID, 1)
	answer := b.request(d)
	w.expect("hook")
	w.send(map[string]string{"type": "nack", "hookId": d.HookId, "error": strings.Repeat("é", 1000)})
	a := answerOf(t, answer)
	require.Equal(t, eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_NACK, a.Kind)
	require.Equal(t, strings.Repeat("é", 512), a.Error, "bounded to 1 KiB, whole characters")

	d = delivery(b.projectID, 1)
	answer = b.request(d)
	w.expect("hook")
	w.send(map[string]string{"type": "nack", "hookId": d.HookId})
	a = answerOf(t, answer)
	require.Equal(t, eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_NACK, a.Kind)
	require.Empty(t, a.Error)
}

func TestListenerDeliveryAccept(t *testing.T) {
	t.Parallel()
	b := setupListener(t, listen.Intervals{})
	w := b.dial("")
	w.connected()
	d := delivery(b.projectID, 1)
	answer := b.request(d)
	w.expect("hook")
	w.send(map[string]any{"type": "accept", "hookId": d.HookId, "timeout": 120})
	a := answerOf(t, answer)
	require.Equal(t, eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_ACCEPT, a.Kind)
	require.EqualValues(t, 120, a.AsyncTimeoutSeconds)
	m := w.expect("async_ack")
	m.hasFields(t, "hookId", "ackUrl", "nackUrl", "deadline")
	require.Equal(t, d.HookId, m.str(t, "hookId"))
	require.Equal(t, d.AckUrl, m.str(t, "ackUrl"))
	require.Equal(t, d.NackUrl, m.str(t, "nackUrl"))
	deadline, err := time.Parse(time.RFC3339Nano, m.str(t, "deadline"))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(120*time.Second), deadline, 10*time.Second)

	// Without a timeout: the project's async timeout (300 s by default).
	d = delivery(b.projectID, 1)
	answer = b.request(d)
	w.expect("hook")
	w.send(map[string]any{"type": "accept", "hookId": d.HookId})
	require.Zero(t, answerOf(t, answer).AsyncTimeoutSeconds)
	deadline, err = time.Parse(time.RFC3339Nano, w.expect("async_ack").str(t, "deadline"))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(300*time.Second), deadline, 10*time.Second)
}

func TestListenerAckTimeout(t *testing.T) {
	t.Parallel()
	b := setupListener(t, listen.Intervals{AckTimeout: 200 * time.Millisecond})
	w := b.dial("")
	w.connected()
	d := delivery(b.projectID, 3)
	answer := b.request(d)
	w.expect("hook")
	// Alive (it speaks) but never answers the hook: a slow listener.
	w.send(map[string]string{"type": "pong"})
	m := w.expect("ack_timeout")
	m.hasFields(t, "hookId", "attempt")
	require.Equal(t, d.HookId, m.str(t, "hookId"))
	require.EqualValues(t, 3, m.num(t, "attempt"))
	a := answerOf(t, answer)
	require.Equal(t, eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_TIMEOUT, a.Kind)
	require.Equal(t, "ack_timeout", a.Error)

	w.send(map[string]string{"type": "ack", "hookId": d.HookId})
	require.Equal(t, listen.CodeAlreadyAnswered, w.expect("error").str(t, "code"), "too late")
}

// A connection that says nothing at all after a hook was sent to it (a
// network cut leaves it open and silent) is presumed dead at the ack
// timeout: the delivery is answered GONE, so the dispatcher defers it
// without counting an attempt, and the socket is closed, so the project's
// next hooks are held for the resume window instead of failing against it.
func TestListenerSilentConnectionIsPresumedDead(t *testing.T) {
	t.Parallel()
	b := setupListener(t, listen.Intervals{AckTimeout: 200 * time.Millisecond})
	w := b.dial("")
	w.connected()
	d := delivery(b.projectID, 1)
	answer := b.request(d)
	w.expect("hook")
	a := answerOf(t, answer)
	require.Equal(t, eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_GONE, a.Kind, "no attempt is counted")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for {
		// Pings may come first; then the socket ends without a handshake.
		if _, _, err := w.c.Read(ctx); err != nil {
			require.NoError(t, ctx.Err(), "the socket was never closed")
			break
		}
	}
}

// While a delivery waits for its answer on a quiet connection, the
// connection is probed with pings, so that a live but slow listener shows
// it is alive (its pongs) and gets ack_timeout, not a disconnection.
func TestListenerQuietConnectionIsProbedWhileAHookWaits(t *testing.T) {
	t.Parallel()
	b := setupListener(t, listen.Intervals{AckTimeout: 2 * time.Second, Probe: 20 * time.Millisecond})
	w := b.dial("")
	w.connected()
	d := delivery(b.projectID, 1)
	answer := b.request(d)
	require.Equal(t, "hook", w.read().str(t, "type"))
	// A listener whose handler is busy: it answers pings and nothing else.
	for {
		m := w.read()
		if m.str(t, "type") == "ack_timeout" {
			break
		}
		require.Equal(t, "ping", m.str(t, "type"))
		w.send(map[string]string{"type": "pong"})
	}
	require.Equal(t, eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_TIMEOUT, answerOf(t, answer).Kind)
}

func TestListenerMessagesItCannotUse(t *testing.T) {
	t.Parallel()
	b := setupListener(t, listen.Intervals{})
	w := b.dial("")
	w.connected()
	d := delivery(b.projectID, 1)
	answer := b.request(d)
	w.expect("hook")

	// A pong is answered with nothing: the next message is the error of
	// the one after it.
	w.send(map[string]string{"type": "pong"})
	for _, c := range []struct {
		send string
		code string
	}{
		{`{"type": "ack", "hookId": `, listen.CodeInvalidJSON},
		{`[1, 2]`, listen.CodeInvalidJSON},
		{`{"type": "subscribe"}`, listen.CodeUnknownType},
		{`{"type": "ack"}`, listen.CodeInvalidMessage},
		{`{"type": "accept", "hookId": "` + d.HookId + `", "timeout": -1}`, listen.CodeInvalidMessage},
		{`{"type": "accept", "hookId": "` + d.HookId + `", "timeout": "soon"}`, listen.CodeInvalidMessage},
		{`{"type": "accept", "hookId": "` + d.HookId + `", "timeout": 1.5}`, listen.CodeInvalidMessage},
		{`{"type": "ack", "hookId": "` + uuid.NewString() + `"}`, listen.CodeUnknownHook},
	} {
		w.sendRaw([]byte(c.send))
		m := w.expect("error")
		m.hasFields(t, "code", "message")
		require.Equal(t, c.code, m.str(t, "code"), "after %s", c.send)
		require.NotEmpty(t, m.str(t, "message"))
	}
	// Nothing changed: the delivery still waits for its answer.
	w.send(map[string]string{"type": "ack", "hookId": d.HookId})
	require.Equal(t, eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_ACK, answerOf(t, answer).Kind)
	w.send(map[string]string{"type": "nack", "hookId": d.HookId})
	require.Equal(t, listen.CodeAlreadyAnswered, w.expect("error").str(t, "code"), "a second answer")

	// And the connection still works.
	d = delivery(b.projectID, 1)
	answer = b.request(d)
	w.expect("hook")
	w.send(map[string]string{"type": "ack", "hookId": d.HookId})
	require.Equal(t, eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_ACK, answerOf(t, answer).Kind)
}

func TestListenerPipelinesDeliveries(t *testing.T) {
	t.Parallel()
	b := setupListener(t, listen.Intervals{})
	w := b.dial("")
	w.connected()
	const n = 200
	answers := make(map[string]<-chan answerResult, n)
	for range n {
		d := delivery(b.projectID, 1)
		answers[d.HookId] = b.request(d)
	}
	// Every hook arrives before any is answered; then answered in reverse.
	ids := make([]string, 0, n)
	for range n {
		ids = append(ids, w.expect("hook").str(t, "id"))
	}
	require.ElementsMatch(t, slices.Collect(maps.Keys(answers)), ids)
	slices.Reverse(ids)
	for _, id := range ids {
		w.send(map[string]string{"type": "ack", "hookId": id})
	}
	for _, id := range ids {
		require.Equal(t, eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_ACK, answerOf(t, answers[id]).Kind)
	}
}

func TestListenerSocketsShareDeliveriesInTurn(t *testing.T) {
	t.Parallel()
	b := setupListener(t, listen.Intervals{})
	// Connected one after the other, so that the hub holds them in this
	// order: the first delivery goes to the first.
	one := b.dial("")
	ids := map[*wsClient]string{one: one.connected()}
	two := b.dial("")
	ids[two] = two.connected()
	got := map[string]int{}
	for i := range 6 {
		d := delivery(b.projectID, 1)
		answer := b.request(d)
		w := []*wsClient{one, two}[i%2]
		require.Equal(t, d.HookId, w.expect("hook").str(t, "id"), "in turn")
		w.send(map[string]string{"type": "ack", "hookId": d.HookId})
		a := answerOf(t, answer)
		require.Equal(t, ids[w], a.ConnectionId)
		got[a.ConnectionId]++
	}
	require.Equal(t, map[string]int{ids[one]: 3, ids[two]: 3}, got)
}

func TestListenerGoneWhenTheSocketClosesUnanswered(t *testing.T) {
	t.Parallel()
	b := setupListener(t, listen.Intervals{})
	w := b.dial("")
	w.connected()
	d := delivery(b.projectID, 1)
	answer := b.request(d)
	w.expect("hook")
	require.NoError(t, w.c.CloseNow())
	require.Equal(t, eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_GONE, answerOf(t, answer).Kind)
}

func TestListenerHandsUnansweredDeliveriesToAnotherSocket(t *testing.T) {
	t.Parallel()
	b := setupListener(t, listen.Intervals{})
	one := b.dial("")
	one.connected()
	d := delivery(b.projectID, 1)
	answer := b.request(d)
	one.expect("hook")
	two := b.dial("")
	two.connected()
	require.NoError(t, one.c.CloseNow())
	require.Equal(t, d.HookId, two.expect("hook").str(t, "id"))
	two.send(map[string]string{"type": "ack", "hookId": d.HookId})
	require.Equal(t, eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_ACK, answerOf(t, answer).Kind)
}

func TestListenerPing(t *testing.T) {
	t.Parallel()
	b := setupListener(t, listen.Intervals{Ping: 20 * time.Millisecond})
	w := b.dial("")
	w.connected()
	m := w.expect("ping")
	m.hasFields(t, "timestamp")
	ts, err := time.Parse(time.RFC3339Nano, m.str(t, "timestamp"))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), ts, 10*time.Second)
}

func TestListenerClosesASilentConnection(t *testing.T) {
	t.Parallel()
	b := setupListener(t, listen.Intervals{Silence: 100 * time.Millisecond})
	w := b.dial("")
	w.connected()
	require.Equal(t, websocket.StatusGoingAway, w.closedWith())
}

func presence(t *testing.T, b listenerBundle) []storetest.ListListenerPresenceRow {
	t.Helper()
	rows, err := b.tq.ListListenerPresence(b.ctx, b.projectID)
	require.NoError(t, err)
	return rows
}

func TestListenerPresence(t *testing.T) {
	t.Parallel()
	b := setupListener(t, listen.Intervals{Heartbeat: 20 * time.Millisecond})
	one := b.dial("")
	one.connected()
	var first storetest.ListListenerPresenceRow
	require.Eventually(t, func() bool {
		rows := presence(t, b)
		if len(rows) != 1 || !rows[0].Connected {
			return false
		}
		first = rows[0]
		return true
	}, 10*time.Second, 5*time.Millisecond)
	require.True(t, strings.HasPrefix(first.GatewayID, "gw-"))
	require.True(t, first.WindowAhead, "resume_until is seen_at plus the window (15 min)")

	two := b.dial("")
	two.connected()
	require.Eventually(t, func() bool {
		rows := presence(t, b)
		return len(rows) == 1 && rows[0].Sockets == 2 && rows[0].SeenAt.After(first.SeenAt)
	}, 10*time.Second, 5*time.Millisecond, "refreshed, with the sockets counted")

	require.NoError(t, one.c.Close(websocket.StatusNormalClosure, ""))
	require.NoError(t, two.c.Close(websocket.StatusNormalClosure, ""))
	require.Eventually(t, func() bool {
		rows := presence(t, b)
		return len(rows) == 1 && !rows[0].Connected && rows[0].Sockets == 0 && rows[0].WindowAhead &&
			rows[0].GatewayID == first.GatewayID
	}, 10*time.Second, 5*time.Millisecond, "cleared, its resume window started")
}

func TestListenerClosingOnShutdown(t *testing.T) {
	t.Parallel()
	b := setupListener(t, listen.Intervals{})
	w := b.dial("")
	w.connected()
	require.Eventually(t, func() bool {
		rows := presence(t, b)
		return len(rows) == 1 && rows[0].Connected
	}, 10*time.Second, 5*time.Millisecond)

	b.stop()
	m := w.expect("closing")
	m.hasFields(t, "reason", "message")
	require.Equal(t, "shutdown", m.str(t, "reason"))
	require.NotEmpty(t, m.str(t, "message"))
	require.Equal(t, websocket.StatusGoingAway, w.closedWith())
	require.Eventually(t, func() bool {
		rows := presence(t, b)
		return len(rows) == 1 && !rows[0].Connected
	}, 10*time.Second, 5*time.Millisecond, "the presence is cleared before the gateway stops")
}

func TestListenerSweepsExpiredTicketsAndStalePresence(t *testing.T) {
	t.Parallel()
	b := setupListener(t, listen.Intervals{Heartbeat: 20 * time.Millisecond})
	b.ticket()
	_, err := b.tq.ExpireListenerTickets(b.ctx, b.projectID)
	require.NoError(t, err)
	// Another replica's rows: one whose window ended long ago, one lately.
	for gw, ago := range map[string]time.Duration{"gw-stopped": 2 * time.Hour, "gw-recent": time.Minute} {
		require.NoError(t, b.tq.InsertListenerPresence(b.ctx, storetest.InsertListenerPresenceParams{
			ProjectID: b.projectID, GatewayID: gw, AgoSeconds: ago.Seconds(),
		}))
	}
	require.Eventually(t, func() bool {
		n, err := b.tq.CountListenerTickets(b.ctx, b.projectID)
		require.NoError(t, err)
		rows := presence(t, b)
		return n == 0 && len(rows) == 1 && rows[0].GatewayID == "gw-recent"
	}, 10*time.Second, 5*time.Millisecond)
}

func TestListenerNotifiesTheSchedulerOnTheFirstSocket(t *testing.T) {
	t.Parallel()
	b := setupListener(t, listen.Intervals{})
	conn, err := pgx.Connect(b.ctx, b.dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	require.NoError(t, storetest.New(conn).ListenListenerForTest(b.ctx))

	b.dial("").connected()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	n, err := conn.WaitForNotification(ctx)
	require.NoError(t, err)
	require.Equal(t, listen.Channel, n.Channel)
	require.Equal(t, b.creds.ProjectID, n.Payload)
}

// TestListenerSocketsOverTheBoundsAreClosed1013 opens sockets past a
// project's bound and past the gateway's: each over one is closed at once
// with 1013 and says which bound, a closed socket makes room again, and the
// API still answers another project meanwhile.
func TestListenerSocketsOverTheBoundsAreClosed1013(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *app.Config) {
		c.ListenerMaxSockets = 3
		c.ListenerMaxProjectSockets = 2
	})
	other, err := app.CreateProject(b.ctx, app.Database{URL: b.dbURL, SecretKeys: secrettest.Keys}, "Other", "other.example.com")
	require.NoError(t, err)
	dial := func(key string) *wsClient {
		t.Helper()
		res := b.do(http.MethodPost, "/v1/ws/ticket", nil, header("X-API-Key", key))
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		tk := decodeStrict[ticketJSON](t, res.body)
		return dialURL(t, tk.Data.URL+"?ticket="+tk.Data.Ticket)
	}
	refused := func(w *wsClient, reason string) {
		t.Helper()
		_, _, err := w.c.Read(t.Context())
		require.Equal(t, websocket.StatusTryAgainLater, websocket.CloseStatus(err), "read: %v", err)
		var ce websocket.CloseError
		require.ErrorAs(t, err, &ce)
		require.Contains(t, ce.Reason, reason)
	}

	first := dial(b.creds.APIKey)
	first.connected()
	dial(b.creds.APIKey).connected()
	refused(dial(b.creds.APIKey), "the project has 2 listeners on this server")

	dial(other.APIKey).connected()
	refused(dial(other.APIKey), "this server holds its most listeners")
	res := b.do(http.MethodGet, "/v1/hooks", nil, header("X-API-Key", other.APIKey))
	require.Equal(t, http.StatusOK, res.status, "the API answers beside the sockets: %s", res.body)

	require.NoError(t, first.c.Close(websocket.StatusNormalClosure, ""))
	require.Eventually(t, func() bool {
		w := dial(other.APIKey)
		typ, data, err := w.c.Read(t.Context())
		return err == nil && typ == websocket.MessageText && strings.Contains(string(data), `"connected"`)
	}, 10*time.Second, 50*time.Millisecond, "a closed socket never made room")
}
