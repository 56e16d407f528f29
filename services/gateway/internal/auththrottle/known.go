package auththrottle

import (
	"crypto/sha256"
	"time"
)

// Keys that authenticated recently. The throttle bounds what guessing
// costs; it must not lock out a client that only shares its address with
// a guesser (a NAT, an ingress without trusted proxies). So a blocked
// address's request whose key authenticated within KnownFor is looked up
// as usual: a guesser cannot present such a key without having it. Only
// the keys' SHA-256 is kept.
const (
	// KnownFor is how long a key that authenticated is let past a block.
	KnownFor = 24 * time.Hour
	// DefaultKnownKeys is how many such keys are remembered, the least
	// recently authenticated forgotten first: about 130 bytes each.
	DefaultKnownKeys = 16_384
)

type knownKey struct {
	sum  [sha256.Size]byte
	seen time.Time
}

// Succeeded records that key authenticated.
func (t *Throttle) Succeeded(key string) {
	if t == nil {
		return
	}
	sum := sha256.Sum256([]byte(key))
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if el, ok := t.known[sum]; ok {
		el.Value.(*knownKey).seen = now
		t.knownOrder.MoveToFront(el)
		return
	}
	if t.knownOrder.Len() >= t.knownKeys {
		oldest := t.knownOrder.Back()
		t.knownOrder.Remove(oldest)
		delete(t.known, oldest.Value.(*knownKey).sum)
	}
	t.known[sum] = t.knownOrder.PushFront(&knownKey{sum: sum, seen: now})
}

// Known reports whether key authenticated within KnownFor.
func (t *Throttle) Known(key string) bool {
	if t == nil {
		return false
	}
	sum := sha256.Sum256([]byte(key))
	t.mu.Lock()
	defer t.mu.Unlock()
	el, ok := t.known[sum]
	return ok && t.now().Sub(el.Value.(*knownKey).seen) < KnownFor
}
