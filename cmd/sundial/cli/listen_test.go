package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
)

// gatewaySide is the gateway's side of the listener protocol
// (docs/listener.md), enough for `sundial listen`: a ticket, a socket that
// says connected and hands itself to the test, close codes. The SDK's
// tests have the fuller one; this copy keeps the SDK from exporting it.
type gatewaySide struct {
	srv   *httptest.Server
	conns chan *socket
	// refuse makes the socket refuse every ticket (4001) from then on.
	refuse atomic.Bool
}

type socket struct {
	c     *websocket.Conn
	query map[string][]string
	in    chan map[string]any
}

const listenKey = "sk_listen_test"

func newGatewaySide(t *testing.T) *gatewaySide {
	t.Helper()
	g := &gatewaySide{conns: make(chan *socket, 4)}
	var mu sync.Mutex
	tickets := map[string]bool{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/ws/ticket", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-API-Key") != listenKey {
			http.Error(w, `{"code":"unauthorized","error":"invalid API key"}`, http.StatusUnauthorized)
			return
		}
		mu.Lock()
		tk := fmt.Sprintf("tk_%d", len(tickets)+1)
		tickets[tk] = true
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{
			"ticket": tk, "url": "ws" + strings.TrimPrefix(g.srv.URL, "http") + "/v1/ws",
			"expiresAt": time.Now().Add(time.Minute).UTC().Format(time.RFC3339),
		}})
	})
	mux.HandleFunc("GET /v1/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		mu.Lock()
		valid := tickets[r.URL.Query().Get("ticket")]
		tickets[r.URL.Query().Get("ticket")] = false
		mu.Unlock()
		if !valid || g.refuse.Load() {
			_ = c.Close(4001, "invalid ticket")
			return
		}
		s := &socket{c: c, query: r.URL.Query(), in: make(chan map[string]any, 16)}
		s.send(map[string]any{"type": "connected", "connectionId": "conn_1", "projectId": "prj_1",
			"projectName": "Acme", "serverTime": time.Now().UTC().Format(time.RFC3339)})
		g.conns <- s
		for {
			_, raw, err := c.Read(context.Background())
			if err != nil {
				return
			}
			var m map[string]any
			if json.Unmarshal(raw, &m) == nil {
				s.in <- m
			}
		}
	})
	g.srv = httptest.NewServer(mux)
	t.Cleanup(g.srv.Close)
	return g
}

func (g *gatewaySide) next(t *testing.T) *socket {
	t.Helper()
	select {
	case s := <-g.conns:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("sundial listen opened no socket")
		return nil
	}
}

func (s *socket) send(m map[string]any) {
	b, _ := json.Marshal(m)
	_ = s.c.Write(context.Background(), websocket.MessageText, b)
}

func (s *socket) recv(t *testing.T) map[string]any {
	t.Helper()
	select {
	case m := <-s.in:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("sundial listen answered nothing")
		return nil
	}
}

// forwardedHook is a hook message with its forwardRequest, as the gateway
// sends it to a listener that dialled with forward=true.
func forwardedHook(id, path string) map[string]any {
	now := time.Now().UTC().Format(time.RFC3339)
	body := fmt.Sprintf(`{"id":%q,"path":%q,"data":{"n":1}}`, id, path)
	return map[string]any{
		"type": "hook", "id": id, "path": path, "data": map[string]any{"n": 1},
		"postAt": now, "postedAt": now, "createdAt": now, "updatedAt": now,
		"timestamp": time.Now().Unix(), "attempt": 1, "maxAttempts": 4,
		"ackUrl": "https://gw.example/v1/async/ack/x", "nackUrl": "https://gw.example/v1/async/nack/x",
		"forwardRequest": map[string]any{
			"body": body,
			"headers": map[string]string{
				"Content-Type": "application/json", "Sundial-Id": id, "Sundial-Timestamp": "1700000000",
				"Sundial-Signature": "v1,deadbeef", "Content-Length": "999",
			},
			"signature": "v1,deadbeef",
		},
	}
}

// received is a request the local server got.
type received struct {
	path   string
	header http.Header
	body   string
}

// listenBundle is `sundial listen` running against gatewaySide, forwarding
// to a local server.
type listenBundle struct {
	gw       *gatewaySide
	local    *httptest.Server
	received chan received
	stdout   *syncBuffer
	stderr   *syncBuffer
	cancel   context.CancelFunc
	done     chan int
}

// setupListen runs `sundial listen --forward-to <local>` with extra args.
// The local server answers by path: /ok 200, /async 202 with a 120 s
// timeout, /fail 500.
func setupListen(t *testing.T, args ...string) *listenBundle {
	t.Helper()
	b := &listenBundle{gw: newGatewaySide(t), received: make(chan received, 16),
		stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan int, 1)}
	b.local = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		b.received <- received{path: r.URL.Path, header: r.Header, body: string(body)}
		switch r.URL.Path {
		case "/app/ok":
			w.WriteHeader(http.StatusOK)
		case "/app/async":
			w.Header().Set("Sundial-Async-Timeout", "120")
			w.WriteHeader(http.StatusAccepted)
		default:
			http.Error(w, "boom", http.StatusInternalServerError)
		}
	}))
	t.Cleanup(b.local.Close)
	r := newRunner(t)
	r.env[envAPIKey], r.env[envAPIURL] = listenKey, b.gw.srv.URL
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	go func() {
		b.done <- Run(ctx, append([]string{"listen", "--forward-to", b.local.URL + "/app/"}, args...), r.envFor(b.stdout, b.stderr))
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-b.done:
		case <-time.After(20 * time.Second):
			t.Error("sundial listen did not stop")
		}
	})
	return b
}

func (b *listenBundle) exitCode(t *testing.T) int {
	t.Helper()
	select {
	case code := <-b.done:
		b.done <- code // for the cleanup
		return code
	case <-time.After(20 * time.Second):
		t.Fatal("sundial listen did not exit")
		return -1
	}
}

func (b *listenBundle) request(t *testing.T) received {
	t.Helper()
	select {
	case r := <-b.received:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("nothing was forwarded")
		return received{}
	}
}

func TestListenForwardsAndAnswers(t *testing.T) {
	t.Parallel()
	b := setupListen(t)
	s := b.gw.next(t)
	require.Equal(t, "true", s.query["forward"][0], "listen asks for the request")
	require.Eventually(t, func() bool { return strings.Contains(b.stdout.String(), "Connected") }, 10*time.Second, 10*time.Millisecond)
	require.Contains(t, b.stdout.String(), "project Acme (prj_1)")

	s.send(forwardedHook("h_ok", "/ok"))
	got := b.request(t)
	require.Equal(t, "/app/ok", got.path, "the hook's path joined to --forward-to")
	require.JSONEq(t, `{"id":"h_ok","path":"/ok","data":{"n":1}}`, got.body)
	require.Equal(t, "v1,deadbeef", got.header.Get("Sundial-Signature"))
	require.Equal(t, "h_ok", got.header.Get("Sundial-Id"))
	require.Equal(t, "application/json", got.header.Get("Content-Type"))
	require.Equal(t, map[string]any{"type": "ack", "hookId": "h_ok"}, s.recv(t))

	s.send(forwardedHook("h_fail", "/fail"))
	b.request(t)
	require.Equal(t, map[string]any{"type": "nack", "hookId": "h_fail", "error": "local answered 500"}, s.recv(t))

	s.send(forwardedHook("h_async", "/async"))
	b.request(t)
	require.Equal(t, map[string]any{"type": "accept", "hookId": "h_async", "timeout": float64(120)}, s.recv(t))

	// One line per delivery: time, status, method, local URL, latency, hook.
	out := b.stdout.String()
	require.Regexp(t, `\d\d:\d\d:\d\d  200  POST  `+regexp.QuoteMeta(b.local.URL)+`/app/ok  \d+ms  h_ok\n`, out)
	require.Regexp(t, `  500  POST  `+regexp.QuoteMeta(b.local.URL)+`/app/fail  \d+ms  h_fail\n`, out)
	require.Regexp(t, `  202  POST  `+regexp.QuoteMeta(b.local.URL)+`/app/async  \d+ms  h_async\n`, out)

	b.cancel()
	require.Equal(t, ExitOK, b.exitCode(t), b.stderr.String())
}

func TestListenNacksWhenTheLocalServerIsDown(t *testing.T) {
	t.Parallel()
	b := setupListen(t)
	s := b.gw.next(t)
	b.local.Close()
	s.send(forwardedHook("h_down", "/ok"))
	m := s.recv(t)
	require.Equal(t, "nack", m["type"])
	require.Contains(t, m["error"], "local server:")
	require.Eventually(t, func() bool { return strings.Contains(b.stdout.String(), "ERR  POST") }, 10*time.Second, 10*time.Millisecond)
}

func TestListenPrintsJSONLines(t *testing.T) {
	t.Parallel()
	b := setupListen(t, "--output", "json")
	s := b.gw.next(t)
	s.send(forwardedHook("h_ok", "/ok"))
	b.request(t)
	require.Equal(t, "ack", s.recv(t)["type"])
	var lines []map[string]any
	require.Eventually(t, func() bool {
		lines = nil
		for _, l := range strings.Split(strings.TrimSpace(b.stdout.String()), "\n") {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(l), &m), l)
			lines = append(lines, m)
		}
		return len(lines) == 2
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, "connected", lines[0]["event"])
	require.Equal(t, "prj_1", lines[0]["projectId"])
	d := lines[1]
	require.Equal(t, "h_ok", d["hookId"])
	require.Equal(t, float64(200), d["status"])
	require.Equal(t, "POST", d["method"])
	require.Equal(t, b.local.URL+"/app/ok", d["url"])
	require.Equal(t, "ack", d["result"])
	require.Contains(t, d, "latencyMs")
	require.Contains(t, d, "time")
}

func TestListenExitsOnRevokedKey(t *testing.T) {
	t.Parallel()
	b := setupListen(t)
	s := b.gw.next(t)
	require.NoError(t, s.c.Close(4003, "api key revoked"))
	require.Equal(t, ExitError, b.exitCode(t))
	require.Contains(t, b.stderr.String(), "close 4003")
	require.Contains(t, b.stderr.String(), "run `sundial login` with a new key")
}

func TestListenExitsOnRejectedTicket(t *testing.T) {
	t.Parallel()
	b := setupListen(t)
	s := b.gw.next(t)
	// The connection drops; the next ticket is refused.
	b.gw.refuse.Store(true)
	s.c.CloseNow()
	require.Equal(t, ExitError, b.exitCode(t))
	require.Contains(t, b.stderr.String(), "close 4001")
	require.Contains(t, b.stderr.String(), "check this machine's clock, then run `sundial listen` again to get a new one")
	require.Contains(t, b.stdout.String(), "Disconnected (")
}
