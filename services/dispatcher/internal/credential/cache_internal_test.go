package credential

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
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
	// Before the last fifth of the TTL a use starts no reload.
	clk.Advance(3999 * time.Millisecond)
	require.Equal(t, "v1", get())
	// A rotation reaches deliveries once the TTL has passed.
	clk.Advance(1001 * time.Millisecond)
	require.Equal(t, "v2", get())
}

// gated is a loader whose loads wait for the test to let them finish, so
// a test can tell a background reload from a foreground one.
type gated struct {
	versions
	started chan struct{}
	release chan struct{}
	fail    atomic.Bool
}

func (g *gated) Get(ctx context.Context, id uuid.UUID) (Set, error) {
	fail := g.fail.Load() // before started, so a test knows this load's fate
	g.started <- struct{}{}
	<-g.release
	if fail {
		return Set{}, errors.New("database away")
	}
	return g.versions.Get(ctx, id)
}

func newGatedCache(t *testing.T, ttl time.Duration) (*Cache, *gated, *clock) {
	t.Helper()
	g := &gated{versions: versions{loads: map[uuid.UUID]int{}}, started: make(chan struct{}, 4), release: make(chan struct{}, 4)}
	clk := &clock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	c := NewCache(g, ttl, 10)
	c.now = clk.Now
	return c, g, clk
}

func TestCacheReloadsInTheBackgroundBeforeExpiry(t *testing.T) {
	t.Parallel()
	c, g, clk := newGatedCache(t, 5*time.Second)
	id := uuid.New()
	g.release <- struct{}{}
	set, err := c.Get(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, "v1", set.Keys[0])
	<-g.started

	// In the TTL's last fifth the cached set is served at once while one
	// reload (not one per delivery) runs behind it.
	clk.Advance(4100 * time.Millisecond)
	for range 3 {
		set, err = c.Get(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, "v1", set.Keys[0])
	}
	<-g.started
	require.Empty(t, g.started, "one reload at a time")
	g.release <- struct{}{}
	require.Eventually(t, func() bool {
		set, err := c.Get(t.Context(), id)
		return err == nil && set.Keys[0] == "v2"
	}, 5*time.Second, time.Millisecond)
	// The reloaded entry lives a whole TTL from its reload.
	clk.Advance(3900 * time.Millisecond)
	set, err = c.Get(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, "v2", set.Keys[0])
}

func TestCacheNeverServesAnEntryPastItsTTL(t *testing.T) {
	t.Parallel()
	c, g, clk := newGatedCache(t, 5*time.Second)
	id := uuid.New()
	g.release <- struct{}{}
	_, err := c.Get(t.Context(), id)
	require.NoError(t, err)
	<-g.started

	// The background reload is stuck; once the TTL has passed the cached
	// set is no longer served: the next use loads in the foreground.
	clk.Advance(4500 * time.Millisecond)
	_, err = c.Get(t.Context(), id)
	require.NoError(t, err)
	<-g.started // the background reload, held
	clk.Advance(500 * time.Millisecond)
	got := make(chan Set, 1)
	go func() {
		set, err := c.Get(context.Background(), id)
		if err == nil {
			got <- set
		}
		close(got)
	}()
	<-g.started // the foreground load
	require.Empty(t, got, "the expired set was served")
	g.release <- struct{}{}
	g.release <- struct{}{}
	set, ok := <-got
	require.True(t, ok)
	require.NotEqual(t, "v1", set.Keys[0])
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

func TestCacheFailedBackgroundReloadIsTriedAgain(t *testing.T) {
	t.Parallel()
	c, g, clk := newGatedCache(t, 5*time.Second)
	id := uuid.New()
	g.release <- struct{}{}
	_, err := c.Get(t.Context(), id)
	require.NoError(t, err)
	<-g.started

	// The reload fails: the cached set is still served, and a later use
	// starts another reload.
	g.fail.Store(true)
	clk.Advance(4100 * time.Millisecond)
	set, err := c.Get(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, "v1", set.Keys[0])
	<-g.started
	g.release <- struct{}{}
	g.fail.Store(false)
	g.release <- struct{}{}
	require.Eventually(t, func() bool {
		set, err := c.Get(t.Context(), id)
		return err == nil && set.Keys[0] == "v2"
	}, 5*time.Second, time.Millisecond)
}

// oneAtATime loads only once released, counting its loads.
type oneAtATime struct {
	entered chan struct{}
	release chan struct{}
	loads   atomic.Int32
	err     error
}

func (g *oneAtATime) Get(context.Context, uuid.UUID) (Set, error) {
	if g.loads.Add(1) == 1 {
		close(g.entered)
	}
	<-g.release
	return Set{Keys: []string{"k"}}, g.err
}

func TestCacheLoadsAMissOnceForEveryoneWaiting(t *testing.T) {
	t.Parallel()
	for name, loadErr := range map[string]error{"success": nil, "failure": errors.New("database away")} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := &oneAtATime{entered: make(chan struct{}), release: make(chan struct{}), err: loadErr}
			c := NewCache(g, time.Minute, 10)
			id := uuid.New()
			const callers = 10
			errs := make(chan error, callers)
			get := func() {
				set, err := c.Get(context.Background(), id)
				if err == nil && (len(set.Keys) != 1 || set.Keys[0] != "k") {
					err = errors.New("wrong set")
				}
				errs <- err
			}
			go get()
			<-g.entered
			// The first load is under way: the others wait for it.
			for range callers - 1 {
				go get()
			}
			require.Eventually(t, func() bool { return c.waiting(id) == callers-1 }, 5*time.Second, time.Millisecond)
			close(g.release)
			for range callers {
				require.ErrorIs(t, <-errs, loadErr)
			}
			require.EqualValues(t, 1, g.loads.Load(), "one query for the whole burst")
			if loadErr != nil {
				require.Zero(t, c.Len(), "an error is not cached")
			}
		})
	}
}

func TestCacheWaiterGivesUpWithItsContext(t *testing.T) {
	t.Parallel()
	g := &oneAtATime{entered: make(chan struct{}), release: make(chan struct{})}
	c := NewCache(g, time.Minute, 10)
	id := uuid.New()
	first := make(chan error, 1)
	go func() { _, err := c.Get(context.Background(), id); first <- err }()
	<-g.entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Get(ctx, id)
	require.ErrorIs(t, err, context.Canceled)
	close(g.release)
	require.NoError(t, <-first)
	require.EqualValues(t, 1, g.loads.Load())
}
