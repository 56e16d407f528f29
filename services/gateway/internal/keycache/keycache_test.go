package keycache_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/keycache"
)

type bundle struct {
	cache *keycache.Cache
	now   *atomic.Int64 // nanoseconds since the Unix epoch
}

func (b bundle) advance(d time.Duration) { b.now.Add(int64(d)) }

func setup(t *testing.T, ttl time.Duration, maxEntries int) bundle {
	t.Helper()
	now := &atomic.Int64{}
	now.Store(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	return bundle{cache: keycache.New(ttl, maxEntries, keycache.WithClock(clock)), now: now}
}

func entry() keycache.Entry {
	return keycache.Entry{KeyID: uuid.New(), ProjectID: uuid.New(), RatePerSecond: 200, RateBurst: 400}
}

func TestAnEntryIsServedUntilItsTTL(t *testing.T) {
	t.Parallel()
	b := setup(t, time.Second, 10)
	e := entry()
	_, ok := b.cache.Get("key")
	require.False(t, ok)
	b.cache.Put("key", e, b.cache.Generation())
	got, ok := b.cache.Get("key")
	require.True(t, ok)
	require.Equal(t, e, got)
	_, ok = b.cache.Get("other key")
	require.False(t, ok)

	b.advance(999 * time.Millisecond)
	_, ok = b.cache.Get("key")
	require.True(t, ok)
	b.advance(time.Millisecond)
	_, ok = b.cache.Get("key")
	require.False(t, ok, "expired at its TTL")
}

func TestForgetDropsTheKeyAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, time.Hour, 10)
	revoked, kept := entry(), entry()
	b.cache.Put("revoked", revoked, b.cache.Generation())
	b.cache.Put("kept", kept, b.cache.Generation())
	b.cache.Forget(revoked.KeyID)
	_, ok := b.cache.Get("revoked")
	require.False(t, ok)
	_, ok = b.cache.Get("kept")
	require.True(t, ok)
}

func TestALookUpThatStartedBeforeAForgetIsNotStored(t *testing.T) {
	t.Parallel()
	b := setup(t, time.Hour, 10)
	e := entry()
	gen := b.cache.Generation() // the look-up starts, reads the row...
	b.cache.Forget(e.KeyID)     // ...the key is revoked meanwhile...
	b.cache.Put("key", e, gen)  // ...and what the look-up read is stale.
	_, ok := b.cache.Get("key")
	require.False(t, ok)

	b.cache.Put("key", e, b.cache.Generation())
	_, ok = b.cache.Get("key")
	require.True(t, ok, "a look-up after the Forget is stored")
}

func TestTheCacheIsBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, time.Hour, 3)
	for i := range 10 {
		b.cache.Put(fmt.Sprint("key", i), entry(), b.cache.Generation())
		require.LessOrEqual(t, b.cache.Len(), 3)
	}
	_, ok := b.cache.Get("key9")
	require.True(t, ok, "the newest entry is kept")

	// Expired entries make room before fresh ones are dropped.
	b.advance(2 * time.Hour)
	b.cache.Put("fresh1", entry(), b.cache.Generation())
	b.cache.Put("fresh2", entry(), b.cache.Generation())
	b.cache.Put("fresh3", entry(), b.cache.Generation())
	for _, k := range []string{"fresh1", "fresh2", "fresh3"} {
		_, ok := b.cache.Get(k)
		require.True(t, ok, k)
	}
}

func TestAZeroTTLDisablesTheCache(t *testing.T) {
	t.Parallel()
	c := keycache.New(0, 10)
	require.Nil(t, c)
	c.Put("key", entry(), c.Generation())
	_, ok := c.Get("key")
	require.False(t, ok)
	c.Forget(uuid.New())
	require.Zero(t, c.Len())
}

// Run with -race: Get, Put and Forget from many goroutines at once.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	c := keycache.New(time.Minute, 50)
	entries := make([]keycache.Entry, 100)
	for i := range entries {
		entries[i] = entry()
	}
	var (
		wg    sync.WaitGroup
		wrong atomic.Int64 // entries read back that are not what was put
	)
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				n := (g*31 + i) % len(entries)
				key := fmt.Sprint("key", n)
				if got, ok := c.Get(key); ok && got != entries[n] {
					wrong.Add(1)
				}
				c.Put(key, entries[n], c.Generation())
				if i%97 == 0 {
					c.Forget(entries[n].KeyID)
				}
			}
		})
	}
	wg.Wait()
	require.Zero(t, wrong.Load())
	require.LessOrEqual(t, c.Len(), 50)
}
