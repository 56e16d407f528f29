package credential

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// versions hands out a new key version on every load, so a test sees when
// the cache went back to its loader.
type versions struct {
	mu    sync.Mutex
	loads map[uuid.UUID]int
}

func (v *versions) Get(_ context.Context, id uuid.UUID) (Set, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.loads[id]++
	return Set{Keys: []string{"v" + string(rune('0'+v.loads[id]))}}, nil
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newTestCache(ttl time.Duration, maxEntries int) (*Cache, *versions, *clock) {
	v := &versions{loads: map[uuid.UUID]int{}}
	clk := &clock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	c := NewCache(v, ttl, maxEntries)
	c.now = clk.Now
	return c, v, clk
}

func TestCacheExpiresAfterTTL(t *testing.T) {
	t.Parallel()
	c, _, clk := newTestCache(5*time.Second, 10)
	id := uuid.New()
	get := func() string {
		set, err := c.Get(context.Background(), id)
		require.NoError(t, err)
		return set.Keys[0]
	}
	require.Equal(t, "v1", get())
	clk.Advance(4999 * time.Millisecond)
	require.Equal(t, "v1", get())
	// A rotation reaches deliveries once the TTL has passed.
	clk.Advance(time.Millisecond)
	require.Equal(t, "v2", get())
}

func TestCacheIsBounded(t *testing.T) {
	t.Parallel()
	c, v, clk := newTestCache(time.Minute, 3)
	ids := []uuid.UUID{uuid.New(), uuid.New(), uuid.New(), uuid.New(), uuid.New()}
	for _, id := range ids {
		_, err := c.Get(context.Background(), id)
		require.NoError(t, err)
		require.LessOrEqual(t, c.Len(), 3)
	}
	require.Equal(t, 3, c.Len())

	// Expired entries are the first to make room.
	clk.Advance(time.Minute)
	fresh := uuid.New()
	_, err := c.Get(context.Background(), fresh)
	require.NoError(t, err)
	require.Equal(t, 1, c.Len())
	_, err = c.Get(context.Background(), fresh)
	require.NoError(t, err)
	require.Equal(t, 1, v.loads[fresh])
}
