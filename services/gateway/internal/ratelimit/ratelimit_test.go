package ratelimit_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/ratelimit"
)

// clock is a manual clock: tests move it instead of sleeping.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type bundle struct {
	clock   *clock
	limiter *ratelimit.Limiter
}

func setup(t *testing.T, maxKeys int) bundle {
	t.Helper()
	c := &clock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	return bundle{clock: c, limiter: ratelimit.New(ratelimit.Options{Now: c.Now, MaxKeys: maxKeys})}
}

func TestTokenBucket(t *testing.T) {
	t.Parallel()
	type step struct {
		advance    time.Duration
		allowed    bool
		remaining  int
		reset      time.Duration
		retryAfter time.Duration
	}
	lim := ratelimit.Limit{PerSecond: 2, Burst: 3}
	tests := []struct {
		name  string
		steps []step
	}{
		{"a new key starts with a full burst", []step{
			{0, true, 2, 500 * time.Millisecond, 0},
			{0, true, 1, time.Second, 0},
			{0, true, 0, 1500 * time.Millisecond, 0},
		}},
		{"an empty bucket refuses and says when to come back", []step{
			{0, true, 2, 500 * time.Millisecond, 0},
			{0, true, 1, time.Second, 0},
			{0, true, 0, 1500 * time.Millisecond, 0},
			{0, false, 0, 1500 * time.Millisecond, 500 * time.Millisecond},
			{200 * time.Millisecond, false, 0, 1300 * time.Millisecond, 300 * time.Millisecond},
			{300 * time.Millisecond, true, 0, 1500 * time.Millisecond, 0},
		}},
		{"tokens accrue at the rate, up to the burst", []step{
			{0, true, 2, 500 * time.Millisecond, 0},
			{0, true, 1, time.Second, 0},
			{time.Hour, true, 2, 500 * time.Millisecond, 0},
		}},
		{"a refused request takes nothing", []step{
			{0, true, 2, 500 * time.Millisecond, 0},
			{0, true, 1, time.Second, 0},
			{0, true, 0, 1500 * time.Millisecond, 0},
			{0, false, 0, 1500 * time.Millisecond, 500 * time.Millisecond},
			{0, false, 0, 1500 * time.Millisecond, 500 * time.Millisecond},
			{time.Second, true, 1, time.Second, 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, 0)
			for i, s := range tt.steps {
				b.clock.Advance(s.advance)
				d := b.limiter.Allow("k", lim)
				want := ratelimit.Decision{Allowed: s.allowed, Limit: 3, Remaining: s.remaining, Reset: s.reset, RetryAfter: s.retryAfter}
				require.Equal(t, want, d, "step %d", i)
			}
		})
	}
}

func TestKeysHaveTheirOwnBuckets(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	lim := ratelimit.Limit{PerSecond: 1, Burst: 1}
	require.True(t, b.limiter.Allow("a", lim).Allowed)
	require.False(t, b.limiter.Allow("a", lim).Allowed)
	require.True(t, b.limiter.Allow("b", lim).Allowed, "another key is not limited by the first")
}

func TestAChangedLimitAppliesAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	require.True(t, b.limiter.Allow("k", ratelimit.Limit{PerSecond: 10, Burst: 10}).Allowed)
	d := b.limiter.Allow("k", ratelimit.Limit{PerSecond: 1, Burst: 2})
	require.True(t, d.Allowed)
	require.Equal(t, 1, d.Remaining, "the smaller burst caps the tokens held")
	require.Equal(t, 2, d.Limit)
	require.True(t, b.limiter.Allow("k", ratelimit.Limit{PerSecond: 1, Burst: 2}).Allowed)
	require.False(t, b.limiter.Allow("k", ratelimit.Limit{PerSecond: 1, Burst: 2}).Allowed)
}

func TestNonsenseLimitsStillLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	for _, lim := range []ratelimit.Limit{{PerSecond: 0, Burst: 0}, {PerSecond: -1, Burst: -5}} {
		key := fmt.Sprint(lim)
		require.True(t, b.limiter.Allow(key, lim).Allowed, "a burst of at least one")
		d := b.limiter.Allow(key, lim)
		require.False(t, d.Allowed)
		require.Equal(t, time.Second, d.RetryAfter, "a rate of at least one per second")
	}
}

func TestAClockGoingBackwardsEarnsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	lim := ratelimit.Limit{PerSecond: 1, Burst: 1}
	require.True(t, b.limiter.Allow("k", lim).Allowed)
	b.clock.Advance(-time.Hour)
	require.False(t, b.limiter.Allow("k", lim).Allowed)
}

func TestRefilledBucketsAreDropped(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	lim := ratelimit.Limit{PerSecond: 10, Burst: 10}
	for i := range 10_000 {
		b.limiter.Allow(fmt.Sprint("idle-", i), lim)
	}
	require.Equal(t, 10_000, b.limiter.Len(), "all still refilling")
	b.clock.Advance(time.Second)
	for i := range 10_000 {
		b.limiter.Allow(fmt.Sprint("new-", i), lim)
	}
	require.Less(t, b.limiter.Len(), 15_000, "the refilled idle buckets made room")
}

func TestBucketsAreBoundedEvenWhenBusy(t *testing.T) {
	t.Parallel()
	b := setup(t, 3200)
	lim := ratelimit.Limit{PerSecond: 1, Burst: 1000}
	for i := range 50_000 {
		b.limiter.Allow(fmt.Sprint("busy-", i), lim)
		b.clock.Advance(time.Microsecond)
	}
	require.LessOrEqual(t, b.limiter.Len(), 3200)

	// The keys used last survive; the ones used longest ago were dropped
	// and start again with a full burst.
	recent := b.limiter.Allow("busy-49999", lim)
	require.Equal(t, 998, recent.Remaining)
	oldest := b.limiter.Allow("busy-0", lim)
	require.Equal(t, 999, oldest.Remaining)
}

func TestConcurrentRequestsAreCountedExactly(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	lim := ratelimit.Limit{PerSecond: 1, Burst: 500}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		allowed int
	)
	for range 20 {
		wg.Go(func() {
			for range 100 {
				if b.limiter.Allow("k", lim).Allowed {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	require.Equal(t, 500, allowed, "the clock stood still: exactly the burst")
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		d    ratelimit.Decision
		want http.Header
	}{
		{"allowed", ratelimit.Decision{Allowed: true, Limit: 200, Remaining: 199, Reset: 10 * time.Millisecond},
			http.Header{"RateLimit-Limit": {"200"}, "RateLimit-Remaining": {"199"}, "RateLimit-Reset": {"1"}}},
		{"refused", ratelimit.Decision{Limit: 200, Reset: 2001 * time.Millisecond, RetryAfter: 5 * time.Millisecond},
			http.Header{"RateLimit-Limit": {"200"}, "RateLimit-Remaining": {"0"}, "RateLimit-Reset": {"3"}, "Retry-After": {"1"}}},
		{"refused for long", ratelimit.Decision{Limit: 1, Reset: 90 * time.Second, RetryAfter: 90 * time.Second},
			http.Header{"RateLimit-Limit": {"1"}, "RateLimit-Remaining": {"0"}, "RateLimit-Reset": {"90"}, "Retry-After": {"90"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			tt.d.SetHeaders(h)
			require.Equal(t, tt.want, h)
		})
	}
}

func BenchmarkAllow(b *testing.B) {
	l := ratelimit.New(ratelimit.Options{})
	lim := ratelimit.Limit{PerSecond: 1e9, Burst: 1 << 30}
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = fmt.Sprintf("sdk_%08d", i)
	}
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			l.Allow(keys[i%len(keys)], lim)
			i++
		}
	})
}
