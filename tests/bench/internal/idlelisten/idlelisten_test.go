package idlelisten

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
)

const apiKey = "sdk_test"

// server speaks the gateway's side of docs/listener.md as far as idle
// clients go: tickets, `connected`, one `ping` per connection, and a close
// of one connection on demand.
type server struct {
	srv *httptest.Server
	// rejectSockets closes every socket with 4001, as for a bad ticket.
	rejectSockets bool
	mu            sync.Mutex
	tickets       map[string]bool
	issued        int
	// pongs receives one value per pong read; closeOne asks one open
	// connection to be closed by the server.
	pongs    chan struct{}
	closeOne chan struct{}
}

type bundle struct {
	s    *server
	opts Options
}

func setup(t *testing.T, rejectSockets bool) bundle {
	t.Helper()
	s := &server{rejectSockets: rejectSockets, tickets: map[string]bool{},
		pongs: make(chan struct{}, 100), closeOne: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/ws/ticket", s.ticket)
	mux.HandleFunc("GET /v1/ws", s.socket)
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	return bundle{s: s, opts: Options{APIBase: s.srv.URL, APIKey: apiKey, Count: 5, Parallel: 2}}
}

func (s *server) ticket(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-API-Key") != apiKey {
		http.Error(w, `{"error":"bad key"}`, http.StatusUnauthorized)
		return
	}
	s.mu.Lock()
	s.issued++
	t := fmt.Sprintf("ticket-%d", s.issued)
	s.tickets[t] = true
	s.mu.Unlock()
	_ = json.NewEncoder(w).Encode(map[string]any{"data": map[string]string{
		"ticket": t, "url": "ws" + strings.TrimPrefix(s.srv.URL, "http") + "/v1/ws",
		"expiresAt": time.Now().Add(time.Minute).UTC().Format(time.RFC3339),
	}})
}

func (s *server) socket(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	s.mu.Lock()
	valid := s.tickets[r.URL.Query().Get("ticket")]
	delete(s.tickets, r.URL.Query().Get("ticket"))
	s.mu.Unlock()
	if !valid || s.rejectSockets {
		_ = c.Close(4001, "bad ticket")
		return
	}
	ctx := r.Context()
	if c.Write(ctx, websocket.MessageText, []byte(`{"type":"connected","connectionId":"c"}`)) != nil ||
		c.Write(ctx, websocket.MessageText, []byte(`{"type":"ping","timestamp":"now"}`)) != nil {
		return
	}
	_, raw, err := c.Read(ctx)
	if err != nil {
		return
	}
	if string(raw) == `{"type":"pong"}` {
		s.pongs <- struct{}{}
	}
	closed := c.CloseRead(ctx)
	select {
	case <-closed.Done():
	case <-s.closeOne:
		_ = c.Close(websocket.StatusGoingAway, "closing")
	}
}

// Every connection gets its ticket, reads `connected`, answers the ping,
// and is counted out when the server closes it; Close closes the rest.
func TestOpenHoldsIdleConnections(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	g, opened, err := Open(t.Context(), b.opts)
	require.NoError(t, err)
	require.Equal(t, 5, opened.Connected)
	require.Nil(t, opened.Errors)
	for range 5 {
		select {
		case <-b.s.pongs:
		case <-t.Context().Done():
			require.FailNow(t, "not every ping answered")
		}
	}
	require.Eventually(t, func() bool { return g.Pongs() == 5 }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, 5, g.Open())

	b.s.closeOne <- struct{}{}
	require.Eventually(t, func() bool { return g.Open() == 4 }, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, g.Close())
}

// A ticket refused, or a socket closed before `connected`, is counted by
// what failed; no connection is kept.
func TestOpenCountsFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		reject bool
		key    string
		want   string
	}{
		{name: "ticket refused", key: "sdk_wrong", want: "ticket 401"},
		{name: "socket closed 4001", reject: true, key: apiKey, want: "closed 4001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tc.reject)
			b.opts.APIKey = tc.key
			g, opened, err := Open(t.Context(), b.opts)
			require.NoError(t, err)
			require.Zero(t, opened.Connected)
			require.Equal(t, map[string]int{tc.want: 5}, opened.Errors)
			require.Zero(t, g.Open())
			require.NoError(t, g.Close())
		})
	}
}

func TestOpenRefusesBadOptions(t *testing.T) {
	t.Parallel()
	_, _, err := Open(t.Context(), Options{APIBase: "http://127.0.0.1:1", Count: 0, Parallel: 1})
	require.Error(t, err)
}
