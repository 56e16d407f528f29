package delivery

import (
	"context"
	"crypto/tls"
	"errors"
	"sync"
	"time"
)

// The connections to receivers, per host (host:port, as dialled). A host
// has at most perHost connections, dialling, in use or idle: a delivery
// that finds none idle and the host at its count waits for one to come
// back or close (the dispatcher's per-host ceiling is the same number, so
// it rarely does). Idle connections are kept up to idleTTL and maxIdle in
// all, the most recently used taken first, and each is checked for a
// close by the receiver before it is used again (idle.go).

// pool holds every host's connections.
type pool struct {
	dial    dialFunc
	config  *tls.Config
	perHost int
	maxIdle int
	idleTTL time.Duration
	now     func() time.Time

	mu     sync.Mutex
	hosts  map[string]*hostConns
	idle   int
	closed bool

	stopSweep chan struct{}
	swept     sync.WaitGroup
}

// hostConns is one host's connections. Guarded by pool.mu.
type hostConns struct {
	pool *pool
	addr string
	// idle are the connections waiting for a delivery, the most recently
	// used last.
	idle []*conn
	// open counts the host's connections: dialling, in use and idle.
	open int
	// waiters are the deliveries waiting for a connection, first come
	// first served.
	waiters []chan struct{}
}

func newPool(dial dialFunc, config *tls.Config, perHost, maxIdle int, idleTTL time.Duration) *pool {
	p := &pool{
		dial: dial, config: config, perHost: perHost, maxIdle: maxIdle, idleTTL: idleTTL,
		now: time.Now, hosts: make(map[string]*hostConns), stopSweep: make(chan struct{}),
	}
	p.swept.Go(p.sweepUntilClosed)
	return p
}

// get returns a connection to t: an idle one still open, else a new one,
// else (the host at its count) the first to come back, waiting up to the
// end of the exchange's bounded context. Each turn of its loop takes an
// idle connection, dials, or waits for one to come back: a bounded number
// of idle connections, then the context.
func (p *pool) get(x *exchange, t target) (*conn, error) {
	for {
		c, h, wait := p.take(t.addr)
		switch {
		case c != nil:
			if c.usable(p.now(), p.idleTTL) {
				return c, nil
			}
			h.discard(c)
		case wait == nil:
			c, err := dialConn(x.context(), p.dial, p.config, t)
			if err != nil {
				h.abandon()
				return nil, err
			}
			c.host = h
			return c, nil
		default:
			select {
			case <-wait:
			case <-x.context().Done():
				h.leave(wait)
				return nil, x.context().Err()
			}
		}
	}
}

// open dials connections to t, side by side, until the host has n (idle,
// in use or being dialled; at most the host's bound), and keeps them idle
// for the host's next deliveries; with as many already, or the pool
// closed, it does nothing. Each is dialled as a delivery's would be (the
// egress guard, the host's connect rate) and counted from the start, so
// the host's bound holds.
func (p *pool) open(ctx context.Context, t target, n int) error {
	p.mu.Lock()
	h := p.hostLocked(t.addr)
	more := min(n, p.perHost) - h.open
	if p.closed || more <= 0 {
		h.forgetIfUnusedLocked()
		p.mu.Unlock()
		return nil
	}
	h.open += more
	p.mu.Unlock()
	errs := make([]error, more)
	var dials sync.WaitGroup
	for i := range more {
		dials.Go(func() {
			c, err := dialConn(ctx, p.dial, p.config, t)
			if err != nil {
				h.abandon()
				errs[i] = err
				return
			}
			c.host = h
			h.release(c)
		})
	}
	dials.Wait()
	return errors.Join(errs...)
}

// take pops addr's most recent idle connection, or counts a new one to
// dial (c and wait nil), or queues a wait for one to come back.
func (p *pool) take(addr string) (c *conn, h *hostConns, wait chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	h = p.hostLocked(addr)
	if n := len(h.idle); n > 0 {
		c = h.idle[n-1]
		h.idle[n-1] = nil
		h.idle = h.idle[:n-1]
		p.idle--
		return c, h, nil
	}
	if h.open < p.perHost {
		h.open++
		return nil, h, nil
	}
	wait = make(chan struct{})
	h.waiters = append(h.waiters, wait)
	return nil, h, wait
}

// hostLocked returns addr's connections, adding the host when it has none.
// Called with mu held.
func (p *pool) hostLocked(addr string) *hostConns {
	h := p.hosts[addr]
	if h == nil {
		h = &hostConns{pool: p, addr: addr}
		p.hosts[addr] = h
	}
	return h
}

// release keeps c for the host's next delivery, unless the pool is closed
// or has maxIdle idle connections already.
func (h *hostConns) release(c *conn) {
	p := h.pool
	if c.netConn.SetDeadline(time.Time{}) != nil {
		h.discard(c)
		return
	}
	c.idleSince = p.now()
	p.mu.Lock()
	if p.closed || p.idle >= p.maxIdle {
		p.mu.Unlock()
		h.discard(c)
		return
	}
	h.idle = append(h.idle, c)
	p.idle++
	h.wakeLocked()
	p.mu.Unlock()
}

// discard closes c, which is not idle, and frees its place.
func (h *hostConns) discard(c *conn) {
	_ = c.netConn.Close()
	h.abandon()
}

// abandon frees the place of a connection that is gone or never came.
func (h *hostConns) abandon() {
	h.pool.mu.Lock()
	h.open--
	h.wakeLocked()
	h.forgetIfUnusedLocked()
	h.pool.mu.Unlock()
}

// leave takes back a wait that ctx ended; a wake-up it received meanwhile
// goes to the next waiter.
func (h *hostConns) leave(wait chan struct{}) {
	h.pool.mu.Lock()
	defer h.pool.mu.Unlock()
	for i, w := range h.waiters {
		if w == wait {
			h.waiters = append(h.waiters[:i], h.waiters[i+1:]...)
			h.forgetIfUnusedLocked()
			return
		}
	}
	h.wakeLocked()
}

// wakeLocked lets the first waiter try again.
func (h *hostConns) wakeLocked() {
	if len(h.waiters) > 0 {
		close(h.waiters[0])
		h.waiters[0] = nil
		h.waiters = h.waiters[1:]
	}
}

// forgetIfUnusedLocked drops a host nothing refers to any more, so that
// the hosts held are those with connections or waiters.
func (h *hostConns) forgetIfUnusedLocked() {
	if h.open == 0 && len(h.waiters) == 0 && h.pool.hosts[h.addr] == h {
		delete(h.pool.hosts, h.addr)
	}
}

// sweepUntilClosed closes connections idle longer than idleTTL, every
// third of it, until the pool is closed.
func (p *pool) sweepUntilClosed() {
	tick := time.NewTicker(p.idleTTL / 3)
	defer tick.Stop()
	for {
		select {
		case <-p.stopSweep:
			return
		case <-tick.C:
			p.closeIdle(p.now().Add(-p.idleTTL))
		}
	}
}

// closeIdle closes the idle connections that went idle before cutoff.
func (p *pool) closeIdle(cutoff time.Time) {
	var stale []*conn
	p.mu.Lock()
	for _, h := range p.hosts {
		kept := h.idle[:0]
		for _, c := range h.idle {
			if c.idleSince.Before(cutoff) {
				stale = append(stale, c)
				continue
			}
			kept = append(kept, c)
		}
		clear(h.idle[len(kept):])
		h.idle = kept
	}
	p.idle -= len(stale)
	p.mu.Unlock()
	for _, c := range stale {
		c.host.discard(c)
	}
}

// close closes the idle connections and stops the sweep; connections in
// use are closed when their delivery ends, and deliveries after close
// still work, each on a connection of its own.
func (p *pool) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	close(p.stopSweep)
	p.swept.Wait()
	p.closeIdle(time.Unix(1<<62, 0))
}
