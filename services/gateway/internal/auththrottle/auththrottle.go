// Package auththrottle slows down the guessing of API keys: it counts
// failed authentications per client address, and an address that failed
// too often within a window is refused until the window ends, before its
// key is looked up in the database, unless the key authenticated
// recently (known.go). Memory is bounded: a fixed number of
// addresses is remembered, the least recently failing forgotten first.
// IPv6 clients are counted per /64, the block a single host or site
// usually gets, so that one client cannot escape by rotating addresses
// within its own block.
package auththrottle

import (
	"container/list"
	"crypto/sha256"
	"net/netip"
	"sync"
	"time"
)

// Defaults.
const (
	// DefaultFailures is how many failed authentications an address may
	// have within a window.
	DefaultFailures = 20
	// Window is the period failures are counted over.
	Window = time.Minute
	// DefaultAddresses is how many addresses are remembered: about 100
	// bytes each.
	DefaultAddresses = 65_536
)

// Throttle counts failed authentications per client address. The zero
// value is unusable; a nil *Throttle throttles nothing.
type Throttle struct {
	failures  int
	addresses int
	knownKeys int
	now       func() time.Time

	mu      sync.Mutex
	entries map[netip.Prefix]*list.Element
	recent  *list.List // of *entry, most recently failing first
	// known and knownOrder are the keys that authenticated (known.go),
	// most recently first.
	known      map[[sha256.Size]byte]*list.Element
	knownOrder *list.List
}

type entry struct {
	key      netip.Prefix
	start    time.Time // of the window
	failures int
}

// Options shape a Throttle; zero fields take the defaults.
type Options struct {
	// Failures allowed per address within Window.
	Failures int
	// Addresses remembered at most.
	Addresses int
	// KnownKeys is how many keys that authenticated are remembered
	// (known.go).
	KnownKeys int
	// Now is the clock (tests); time.Now by default.
	Now func() time.Time
}

// New returns a Throttle.
func New(o Options) *Throttle {
	if o.Failures <= 0 {
		o.Failures = DefaultFailures
	}
	if o.Addresses <= 0 {
		o.Addresses = DefaultAddresses
	}
	if o.KnownKeys <= 0 {
		o.KnownKeys = DefaultKnownKeys
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Throttle{
		failures: o.Failures, addresses: o.Addresses, knownKeys: o.KnownKeys, now: o.Now,
		entries: map[netip.Prefix]*list.Element{}, recent: list.New(),
		known: map[[sha256.Size]byte]*list.Element{}, knownOrder: list.New(),
	}
}

// key is what addr is counted under: the address itself for IPv4, its /64
// for IPv6.
func key(addr netip.Addr) netip.Prefix {
	addr = addr.Unmap()
	bits := 32
	if addr.Is6() {
		bits = 64
	}
	p, _ := addr.Prefix(bits) // only an invalid address fails, keyed as the zero Prefix
	return p
}

// Blocked reports whether addr has used up its failures for the current
// window, and how long until the window ends.
func (t *Throttle) Blocked(addr netip.Addr) (time.Duration, bool) {
	if t == nil {
		return 0, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	el, ok := t.entries[key(addr)]
	if !ok {
		return 0, false
	}
	e := el.Value.(*entry)
	left := e.start.Add(Window).Sub(t.now())
	if left <= 0 || e.failures < t.failures {
		return 0, false
	}
	return left, true
}

// Failed records a failed authentication from addr.
func (t *Throttle) Failed(addr netip.Addr) {
	if t == nil {
		return
	}
	now := t.now()
	k := key(addr)
	t.mu.Lock()
	defer t.mu.Unlock()
	if el, ok := t.entries[k]; ok {
		e := el.Value.(*entry)
		if !now.Before(e.start.Add(Window)) {
			e.start, e.failures = now, 0
		}
		e.failures++
		t.recent.MoveToFront(el)
		return
	}
	if t.recent.Len() >= t.addresses {
		oldest := t.recent.Back()
		t.recent.Remove(oldest)
		delete(t.entries, oldest.Value.(*entry).key)
	}
	t.entries[k] = t.recent.PushFront(&entry{key: k, start: now, failures: 1})
}
