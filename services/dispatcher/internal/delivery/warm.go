package delivery

import (
	"context"
	"net/http/httptrace"
	"sync"
	"time"
)

// Cold hosts. Asked for many requests at once to a host it has no
// connection to, Go's transport dials and handshakes once per request, even
// when the host speaks HTTP/2 and one connection would carry them all: a
// burst to a quiet receiver cost up to SUNDIAL_DISPATCHER_CONCURRENCY TLS
// handshakes, CPU on both sides and a visible delay before the first
// deliveries arrived. So while a host has had no connection lately, one
// delivery at a time opens one and the others to that host wait until it
// has it (httptrace's GotConn); then they go, over that connection when it
// is HTTP/2, or opening their own over HTTP/1.1. The wait is part of the
// delivery's one deadline. A first connection that fails releases the
// waiters to try for themselves.

// warmHosts tracks which hosts have had a connection lately.
type warmHosts struct {
	// ttl is how long a host counts as warm after its last exchange: the
	// transport's idle-connection timeout.
	ttl time.Duration
	// max bounds the hosts tracked; beyond it a new host is not gated.
	max int
	now func() time.Time

	mu    sync.Mutex
	hosts map[string]*hostWarmth
}

type hostWarmth struct {
	warmUntil time.Time
	// opening is closed once the delivery opening the first connection
	// has it (or gave up); nil when none is opening.
	opening chan struct{}
}

func newWarmHosts(ttl time.Duration, maxHosts int) *warmHosts {
	return &warmHosts{ttl: ttl, max: maxHosts, now: time.Now, hosts: map[string]*hostWarmth{}}
}

// enter lets a delivery to host go. When the host is cold and no other
// delivery is opening a connection, this one is to open it: enter returns
// ctx with a trace that marks the host warm once the connection is had,
// and a release to call when the exchange is over (it lets the waiters go
// if the connection never came). When another delivery is opening one,
// enter waits for it, or for ctx to end.
func (w *warmHosts) enter(ctx context.Context, host string) (context.Context, func(), error) {
	w.mu.Lock()
	h, ok := w.hosts[host]
	if !ok {
		if !w.makeRoom() {
			w.mu.Unlock()
			return ctx, func() {}, nil
		}
		h = &hostWarmth{}
		w.hosts[host] = h
	}
	if w.now().Before(h.warmUntil) {
		w.mu.Unlock()
		return ctx, func() {}, nil
	}
	if wait := h.opening; wait != nil {
		w.mu.Unlock()
		select {
		case <-wait:
			return ctx, func() {}, nil
		case <-ctx.Done():
			return ctx, nil, ctx.Err()
		}
	}
	opening := make(chan struct{})
	h.opening = opening
	w.mu.Unlock()

	var once sync.Once
	open := func(connected bool) {
		once.Do(func() {
			w.mu.Lock()
			if connected {
				h.warmUntil = w.now().Add(w.ttl)
			}
			h.opening = nil
			w.mu.Unlock()
			close(opening)
		})
	}
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { open(true) }}
	return httptrace.WithClientTrace(ctx, trace), func() { open(false) }, nil
}

// touch keeps host warm after an exchange that reached it.
func (w *warmHosts) touch(host string) {
	w.mu.Lock()
	if h, ok := w.hosts[host]; ok {
		h.warmUntil = w.now().Add(w.ttl)
	}
	w.mu.Unlock()
}

// makeRoom reports whether one more host may be tracked, forgetting the
// cold ones when the map is full. Called with mu held.
func (w *warmHosts) makeRoom() bool {
	if len(w.hosts) < w.max {
		return true
	}
	now := w.now()
	for host, h := range w.hosts {
		if h.opening == nil && !now.Before(h.warmUntil) {
			delete(w.hosts, host)
		}
	}
	return len(w.hosts) < w.max
}
