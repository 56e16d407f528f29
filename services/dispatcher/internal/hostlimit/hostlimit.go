// Package hostlimit bounds the deliveries in flight to each destination
// host, per project, with a limit that adapts to the receiver (adaptive.go),
// so that one slow receiver cannot take a dispatcher's delivery slots, one
// project's slow endpoint cannot take a shared host from another project,
// and a healthy receiver gets the throughput it can take without tuning.
//
// A flow is one project's deliveries to one host. Each flow has its own
// adaptive limit, under the project's cap (maxConcurrency) and the
// operator's ceiling; all flows to one host together stay under the
// ceiling too, and when they contend for it a flow at or above its fair
// share (the ceiling divided among the flows in flight or waiting) gives
// way to a waiting flow below its share.
//
// A delivery in flight much longer than its flow's typical one (a slow or
// hanging path) is parked: it stops counting against the flow's limit, so
// that it costs only itself and not the hooks to the domain's other paths.
// Parked deliveries still count against the host's ceiling, and a flow
// parks at most its limit or half the ceiling, whichever is more: room for
// a domain's slow paths at a few thousand hooks a second, while a receiver
// that turns slow as a whole is sent no more than that beyond its limit
// before its median shows it (and its breaker pauses it).
//
// A caller that finds no slot waits in memory for one while a slot is
// expected to free within Acquire's wait (from the flow's typical latency
// and the waiters ahead, or the next parking); otherwise it defers the hook
// at once, with the suggested delay Acquire returns, and the scheduler
// hands it out again later without counting an attempt (docs/security.md,
// "Waiting is not an attempt").
package hostlimit

import (
	"context"
	"math/rand/v2"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sundial-run/sundial/pkg/event"
)

// Config tunes a Limiter.
type Config struct {
	// Ceiling bounds the deliveries in flight to one host, all projects
	// together, and so every flow's limit (at least 1).
	Ceiling int
	// Initial is a new flow's limit (default min(DefaultInitial, Ceiling)).
	Initial int
	// Now is the clock (default time.Now); tests pass a fake one.
	Now func() time.Time
}

// DefaultInitial is Config.Initial's default: a receiver new to the
// dispatcher gets no more deliveries at once than a modest client sends,
// and the limit grows from there as it answers.
const DefaultInitial = 16

// flowIdleTTL is how long a flow's learnt limit is kept once it has
// nothing in flight: a burst that comes back within it starts where the
// last one ended.
const flowIdleTTL = 5 * time.Minute

// unknownService is the deferral base of a flow with no finished delivery
// yet.
const unknownService = time.Second

// A delivery is parked once it has been in flight parkFactor times its
// flow's typical latency, and at least parkMin: far beyond what the flow's
// other deliveries take, yet not so soon that a receiver's ordinary jitter
// parks anything.
const (
	parkFactor = 4
	parkMin    = 200 * time.Millisecond
)

// Limiter counts deliveries in flight per flow and host. The zero value is
// not usable; call New.
type Limiter struct {
	cfg Config
	mu  sync.Mutex
	// hosts exist while a delivery to them is in flight or waited for, or
	// a flow of theirs is remembered.
	hosts     map[string]*host
	lastSweep time.Time
}

// host is one destination's state.
type host struct {
	busy    int
	waiting int
	// woken counts the waiters handed a slot (wakeLocked) that have not
	// yet come back for it: the slot is theirs to take.
	woken int
	flows map[string]*flow
}

// flow is one project's deliveries to one host.
type flow struct {
	// busy counts the deliveries in flight, parked counts those of them
	// parked; the others are on the list from first (the oldest) to last.
	busy        int
	parked      int
	first, last *Slot
	waiting     int
	// queue holds the wake-up channels of the flow's waiters not yet
	// woken, oldest first; woken is as the host's.
	queue []chan struct{}
	woken int
	// cap is the project's cap at the last acquire (0: none).
	cap int
	// deferred estimates the flow's hooks deferred and not yet served
	// again: a deferral adds one, a delivery finished takes one off.
	deferred int
	lim      *adaptive
	idle     time.Time // when busy and waiting last reached 0
}

// New returns a Limiter.
func New(cfg Config) *Limiter {
	cfg.Ceiling = max(cfg.Ceiling, 1)
	if cfg.Initial <= 0 {
		cfg.Initial = DefaultInitial
	}
	cfg.Initial = min(cfg.Initial, cfg.Ceiling)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Limiter{cfg: cfg, hosts: make(map[string]*host)}
}

// Key names a flow: a project's deliveries to a host (Host).
type Key struct {
	Project string
	Host    string
}

// Slot is a delivery's place in its flow; call Done once it is finished.
type Slot struct {
	l       *Limiter
	key     Key
	started time.Time
	// inFlight is the flow's deliveries counted against its limit when
	// the slot was taken.
	inFlight int
	// prev and next link the flow's unparked slots, oldest first.
	prev, next *Slot
	parked     bool
	once       sync.Once
}

// Acquire takes a slot for key under the project's cap (0: none), waiting
// up to wait (or until ctx is done) for one to be given back or parked,
// unless none is expected to free within wait. It returns the slot, or nil
// and how long the caller should defer the hook.
func (l *Limiter) Acquire(ctx context.Context, key Key, cap int, wait time.Duration) (*Slot, time.Duration) {
	var (
		timer   *time.Timer
		wake    chan struct{}
		woken   bool
		waitEnd time.Time
	)
	for {
		l.mu.Lock()
		now := l.cfg.Now()
		h, f := l.flow(key, cap)
		if woken {
			l.stopWaitingLocked(h, f, true)
		}
		l.park(h, f, now)
		if s := l.take(key, h, f, now); s != nil {
			l.mu.Unlock()
			return s, 0
		}
		if timer == nil && l.freesIn(h, f, now) > wait {
			// Waiting would hold a delivery goroutine for nothing.
			d := l.deferLocked(h, f, now)
			l.mu.Unlock()
			return nil, d
		}
		if wake == nil {
			wake = make(chan struct{}, 1)
		}
		h.waiting++
		f.waiting++
		if woken {
			// Handed a slot it found gone, it is still the oldest waiter.
			f.queue = slices.Insert(f.queue, 0, wake)
		} else {
			f.queue = append(f.queue, wake)
		}
		parkIn := l.untilPark(f, now)
		l.mu.Unlock()
		if timer == nil {
			waitEnd = time.Now().Add(wait)
			timer = time.NewTimer(nextCheck(waitEnd, parkIn))
			defer timer.Stop()
		} else {
			timer.Reset(nextCheck(waitEnd, parkIn))
		}
		woken = false
		for !woken {
			select {
			case <-wake:
				woken = true
			case <-timer.C:
				if !time.Now().Before(waitEnd) {
					return nil, l.stopWaitingDeferred(key, wake)
				}
				timer.Reset(nextCheck(waitEnd, l.parkAndWake(key)))
			case <-ctx.Done():
				return nil, l.stopWaitingDeferred(key, wake)
			}
		}
	}
}

// nextCheck is how long a waiter sleeps before it looks again: until its
// wait ends, or until the flow's oldest delivery is parked if that comes
// first (parkIn, negative when none will be).
func nextCheck(waitEnd time.Time, parkIn time.Duration) time.Duration {
	d := time.Until(waitEnd)
	if parkIn >= 0 {
		d = min(d, parkIn)
	}
	return max(d, 0)
}

// flow returns key's host and flow, creating them; l.mu is held.
func (l *Limiter) flow(key Key, cap int) (*host, *flow) {
	h := l.hosts[key.Host]
	if h == nil {
		h = &host{flows: make(map[string]*flow)}
		l.hosts[key.Host] = h
	}
	f := h.flows[key.Project]
	if f == nil {
		f = &flow{lim: newAdaptive(l.cfg.Initial, l.cfg.Ceiling)}
		h.flows[key.Project] = f
	}
	if cap != f.cap {
		f.cap = cap
		ceiling := l.cfg.Ceiling
		if cap > 0 {
			ceiling = min(ceiling, cap)
		}
		f.lim.setCeiling(ceiling)
	}
	return h, f
}

// take takes a slot if the flow, its host and fairness allow; l.mu is held.
func (l *Limiter) take(key Key, h *host, f *flow, now time.Time) *Slot {
	if f.active() >= f.lim.Limit() || h.busy >= l.cfg.Ceiling {
		return nil
	}
	share := l.share(h, f)
	if f.busy >= share && l.starved(h, f, share) {
		return nil
	}
	h.busy++
	f.busy++
	s := &Slot{l: l, key: key, started: now, inFlight: f.active(), prev: f.last}
	if f.last != nil {
		f.last.next = s
	} else {
		f.first = s
	}
	f.last = s
	return s
}

// active is the flow's deliveries in flight that count against its limit.
func (f *flow) active() int { return f.busy - f.parked }

// unlink takes s off the flow's list of unparked slots.
func (f *flow) unlink(s *Slot) {
	if s.prev != nil {
		s.prev.next = s.next
	} else {
		f.first = s.next
	}
	if s.next != nil {
		s.next.prev = s.prev
	} else {
		f.last = s.prev
	}
	s.prev, s.next = nil, nil
}

// parkAfter is how long a delivery of f is in flight before it is parked;
// 0 while the flow has no typical latency to judge by (nothing parks).
func (f *flow) parkAfter() time.Duration {
	typical := f.lim.Typical()
	if typical == 0 {
		return 0
	}
	return max(parkMin, parkFactor*typical)
}

// park parks the flow's deliveries in flight for longer than parkAfter,
// oldest first, while it has fewer parked than maxParked; l.mu is held.
func (l *Limiter) park(h *host, f *flow, now time.Time) {
	after := f.parkAfter()
	for after > 0 && f.first != nil && f.parked < l.maxParked(f) && now.Sub(f.first.started) >= after {
		s := f.first
		f.unlink(s)
		s.parked = true
		f.parked++
	}
}

// maxParked is the most deliveries f may have parked: its limit or half
// the ceiling, whichever is more.
func (l *Limiter) maxParked(f *flow) int {
	return max(f.lim.Limit(), l.cfg.Ceiling/2)
}

// untilPark is how long until the flow's oldest unparked delivery is
// parked, negative when none will be (none in flight, no typical latency
// yet, or maxParked parked); l.mu is held.
func (l *Limiter) untilPark(f *flow, now time.Time) time.Duration {
	after := f.parkAfter()
	if after == 0 || f.first == nil || f.parked >= l.maxParked(f) {
		return -1
	}
	return max(f.first.started.Add(after).Sub(now), 0)
}

// parkAndWake parks what is due in key's flow and hands the slots that
// frees to waiters; it returns untilPark.
func (l *Limiter) parkAndWake(key Key) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.cfg.Now()
	h := l.hosts[key.Host]
	f := h.flows[key.Project]
	l.park(h, f, now)
	l.wakeLocked(h)
	return l.untilPark(f, now)
}

// freesIn estimates how soon a caller of f that found no slot gets one:
// with the flow at its limit, a slot frees about every typical latency
// divided by the deliveries counted against the limit, and a waiter has
// the waiters ahead of it to let by; the flow's next parking frees one
// sooner. At the host's ceiling, 0: the other flows' slots free at their
// own pace, and fairness hands them on. l.mu is held.
func (l *Limiter) freesIn(h *host, f *flow, now time.Time) time.Duration {
	typical := f.lim.Typical()
	if h.busy >= l.cfg.Ceiling || typical == 0 || f.active() < f.lim.Limit() {
		return 0
	}
	est := typical * time.Duration(f.waiting+1) / time.Duration(max(f.active(), 1))
	if p := l.untilPark(f, now); p >= 0 && f.waiting == 0 {
		est = min(est, p)
	}
	return est
}

// share is a flow's fair share of its host's ceiling: the ceiling divided
// among the flows in flight or waiting, f included.
func (l *Limiter) share(h *host, f *flow) int {
	n := 0
	for _, g := range h.flows {
		if g == f || g.busy > 0 || g.waiting > 0 {
			n++
		}
	}
	return max(l.cfg.Ceiling/n, 1)
}

// starved reports whether a flow of h other than f waits for a slot while
// below both its fair share and its own limit: f, at its share, gives way.
func (l *Limiter) starved(h *host, f *flow, share int) bool {
	for _, g := range h.flows {
		if g != f && g.waiting > 0 && g.busy < min(share, g.lim.Limit()) {
			return true
		}
	}
	return false
}

// stopWaitingLocked counts a waiter of f out, one that was woken or one
// that leaves its queue; l.mu is held.
func (l *Limiter) stopWaitingLocked(h *host, f *flow, woken bool) {
	h.waiting--
	f.waiting--
	if woken {
		h.woken--
		f.woken--
	}
}

// stopWaitingDeferred counts out a waiter that gives up (its wait or its
// context ended) and suggests its deferral. A waiter woken at the same
// moment passes the slot it was handed on.
func (l *Limiter) stopWaitingDeferred(key Key, wake chan struct{}) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.hosts[key.Host]
	f := h.flows[key.Project]
	queued := slices.Index(f.queue, wake)
	if queued >= 0 {
		f.queue = slices.Delete(f.queue, queued, queued+1)
	}
	l.stopWaitingLocked(h, f, queued < 0)
	d := l.deferLocked(h, f, l.cfg.Now())
	l.wakeLocked(h)
	l.forgetIdle(key, h)
	return d
}

// wakeLocked hands the slots h has free to its waiters, one wake-up per
// slot rather than every waiter woken to race for one: first to the flows
// below their fair share, oldest waiter first, then to any flow under its
// limit. A waiter woken takes its slot as any caller (take), so one that
// finds it gone (a new caller took it first) waits again, at the front of
// its queue, and the slot's holder wakes it when it is done. Keeping the
// slot for the waiter instead would make each freed slot a hand-off to a
// sleeping goroutine, several times the cost of letting callers take a
// free slot at once (BenchmarkContendedHost). l.mu is held.
func (l *Limiter) wakeLocked(h *host) {
	for h.waiting > h.woken && h.busy+h.woken < l.cfg.Ceiling {
		f := l.nextWoken(h)
		if f == nil {
			return
		}
		wake := f.queue[0]
		f.queue[0] = nil
		f.queue = f.queue[1:]
		f.woken++
		h.woken++
		wake <- struct{}{}
	}
}

// nextWoken is the flow of h whose oldest waiter gets the next free slot:
// one below its fair share if any, else any under its limit; nil when no
// waiter could take a slot now. l.mu is held.
func (l *Limiter) nextWoken(h *host) *flow {
	var under *flow
	for _, f := range h.flows {
		held := f.active() + f.woken
		if len(f.queue) == 0 || held >= f.lim.Limit() {
			continue
		}
		if held < l.share(h, f) {
			return f
		}
		under = f
	}
	return under
}

// deferLocked counts a deferral and suggests its delay: about when a slot
// frees for it, the hooks deferred or waiting ahead of it served first at
// the flow's pace (its limit per typical delivery), with ±20% jitter so
// that they do not all come back at once; event.ClampDefer bounds it.
// l.mu is held.
func (l *Limiter) deferLocked(h *host, f *flow, now time.Time) time.Duration {
	f.deferred++
	if f.busy == 0 && f.waiting == 0 {
		f.idle = now
	}
	typical := f.lim.Typical()
	if typical == 0 {
		typical = unknownService
	}
	ahead := float64(f.deferred+f.waiting) / float64(f.lim.Limit())
	d := time.Duration(float64(typical) * (1 + ahead) * (0.8 + 0.4*rand.Float64()))
	return event.ClampDefer(d)
}

// Done gives the slot back and teaches the flow's limit what the delivery
// showed; a sample with Signal 0 (nothing was sent) teaches nothing. A
// second call does nothing.
func (s *Slot) Done(sample Sample) {
	if s.l == nil {
		return // a Slot of no Limiter
	}
	s.once.Do(func() { s.l.done(s, sample) })
}

func (l *Limiter) done(s *Slot, sample Sample) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.hosts[s.key.Host]
	f := h.flows[s.key.Project]
	h.busy--
	f.busy--
	if s.parked {
		f.parked--
	} else {
		f.unlink(s)
	}
	if sample.Signal != 0 {
		sample.Started, sample.InFlight = s.started, s.inFlight
		f.lim.observe(sample, l.cfg.Now())
		f.deferred = max(f.deferred-1, 0)
	}
	l.park(h, f, l.cfg.Now())
	l.wakeLocked(h)
	l.forgetIdle(s.key, h)
}

// forgetIdle marks when a flow became idle, and now and then forgets the
// flows idle for flowIdleTTL and the hosts left without flows, which keeps
// the maps as small as the recent traffic. l.mu is held.
func (l *Limiter) forgetIdle(key Key, h *host) {
	now := l.cfg.Now()
	if f := h.flows[key.Project]; f != nil && f.busy == 0 && f.waiting == 0 {
		f.idle = now
	}
	if now.Sub(l.lastSweep) < flowIdleTTL/10 {
		return
	}
	l.lastSweep = now
	for name, h := range l.hosts {
		for p, f := range h.flows {
			if f.busy == 0 && f.waiting == 0 && now.Sub(f.idle) >= flowIdleTTL {
				delete(h.flows, p)
			}
		}
		if len(h.flows) == 0 {
			delete(l.hosts, name)
		}
	}
}

// Stats is a snapshot of one flow.
type Stats struct {
	Limit, InFlight, Parked, Waiting int
}

// Limit returns how many deliveries of key's flow may be in flight now:
// its limit, or a new flow's (Config.Initial) when it is unknown.
func (l *Limiter) Limit(key Key) int {
	if s := l.Flow(key); s.Limit > 0 { // a known flow's limit is at least 1
		return s.Limit
	}
	return l.cfg.Initial
}

// Flow returns key's current limit and counts (the zero Stats when the
// flow is unknown).
func (l *Limiter) Flow(key Key) Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h := l.hosts[key.Host]; h != nil {
		if f := h.flows[key.Project]; f != nil {
			return Stats{Limit: f.lim.Limit(), InFlight: f.busy, Parked: f.parked, Waiting: f.waiting}
		}
	}
	return Stats{}
}

// HostInFlight is the deliveries in flight to host, all projects.
func (l *Limiter) HostInFlight(host string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h := l.hosts[host]; h != nil {
		return h.busy
	}
	return 0
}

// Ceiling is the most deliveries allowed at once to one host.
func (l *Limiter) Ceiling() int { return l.cfg.Ceiling }

// Host is the host a delivery URL counts against: its lower-cased host and
// port (443 when absent), so https://A.example/ and https://a.example:443/
// share one limit while two ports of one machine are two receivers. A URL
// that does not parse has the host "" (the delivery fails on it anyway).
func Host(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return HostOf(u)
}

// HostOf is Host of a URL parsed already.
func HostOf(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "443"
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}
