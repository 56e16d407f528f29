// Package idlelisten holds many idle listener connections open on the
// gateway, as `sundial listen` clients that receive nothing would: each
// asks POST /v1/ws/ticket for a ticket, dials the ticket's url, reads the
// `connected` message and then answers every `ping` with a `pong` until it
// is closed (docs/listener.md). The listen scenario reads the gateway's
// memory while they are open.
package idlelisten

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// connectTimeout bounds one connection's ticket, dial and first message.
const connectTimeout = 30 * time.Second

// closeParallel is how many connections are closed at once.
const closeParallel = 64

// Options describe the connections to open.
type Options struct {
	// APIBase is the gateway's root URL, e.g. http://127.0.0.1:41234.
	APIBase string
	// APIKey is the project's key; every connection is the project's.
	APIKey string
	// Count is how many connections to open, Parallel how many are being
	// opened at once.
	Count    int
	Parallel int
}

// Opened says how the opening went.
type Opened struct {
	// Connected counts connections that read their `connected` message.
	Connected int `json:"connected"`
	// Seconds is how long opening them all took.
	Seconds float64 `json:"seconds"`
	// Errors counts connections that failed, by what failed: "ticket
	// <status>", "dial", "closed <code>" (the server closed the socket
	// before `connected`), "first message <type>".
	Errors map[string]int `json:"errors,omitempty"`
}

// Group is the open connections.
type Group struct {
	conns []*websocket.Conn
	// pongs counts pings answered, closed connections the server closed
	// while they were open.
	pongs, closed atomic.Int64
	cancel        context.CancelFunc
	readers       sync.WaitGroup
}

// Open opens opts.Count connections, opts.Parallel at a time, and keeps
// those that connected open, answering pings, until Close. The group is
// returned even when some failed (Opened says which); an error means none
// could be tried.
func Open(ctx context.Context, opts Options) (*Group, Opened, error) {
	if opts.Count < 1 || opts.Parallel < 1 {
		return nil, Opened{}, fmt.Errorf("idlelisten: count %d and parallel %d must be positive", opts.Count, opts.Parallel)
	}
	client := &http.Client{Timeout: connectTimeout}
	readCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	g := &Group{cancel: cancel}
	var (
		mu     sync.Mutex
		errs   = map[string]int{}
		next   atomic.Int64
		dialer sync.WaitGroup
	)
	start := time.Now()
	for range opts.Parallel {
		dialer.Go(func() {
			for ctx.Err() == nil && int(next.Add(1)) <= opts.Count {
				c, kind := connect(ctx, client, opts)
				mu.Lock()
				if c == nil {
					errs[kind]++
				} else {
					g.conns = append(g.conns, c)
				}
				mu.Unlock()
				if c != nil {
					g.readers.Go(func() { g.answer(readCtx, c) })
				}
			}
		})
	}
	dialer.Wait()
	o := Opened{Connected: len(g.conns), Seconds: time.Since(start).Seconds(), Errors: errs}
	if len(errs) == 0 {
		o.Errors = nil
	}
	return g, o, ctx.Err()
}

// connect opens one connection up to its `connected` message; on failure
// it returns nil and what failed.
func connect(ctx context.Context, client *http.Client, opts Options) (*websocket.Conn, string) {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	wsURL, kind := ticket(ctx, client, opts)
	if wsURL == "" {
		return nil, kind
	}
	c, resp, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPClient: client})
	if err != nil {
		if resp != nil {
			return nil, fmt.Sprintf("dial %d", resp.StatusCode)
		}
		return nil, "dial"
	}
	_, raw, err := c.Read(ctx)
	if err != nil {
		_ = c.CloseNow()
		if code := websocket.CloseStatus(err); code != -1 {
			return nil, fmt.Sprintf("closed %d", code)
		}
		return nil, "first message read"
	}
	if t := messageType(raw); t != "connected" {
		_ = c.CloseNow()
		return nil, "first message " + t
	}
	return c, ""
}

// ticket asks for a ticket and returns the URL to dial with it, or "" and
// what failed.
func ticket(ctx context.Context, client *http.Client, opts Options) (string, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, opts.APIBase+"/v1/ws/ticket", http.NoBody)
	if err != nil {
		return "", "ticket request"
	}
	req.Header.Set("X-API-Key", opts.APIKey)
	resp, err := client.Do(req)
	if err != nil {
		return "", "ticket transport"
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
	if err != nil {
		return "", "ticket transport"
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Sprintf("ticket %d", resp.StatusCode)
	}
	var body struct {
		Data struct {
			Ticket string `json:"ticket"`
			URL    string `json:"url"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &body); err != nil || body.Data.Ticket == "" || body.Data.URL == "" {
		return "", "ticket answer"
	}
	u, err := url.Parse(body.Data.URL)
	if err != nil {
		return "", "ticket url"
	}
	q := u.Query()
	q.Set("ticket", body.Data.Ticket)
	u.RawQuery = q.Encode()
	return u.String(), ""
}

// answer reads c until it closes or ctx ends, answering each `ping` with a
// `pong` as the published clients do.
func (g *Group) answer(ctx context.Context, c *websocket.Conn) {
	for {
		_, raw, err := c.Read(ctx)
		if err != nil {
			if ctx.Err() == nil {
				g.closed.Add(1)
			}
			return
		}
		if messageType(raw) != "ping" {
			continue
		}
		if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"pong"}`)); err != nil {
			continue // the next Read reports the closed connection
		}
		g.pongs.Add(1)
	}
}

func messageType(raw []byte) string {
	var m struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(raw), &m); err != nil || m.Type == "" {
		return "unreadable"
	}
	return m.Type
}

// Open is how many connections are open: connected and not closed by the
// server since.
func (g *Group) Open() int { return len(g.conns) - int(g.closed.Load()) }

// Pongs is how many pings were answered.
func (g *Group) Pongs() int { return int(g.pongs.Load()) }

// Close closes every connection with a normal closure, closeParallel at a
// time, and waits for their readers to end.
func (g *Group) Close() error {
	var (
		mu   sync.Mutex
		errs []error
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range closeParallel {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(g.conns); i = int(next.Add(1) - 1) {
				err := g.conns[i].Close(websocket.StatusNormalClosure, "benchmark done")
				if err != nil && websocket.CloseStatus(err) == -1 && !errors.Is(err, net.ErrClosed) {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	g.cancel()
	g.readers.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("idlelisten: %d of %d connections did not close cleanly, the first: %w", len(errs), len(g.conns), errs[0])
	}
	return nil
}
