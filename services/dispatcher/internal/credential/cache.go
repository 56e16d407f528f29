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
// TTL instead of one per delivery. An entry in use is reloaded in the
// background shortly before it expires, so that a busy project's
// deliveries never wait for that query (tens of milliseconds when the
// database is busy, on every delivery of the project at that moment). A
// miss is loaded once: deliveries of the project that miss meanwhile wait
// for that load instead of each making the same query (a burst after a
// quiet spell starts up to the dispatcher's concurrency of them at once).
// Its size is bounded; errors are not cached.
type Cache struct {
	loader Loader
	ttl    time.Duration
	max    int
	now    func() time.Time

	mu      sync.Mutex
	entries map[uuid.UUID]entry
	// loading holds the foreground loads in progress, by project.
	loading map[uuid.UUID]*load
}

// load is one foreground load that other misses of its project wait for.
type load struct {
	done chan struct{}
	set  Set
	err  error
	// waiters counts the misses waiting for it; guarded by Cache.mu.
	waiters int
}

type entry struct {
	set     Set
	expires time.Time
	// refreshing is set while a background reload runs.
	refreshing bool
}

// refreshAhead is the part of the TTL, at its end, during which a use of
// the entry starts its reload in the background.
const refreshAhead = 5

// refreshTimeout bounds a background reload.
const refreshTimeout = 5 * time.Second

// NewCache returns a cache of at most maxEntries projects in front of
// loader. A ttl of zero or less disables caching.
func NewCache(loader Loader, ttl time.Duration, maxEntries int) *Cache {
	return &Cache{loader: loader, ttl: ttl, max: max(maxEntries, 1), now: time.Now, entries: map[uuid.UUID]entry{},
		loading: map[uuid.UUID]*load{}}
}

// Get returns the project's credentials from the cache or the loader.
func (c *Cache) Get(ctx context.Context, projectID uuid.UUID) (Set, error) {
	set, ok, refresh := c.lookup(projectID)
	if refresh {
		go c.refresh(context.WithoutCancel(ctx), projectID)
	}
	if ok {
		return set, nil
	}
	return c.loadOnce(ctx, projectID)
}

// loadOnce loads a project's credentials, or waits for the load already
// under way. A waiter whose ctx ends first gives up; the load goes on for
// the others. Its error goes to every waiter, and is not cached.
func (c *Cache) loadOnce(ctx context.Context, projectID uuid.UUID) (Set, error) {
	c.mu.Lock()
	l, waiting := c.loading[projectID]
	if waiting {
		l.waiters++
	} else {
		l = &load{done: make(chan struct{})}
		c.loading[projectID] = l
	}
	c.mu.Unlock()
	if waiting {
		select {
		case <-l.done:
			return l.set, l.err
		case <-ctx.Done():
			return Set{}, ctx.Err()
		}
	}
	l.set, l.err = c.loader.Get(ctx, projectID)
	if l.err == nil {
		c.store(projectID, l.set)
	}
	c.mu.Lock()
	delete(c.loading, projectID)
	c.mu.Unlock()
	close(l.done)
	return l.set, l.err
}

// lookup returns the cached set, if it has not expired, and whether the
// caller is to reload it in the background (it is near its expiry and no
// reload runs).
func (c *Cache) lookup(projectID uuid.UUID) (set Set, ok, refresh bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[projectID]
	now := c.now()
	if !ok || !now.Before(e.expires) {
		return Set{}, false, false
	}
	if !e.refreshing && !now.Before(e.expires.Add(-c.ttl/refreshAhead)) {
		e.refreshing = true
		c.entries[projectID] = e
		refresh = true
	}
	return e.set, true, refresh
}

// refresh reloads a project's entry. On failure the entry keeps serving
// until it expires; the first use after that loads it in the foreground
// and reports the error.
func (c *Cache) refresh(ctx context.Context, projectID uuid.UUID) {
	ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	set, err := c.loader.Get(ctx, projectID)
	if err == nil {
		c.store(projectID, set)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[projectID]; ok {
		e.refreshing = false
		c.entries[projectID] = e
	}
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

// waiting reports how many misses of a project wait for its load.
func (c *Cache) waiting(projectID uuid.UUID) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.loading[projectID]; ok {
		return l.waiters
	}
	return 0
}

// Len reports how many projects are cached.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
