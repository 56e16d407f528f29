package delivery

import (
	"sync"
	"sync/atomic"
	"time"
)

// Cold hosts. Asked for many requests at once to a host it has no
// connection to, Go's transport dials and handshakes once per request at
// the same instant: a burst to a quiet receiver cost up to
// SUNDIAL_DISPATCHER_CONCURRENCY full TLS handshakes at once, CPU on both
// sides and a visible delay before the first deliveries arrived. So while a
// host has had no connection lately, one delivery at a time opens one and
// the others to that host wait until it has it. Then
// they go, each opening its own connection (deliveries are HTTP/1.1 only,
// client.go), and their handshakes resume the first one's TLS session
// when its ticket has been read by then, as it usually has: no
// certificate checks on either side. The wait is part of the delivery's
// one deadline. A first connection that
// fails releases the waiters to try for themselves.

// warmHosts tracks which hosts have had a connection lately. Every delivery
// asks it, so the common case (a warm host) takes no lock: hosts is a
// sync.Map and warmUntil an atomic; mu guards only a cold host's opening
// and the count.
type warmHosts struct {
	// ttl is how long a host counts as warm after its last exchange: the
	// transport's idle-connection timeout.
	ttl time.Duration
	// max bounds the hosts tracked; beyond it a new host is not gated.
	max int
	now func() time.Time

	hosts sync.Map // host -> *hostWarmth
	mu    sync.Mutex
	count int
}

type hostWarmth struct {
	// warmUntil is when the host turns cold, in Unix nanoseconds.
	warmUntil atomic.Int64
	// opening is closed once the delivery opening the first connection
	// has it (or gave up); nil when none is opening. Guarded by mu.
	opening chan struct{}
}

// touchEvery is how stale warmUntil may get before an exchange moves it:
// a store on every delivery would bounce its cache line between cores.
const touchEvery = time.Second

func newWarmHosts(ttl time.Duration, maxHosts int) *warmHosts {
	return &warmHosts{ttl: ttl, max: maxHosts, now: time.Now}
}

func (h *hostWarmth) warm(now time.Time) bool {
	return now.UnixNano() < h.warmUntil.Load()
}

// enter lets a delivery to host go. When the host is cold and no other
// delivery is opening a connection, this one is to open it: enter returns
// the function to call, exactly once, when it has a connection (true) or
// gave up (false), which marks the host warm or lets the waiters try for
// themselves. When
// another delivery is opening one, enter waits for it, or for the end of
// the exchange's bounded context.
func (w *warmHosts) enter(x *exchange, host string) (func(connected bool), error) {
	if v, ok := w.hosts.Load(host); ok && v.(*hostWarmth).warm(w.now()) {
		return noop, nil
	}
	w.mu.Lock()
	h := w.host(host)
	if h == nil || h.warm(w.now()) {
		w.mu.Unlock()
		return noop, nil
	}
	if wait := h.opening; wait != nil {
		w.mu.Unlock()
		select {
		case <-wait:
			return noop, nil
		case <-x.context().Done():
			return nil, x.context().Err()
		}
	}
	opening := make(chan struct{})
	h.opening = opening
	w.mu.Unlock()

	return func(connected bool) {
		if connected {
			h.warmUntil.Store(w.now().Add(w.ttl).UnixNano())
		}
		w.mu.Lock()
		h.opening = nil
		w.mu.Unlock()
		close(opening)
	}, nil
}

func noop(bool) {}

// host returns host's entry, adding it if there is room; nil when there
// is none. Called with mu held.
func (w *warmHosts) host(host string) *hostWarmth {
	if v, ok := w.hosts.Load(host); ok {
		return v.(*hostWarmth)
	}
	if w.count >= w.max {
		w.forgetCold()
		if w.count >= w.max {
			return nil
		}
	}
	h := &hostWarmth{}
	w.hosts.Store(host, h)
	w.count++
	return h
}

// forgetCold drops the hosts that are cold and not being opened. Called
// with mu held.
func (w *warmHosts) forgetCold() {
	now := w.now()
	w.hosts.Range(func(key, v any) bool {
		if h := v.(*hostWarmth); h.opening == nil && !h.warm(now) {
			w.hosts.Delete(key)
			w.count--
		}
		return true
	})
}

// touch keeps host warm after an exchange that reached it.
func (w *warmHosts) touch(host string) {
	v, ok := w.hosts.Load(host)
	if !ok {
		return
	}
	h := v.(*hostWarmth)
	until := w.now().Add(w.ttl).UnixNano()
	if until-h.warmUntil.Load() > int64(touchEvery) {
		h.warmUntil.Store(until)
	}
}
