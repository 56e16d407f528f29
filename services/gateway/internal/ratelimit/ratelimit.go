// Package ratelimit limits the request rate of each API key with a token
// bucket held in this process's memory.
//
// A key's bucket holds at most Burst tokens and gains PerSecond tokens a
// second; a request takes one, and a request that finds less than one is
// refused. The limit is per gateway replica: N replicas behind a load
// balancer admit up to N times the limit, which keeps the check off the
// database and the network. Memory is bounded: a bucket that has refilled is
// the same as a new one and is dropped, and past MaxKeys the buckets used
// longest ago are dropped too (those keys start again with a full burst).
package ratelimit

import (
	"cmp"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Limit is the rate limit of one key.
type Limit struct {
	PerSecond float64
	Burst     int
}

// Decision is the answer for one request, with what the RateLimit headers
// report.
type Decision struct {
	Allowed bool
	// Limit is the size of the bucket: the most requests at once.
	Limit int
	// Remaining is how many more requests the bucket admits right now.
	Remaining int
	// Reset is how long until the bucket is full again.
	Reset time.Duration
	// RetryAfter is how long until a request is admitted again; zero when
	// this one was.
	RetryAfter time.Duration
}

// SetHeaders writes RateLimit-Limit, RateLimit-Remaining and
// RateLimit-Reset (whole seconds, rounded up), and Retry-After (whole
// seconds, at least one) when the request was refused. The RateLimit names
// are stored as spelled (not Go's canonical Ratelimit-Limit): header names
// are case-insensitive, but some clients match them exactly.
func (d Decision) SetHeaders(h http.Header) {
	h["RateLimit-Limit"] = []string{strconv.Itoa(d.Limit)}
	h["RateLimit-Remaining"] = []string{strconv.Itoa(d.Remaining)}
	h["RateLimit-Reset"] = []string{strconv.FormatInt(ceilSeconds(d.Reset), 10)}
	if !d.Allowed {
		h.Set("Retry-After", strconv.FormatInt(max(1, ceilSeconds(d.RetryAfter)), 10))
	}
}

func ceilSeconds(d time.Duration) int64 {
	return int64(math.Ceil(d.Seconds()))
}

// Options configure a Limiter.
type Options struct {
	// Now is the clock; time.Now when nil. Tests inject their own.
	Now func() time.Time
	// MaxKeys bounds the buckets held (DefaultMaxKeys when zero).
	MaxKeys int
}

// DefaultMaxKeys is far more keys than are active at once on one replica;
// a bucket costs about a hundred bytes.
const DefaultMaxKeys = 100_000

// shards spread keys over several locks, so that concurrent requests of
// different keys seldom wait for each other.
const shards = 32

// minSweep is the smallest shard size that triggers a sweep.
const minSweep = 64

// Limiter holds the buckets.
type Limiter struct {
	now         func() time.Time
	maxPerShard int
	shards      [shards]shard
}

type shard struct {
	mu      sync.Mutex
	buckets map[string]*bucket
	// sweepAt is the size at which the next sweep runs: twice the size the
	// last sweep left, so that sweeping costs O(1) per request on average.
	sweepAt int
}

type bucket struct {
	tokens float64
	at     time.Time // when tokens was last brought up to date
	limit  Limit
}

// New returns a Limiter.
func New(opts Options) *Limiter {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxKeys <= 0 {
		opts.MaxKeys = DefaultMaxKeys
	}
	l := &Limiter{now: opts.Now, maxPerShard: max(1, opts.MaxKeys/shards)}
	for i := range l.shards {
		l.shards[i].buckets = make(map[string]*bucket)
		l.shards[i].sweepAt = minSweep
	}
	return l
}

// Allow takes a token from key's bucket, whose limit is lim (a changed
// limit applies at once; a smaller burst caps the tokens held).
func (l *Limiter) Allow(key string, lim Limit) Decision {
	lim = sane(lim)
	now := l.now()
	s := &l.shards[shardOf(key)]
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.buckets[key]
	if !ok {
		s.makeRoom(now, l.maxPerShard)
		b = &bucket{tokens: float64(lim.Burst), at: now, limit: lim}
		s.buckets[key] = b
	}
	b.refill(now, lim)
	d := Decision{Limit: lim.Burst}
	if b.tokens >= 1 {
		b.tokens--
		d.Allowed = true
	} else {
		d.RetryAfter = seconds((1 - b.tokens) / lim.PerSecond)
	}
	d.Remaining = int(b.tokens)
	d.Reset = seconds((float64(lim.Burst) - b.tokens) / lim.PerSecond)
	return d
}

// Len is the number of buckets held.
func (l *Limiter) Len() int {
	n := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		n += len(s.buckets)
		s.mu.Unlock()
	}
	return n
}

// sane guards against a limit the schema does not allow: a bucket must
// hold at least one token and refill.
func sane(lim Limit) Limit {
	lim.Burst = max(1, lim.Burst)
	if !(lim.PerSecond > 0) {
		lim.PerSecond = 1
	}
	return lim
}

func seconds(s float64) time.Duration {
	return time.Duration(math.Ceil(s * float64(time.Second)))
}

// refill adds the tokens earned since the bucket was last brought up to
// date. A clock that went backwards earns nothing.
func (b *bucket) refill(now time.Time, lim Limit) {
	if elapsed := now.Sub(b.at); elapsed > 0 {
		b.tokens += elapsed.Seconds() * lim.PerSecond
		b.at = now
	}
	b.limit = lim
	b.tokens = min(b.tokens, float64(lim.Burst))
}

// full reports whether the bucket has refilled by now, so that dropping it
// changes nothing.
func (b *bucket) full(now time.Time) bool {
	return b.tokens+now.Sub(b.at).Seconds()*b.limit.PerSecond >= float64(b.limit.Burst)
}

// makeRoom runs before a bucket is added: when the shard has grown enough
// it drops the buckets that have refilled, and at its bound also the ones
// used longest ago, down to three quarters of the bound.
func (s *shard) makeRoom(now time.Time, maxBuckets int) {
	if len(s.buckets) < s.sweepAt && len(s.buckets) < maxBuckets {
		return
	}
	for k, b := range s.buckets {
		if b.full(now) {
			delete(s.buckets, k)
		}
	}
	if len(s.buckets) >= maxBuckets {
		s.dropOldest(maxBuckets * 3 / 4)
	}
	s.sweepAt = max(minSweep, 2*len(s.buckets))
}

func (s *shard) dropOldest(keep int) {
	type entry struct {
		key string
		at  time.Time
	}
	entries := make([]entry, 0, len(s.buckets))
	for k, b := range s.buckets {
		entries = append(entries, entry{k, b.at})
	}
	slices.SortFunc(entries, func(a, b entry) int { return cmp.Compare(b.at.UnixNano(), a.at.UnixNano()) })
	for _, e := range entries[min(keep, len(entries)):] {
		delete(s.buckets, e.key)
	}
}

// shardOf is FNV-1a of the key, reduced to a shard.
func shardOf(key string) int {
	h := uint32(2166136261)
	for i := range len(key) {
		h ^= uint32(key[i])
		h *= 16777619
	}
	return int(h % shards)
}
