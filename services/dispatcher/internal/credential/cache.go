package credential

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Loader loads one project's credentials.
type Loader interface {
	Get(ctx context.Context, projectID uuid.UUID) (Set, error)
}

// Cache keeps credentials for a short TTL: a key rotation or revocation
// reaches deliveries within the TTL, and a busy project costs one query per
// TTL instead of one per delivery. Its size is bounded; errors are not
// cached.
type Cache struct {
	loader Loader
	ttl    time.Duration
	max    int
	now    func() time.Time

	mu      sync.Mutex
	entries map[uuid.UUID]entry
}

type entry struct {
	set     Set
	expires time.Time
}

// NewCache returns a cache of at most maxEntries projects in front of
// loader. A ttl of zero or less disables caching.
func NewCache(loader Loader, ttl time.Duration, maxEntries int) *Cache {
	return &Cache{loader: loader, ttl: ttl, max: max(maxEntries, 1), now: time.Now, entries: map[uuid.UUID]entry{}}
}

// Get returns the project's credentials from the cache or the loader.
func (c *Cache) Get(ctx context.Context, projectID uuid.UUID) (Set, error) {
	if set, ok := c.lookup(projectID); ok {
		return set, nil
	}
	set, err := c.loader.Get(ctx, projectID)
	if err != nil {
		return Set{}, err
	}
	c.store(projectID, set)
	return set, nil
}

func (c *Cache) lookup(projectID uuid.UUID) (Set, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[projectID]
	if !ok || !c.now().Before(e.expires) {
		return Set{}, false
	}
	return e.set, true
}

func (c *Cache) store(projectID uuid.UUID, set Set) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if _, ok := c.entries[projectID]; !ok && len(c.entries) >= c.max {
		c.evict(now)
	}
	c.entries[projectID] = entry{set: set, expires: now.Add(c.ttl)}
}

// evict makes room for one entry: expired entries go first; if none has
// expired, an arbitrary one does (it is reloaded on its next use).
func (c *Cache) evict(now time.Time) {
	for id, e := range c.entries {
		if !now.Before(e.expires) {
			delete(c.entries, id)
		}
	}
	for id := range c.entries {
		if len(c.entries) < c.max {
			return
		}
		delete(c.entries, id)
	}
}

// Len reports how many projects are cached.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
