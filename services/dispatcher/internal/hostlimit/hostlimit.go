// Package hostlimit bounds the deliveries in flight to each destination
// host, so that one slow receiver cannot take every delivery slot of a
// dispatcher.
//
// It never makes a caller wait: a delivery to a host at its limit is
// refused at once and the caller hands the message back to JetStream with
// a short delay (see Backoff). Waiting in the process instead would keep a
// process-wide slot busy, which is exactly the starvation to avoid.
package hostlimit

import (
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
	busy  map[string]int
}

// New returns a Limiter allowing limit deliveries at once to each host.
func New(limit int) *Limiter {
	return &Limiter{limit: max(limit, 1), busy: make(map[string]int)}
}

// TryAcquire takes a slot for host. It returns the function that gives the
// slot back and true, or nil and false when host is at its limit.
func (l *Limiter) TryAcquire(host string) (release func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.busy[host] >= l.limit {
		return nil, false
	}
	l.busy[host]++
	var once sync.Once
	return func() { once.Do(func() { l.release(host) }) }, true
}

func (l *Limiter) release(host string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Deleting idle hosts keeps the map as small as the hosts in flight.
	if l.busy[host] <= 1 {
		delete(l.busy, host)
		return
	}
	l.busy[host]--
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
