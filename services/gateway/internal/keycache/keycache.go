// Package keycache remembers, for a short time, which API keys were found
// valid, so that authentication does not read the key's row on every
// request. Entries are keyed by the SHA-256 of the key (the plain key is
// never kept), hold who the key speaks for and its project's rate limit,
// and expire after a TTL. Only successful look-ups are cached: an unknown
// or revoked key is looked up again on each request, so a key created a
// moment ago works at once.
//
// Forget drops a key at once; the API calls it when it revokes a key, so a
// revocation through this process takes effect on its next request. A
// revocation made elsewhere (another replica, the database directly) takes
// up to the TTL to reach this process.
package keycache

import (
	"crypto/sha256"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Limits of the configuration (SUNDIAL_GATEWAY_KEY_CACHE_TTL) and the
// default bound on entries.
const (
	MaxTTL     = 10 * time.Second
	DefaultMax = 10_000
)

// Entry is what a valid key resolved to.
type Entry struct {
	KeyID     uuid.UUID
	ProjectID uuid.UUID
	// RatePerSecond and RateBurst are the project's rate limit when the key
	// was read.
	RatePerSecond int
	RateBurst     int
}

type cached struct {
	Entry
	expires time.Time
}

// Cache maps API keys to their Entry for a TTL, holding at most a fixed
// number of entries. It is safe for concurrent use. A nil *Cache is a
// cache that is always empty (caching disabled).
type Cache struct {
	ttl time.Duration
	max int
	now func() time.Time

	mu      sync.RWMutex
	entries map[[sha256.Size]byte]cached
	// gen counts Forget calls: a look-up that started before one cannot
	// store what it read (Put), since it may predate a revocation.
	gen uint64
}

// Option configures a Cache.
type Option func(*Cache)

// WithClock replaces time.Now (tests).
func WithClock(now func() time.Time) Option {
	return func(c *Cache) { c.now = now }
}

// New returns a cache keeping entries for ttl, at most maxEntries of them
// (DefaultMax when maxEntries < 1). A ttl of 0 or less disables caching:
// New returns nil, on which every method works and Get always misses.
func New(ttl time.Duration, maxEntries int, opts ...Option) *Cache {
	if ttl <= 0 {
		return nil
	}
	if maxEntries < 1 {
		maxEntries = DefaultMax
	}
	c := &Cache{ttl: ttl, max: maxEntries, now: time.Now, entries: make(map[[sha256.Size]byte]cached)}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Get returns the entry of the plain key while it is fresh.
func (c *Cache) Get(plain string) (Entry, bool) {
	if c == nil {
		return Entry{}, false
	}
	h := sha256.Sum256([]byte(plain))
	c.mu.RLock()
	e, ok := c.entries[h]
	c.mu.RUnlock()
	if !ok || !c.now().Before(e.expires) {
		return Entry{}, false
	}
	return e.Entry, true
}

// Generation is to be read before looking a key up, and passed to Put with
// what the look-up found.
func (c *Cache) Generation() uint64 {
	if c == nil {
		return 0
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

// Put remembers that the plain key is valid and resolves to e, unless a
// Forget ran since gen was read (the look-up may have seen the key before
// its revocation). When the cache is full, expired entries go first, then
// arbitrary ones.
func (c *Cache) Put(plain string, e Entry, gen uint64) {
	if c == nil {
		return
	}
	h := sha256.Sum256([]byte(plain))
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if _, ok := c.entries[h]; !ok && len(c.entries) >= c.max {
		c.evict(now)
	}
	c.entries[h] = cached{Entry: e, expires: now.Add(c.ttl)}
}

// evict makes room for one entry: every expired one goes, or, when none
// has expired, one arbitrary entry (map order). Called with mu held.
func (c *Cache) evict(now time.Time) {
	for h, e := range c.entries {
		if !now.Before(e.expires) {
			delete(c.entries, h)
		}
	}
	for h := range c.entries {
		if len(c.entries) < c.max {
			return
		}
		delete(c.entries, h)
	}
}

// Forget drops the key with this id, at once, and keeps look-ups already
// under way from storing it again.
func (c *Cache) Forget(keyID uuid.UUID) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for h, e := range c.entries {
		if e.KeyID == keyID {
			delete(c.entries, h)
		}
	}
}

// Len is the number of entries held, expired ones included.
func (c *Cache) Len() int {
	if c == nil {
		return 0
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}
