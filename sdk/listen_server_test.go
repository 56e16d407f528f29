package sundial

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// protoServer is the gateway's side of the listener protocol as
// docs/listener.md describes it: tickets, the socket, its close codes.
// Each socket it accepts is handed to the test, which plays the server.
type protoServer struct {
	srv   *httptest.Server
	conns chan *serverConn

	mu      sync.Mutex
	tickets map[string]bool // issued and not redeemed yet
	issued  int
	// badTicket makes the ticket endpoint hand out tickets it never
	// issued, which the socket refuses with 4001.
	badTicket bool
}

// serverConn is one accepted socket, seen from the server.
type serverConn struct {
	c     *websocket.Conn
	query url.Values
	// in gets each message the client sends, decoded.
	in chan map[string]any
	// ended is closed when the socket is closed; closeStatus says how.
	ended       chan struct{}
	closeStatus websocket.StatusCode
}

const testAPIKey = "sdk_test_key"

func newProtoServer(t *testing.T) *protoServer {
	t.Helper()
	p := &protoServer{conns: make(chan *serverConn, 16), tickets: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/ws/ticket", p.ticket)
	mux.HandleFunc("GET /v1/ws", p.socket)
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *protoServer) ticket(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-API-Key") != testAPIKey {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"code":"unauthorized","error":"invalid API key","requestId":"r1"}`))
		return
	}
	p.mu.Lock()
	p.issued++
	tk := fmt.Sprintf("tk_%d", p.issued)
	if p.badTicket {
		tk = "tk_forged"
	} else {
		p.tickets[tk] = true
	}
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{
		"ticket":    tk,
		"url":       "ws" + strings.TrimPrefix(p.srv.URL, "http") + "/v1/ws",
		"expiresAt": time.Now().Add(time.Minute).UTC().Format(time.RFC3339),
	}})
}

func (p *protoServer) socket(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	tk := r.URL.Query().Get("ticket")
	p.mu.Lock()
	valid := p.tickets[tk]
	delete(p.tickets, tk)
	p.mu.Unlock()
	if !valid {
		_ = c.Close(closeTicketRejected, "invalid or expired ticket")
		return
	}
	sc := &serverConn{c: c, query: r.URL.Query(), in: make(chan map[string]any, 64), ended: make(chan struct{})}
	sc.send(map[string]any{"type": "connected", "connectionId": "conn_1", "projectId": "prj_1",
		"projectName": "Acme", "serverTime": time.Now().UTC().Format(time.RFC3339)})
	p.conns <- sc
	// The handler's request context ends when the handler returns: the
	// read loop runs here until the socket closes.
	for {
		_, raw, err := c.Read(context.Background())
		if err != nil {
			sc.closeStatus = websocket.CloseStatus(err)
			close(sc.ended)
			return
		}
		var m map[string]any
		if json.Unmarshal(raw, &m) == nil {
			sc.in <- m
		}
	}
}

// next waits for the next socket the client opens.
func (p *protoServer) next(t *testing.T) *serverConn {
	t.Helper()
	select {
	case sc := <-p.conns:
		return sc
	case <-time.After(10 * time.Second):
		t.Fatal("the client opened no socket")
		return nil
	}
}

func (sc *serverConn) send(m map[string]any) {
	b, _ := json.Marshal(m)
	_ = sc.c.Write(context.Background(), websocket.MessageText, b)
}

// recv waits for the client's next message.
func (sc *serverConn) recv(t *testing.T) map[string]any {
	t.Helper()
	select {
	case m := <-sc.in:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("the client sent nothing")
		return nil
	}
}

// waitEnded waits for the socket to close and returns its close status.
func (sc *serverConn) waitEnded(t *testing.T) websocket.StatusCode {
	t.Helper()
	select {
	case <-sc.ended:
		return sc.closeStatus
	case <-time.After(20 * time.Second):
		t.Fatal("the socket stayed open")
		return 0
	}
}

// hook is a hook message as the gateway sends it.
func hook(id string) map[string]any {
	now := time.Now().UTC().Format(time.RFC3339)
	return map[string]any{
		"type": "hook", "id": id, "path": "/webhooks/" + id, "data": map[string]any{"n": 1},
		"postAt": now, "postedAt": now, "createdAt": now, "updatedAt": now,
		"timestamp": time.Now().Unix(), "attempt": 1, "maxAttempts": 4,
		"ackUrl": "https://sundial.example.com/v1/async/ack/x", "nackUrl": "https://sundial.example.com/v1/async/nack/x",
	}
}
