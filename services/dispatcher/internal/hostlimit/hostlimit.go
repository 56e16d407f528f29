// Package hostlimit bounds the deliveries in flight to each destination
// host, so that one slow receiver cannot take every delivery slot of a
// dispatcher.
//
// A caller waits for a host's slot only briefly (Acquire's wait): long
// enough that a fast receiver at its limit is served at the pace its
// answers free slots, short enough that a slow one cannot hold the
// process's delivery slots. After that the caller hands the message back to
// JetStream with a delay (see Backoff), and other hosts' messages are taken
// meanwhile.
package hostlimit

import (
	"context"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Limiter counts deliveries in flight per host. The zero value is not
// usable; call New.
type Limiter struct {
	limit int
	mu    sync.Mutex
	hosts map[string]*host
}

// host is one destination's state; it exists while deliveries to it are in
// flight or waited for.
type host struct {
	busy    int
	waiting int
	// freed is closed (and replaced) when a slot is given back while
	// someone waits, waking every waiter to try again.
	freed chan struct{}
}

// New returns a Limiter allowing limit deliveries at once to each host.
func New(limit int) *Limiter {
	return &Limiter{limit: max(limit, 1), hosts: make(map[string]*host)}
}

// TryAcquire takes a slot for key without waiting. It returns the function
// that gives the slot back and true, or nil and false when the host is at
// its limit.
func (l *Limiter) TryAcquire(key string) (release func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.take(key)
}

// Acquire takes a slot for key, waiting up to wait (or until ctx is done)
// for one to be given back. It returns false when none was.
func (l *Limiter) Acquire(ctx context.Context, key string, wait time.Duration) (release func(), ok bool) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		l.mu.Lock()
		if release, ok := l.take(key); ok {
			l.mu.Unlock()
			return release, true
		}
		h := l.hosts[key]
		h.waiting++
		freed := h.freed
		l.mu.Unlock()

		select {
		case <-freed:
			l.stopWaiting(key)
		case <-timer.C:
			l.stopWaiting(key)
			return nil, false
		case <-ctx.Done():
			l.stopWaiting(key)
			return nil, false
		}
	}
}

// take takes a slot if one is free; l.mu is held.
func (l *Limiter) take(key string) (release func(), ok bool) {
	h := l.hosts[key]
	if h == nil {
		h = &host{freed: make(chan struct{})}
		l.hosts[key] = h
	}
	if h.busy >= l.limit {
		return nil, false
	}
	h.busy++
	var once sync.Once
	return func() { once.Do(func() { l.release(key) }) }, true
}

func (l *Limiter) stopWaiting(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.hosts[key]
	h.waiting--
	l.forgetIdle(key, h)
}

func (l *Limiter) release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.hosts[key]
	h.busy--
	if h.waiting > 0 {
		close(h.freed)
		h.freed = make(chan struct{})
	}
	l.forgetIdle(key, h)
}

// forgetIdle deletes a host nobody uses or waits for, which keeps the map
// as small as the hosts in flight.
func (l *Limiter) forgetIdle(key string, h *host) {
	if h.busy == 0 && h.waiting == 0 {
		delete(l.hosts, key)
	}
}

// Waiting is the number of callers waiting for a slot on key.
func (l *Limiter) Waiting(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h := l.hosts[key]; h != nil {
		return h.waiting
	}
	return 0
}

// Hosts is the number of hosts with deliveries in flight or awaited.
func (l *Limiter) Hosts() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.hosts)
}

// Limit is the number of deliveries allowed at once to one host.
func (l *Limiter) Limit() int { return l.limit }

// Key is the host a delivery URL counts against: its lower-cased host and
// port (443 when absent), so https://A.example/ and https://a.example:443/
// share one limit while two ports of one machine are two receivers. A URL
// that does not parse has the key "" (the delivery fails on it anyway).
func Key(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// Backoff is how long a message waits before it comes back when its host
// was busy on its delivered-th delivery: 250 ms, doubling, at most 2 s.
// Short, because a slot usually frees within one delivery; growing, because
// a host that stays busy should not cost a redelivery every few ms.
func Backoff(delivered uint64) time.Duration {
	d := 250 * time.Millisecond
	for i := uint64(1); i < delivered && d < 2*time.Second; i++ {
		d *= 2
	}
	return min(d, 2*time.Second)
}
