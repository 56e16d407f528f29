package delivery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// New connections per host. Every new connection to a receiver costs the
// dispatcher a TCP connect and a TLS handshake, far more CPU than a
// delivery on a kept connection, so a receiver that closes every
// connection after one answer could make it handshake hundreds of times a
// second. Each host
// (host:port, as dialled) has a token bucket: it starts full with the
// host's concurrency ceiling, so a burst to a quiet host opens all the
// connections it needs at once, and refills at the connect rate (default
// 50/s). A dial that would wait longer than maxConnectWait for its token
// fails at once with ErrConnectionRate and its delivery is handed back
// unsent; other hosts have buckets of their own and are not slowed.

// ErrConnectionRate is Send's error when the destination host has used up
// its new connections for now: the delivery was not sent and should be
// handed back, like a host at its concurrency limit; it is not an attempt.
var ErrConnectionRate = errors.New("delivery: destination host at its rate of new connections")

// connRate holds the hosts' buckets.
type connRate struct {
	rate    float64 // tokens per second
	burst   float64
	maxWait time.Duration
	// max bounds the hosts tracked; a full bucket is forgotten when room is
	// needed (a new bucket starts full, so nothing is lost), and a host
	// beyond max with none to forget is not limited.
	max int
	now func() time.Time

	mu    sync.Mutex
	hosts map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newConnRate(perSecond, burst int, maxWait time.Duration, maxHosts int) *connRate {
	return &connRate{
		rate: float64(perSecond), burst: float64(burst), maxWait: maxWait, max: maxHosts,
		now: time.Now, hosts: make(map[string]*bucket),
	}
}

// dialFunc is net.Dialer.DialContext's shape.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// dial wraps next so that each dial to an address first takes its host's
// token, waiting for it up to maxWait.
func (r *connRate) dial(next dialFunc) dialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		wait, ok := r.reserve(addr)
		if !ok {
			return nil, fmt.Errorf("%w (%s: %g a second after the first %g)", ErrConnectionRate, addr, r.rate, r.burst)
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			}
		}
		return next(ctx, network, addr)
	}
}

// reserve takes addr's next token and says how long to wait for it, or
// reports false (taking nothing) when that would be longer than maxWait.
func (r *connRate) reserve(addr string) (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	b := r.hosts[addr]
	if b == nil {
		if len(r.hosts) >= r.max && !r.forgetFull(now) {
			return 0, true
		}
		b = &bucket{tokens: r.burst, at: now}
		r.hosts[addr] = b
	}
	b.refill(now, r.rate, r.burst)
	if b.tokens >= 1 {
		b.tokens--
		return 0, true
	}
	wait := time.Duration((1 - b.tokens) / r.rate * float64(time.Second))
	if wait > r.maxWait {
		return wait, false
	}
	// A token owed: the bucket goes below zero and the next dial waits
	// for this one's token as well as its own.
	b.tokens--
	return wait, true
}

func (b *bucket) refill(now time.Time, rate, burst float64) {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(burst, b.tokens+d.Seconds()*rate)
		b.at = now
	}
}

// forgetFull drops the buckets that have refilled completely and reports
// whether it dropped any. Called with mu held.
func (r *connRate) forgetFull(now time.Time) bool {
	dropped := false
	for addr, b := range r.hosts {
		if b.refill(now, r.rate, r.burst); b.tokens >= r.burst {
			delete(r.hosts, addr)
			dropped = true
		}
	}
	return dropped
}
