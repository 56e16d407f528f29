package hostlimit_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/services/dispatcher/internal/hostlimit"
)

// clock is a fake clock the tests move by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Unix(1_700_000_000, 0)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

var (
	projectA = hostlimit.Key{Project: "a", Host: "h.example:443"}
	projectB = hostlimit.Key{Project: "b", Host: "h.example:443"}
	otherA   = hostlimit.Key{Project: "a", Host: "other.example:443"}
)

// take acquires without waiting and requires a slot.
func take(t *testing.T, l *hostlimit.Limiter, k hostlimit.Key, cap int) *hostlimit.Slot {
	t.Helper()
	s, _ := l.Acquire(context.Background(), k, cap, 0)
	require.NotNil(t, s, "no slot for %v", k)
	return s
}

// refused acquires without waiting and requires a deferral.
func refused(t *testing.T, l *hostlimit.Limiter, k hostlimit.Key, cap int) time.Duration {
	t.Helper()
	s, d := l.Acquire(context.Background(), k, cap, 0)
	require.Nil(t, s, "a slot for %v", k)
	require.GreaterOrEqual(t, d, event.MinDefer)
	require.LessOrEqual(t, d, event.MaxDefer)
	return d
}

var answered = hostlimit.Sample{Signal: hostlimit.Answered, Latency: time.Millisecond}

func TestEachFlowHasItsOwnLimit(t *testing.T) {
	t.Parallel()
	l := hostlimit.New(hostlimit.Config{Ceiling: 10, Initial: 2})
	a1, a2 := take(t, l, projectA, 0), take(t, l, projectA, 0)
	refused(t, l, projectA, 0)

	// Another project on the same host, and the same project on another
	// host, are not held back by a's limit.
	b := take(t, l, projectB, 0)
	o := take(t, l, otherA, 0)
	require.Equal(t, 3, l.HostInFlight(projectA.Host))

	a1.Done(hostlimit.Sample{})
	a1.Done(hostlimit.Sample{}) // a second Done changes nothing
	a3 := take(t, l, projectA, 0)
	refused(t, l, projectA, 0)
	for _, s := range []*hostlimit.Slot{a2, a3, b, o} {
		s.Done(hostlimit.Sample{})
	}
	require.Zero(t, l.HostInFlight(projectA.Host))
}

func TestProjectCapBoundsItsFlows(t *testing.T) {
	t.Parallel()
	l := hostlimit.New(hostlimit.Config{Ceiling: 10, Initial: 8})
	s := take(t, l, projectA, 1)
	refused(t, l, projectA, 1)
	require.Equal(t, 1, l.Flow(projectA).Limit)
	s.Done(answered)
	// The cap lifted: the flow may grow again from where it is.
	take(t, l, projectA, 0).Done(hostlimit.Sample{})
	require.Equal(t, 8, l.Flow(projectA).Limit, "bounded by the cap, not cut by it")
}

func TestTheCeilingIsSharedFairlyAtTheHost(t *testing.T) {
	t.Parallel()
	l := hostlimit.New(hostlimit.Config{Ceiling: 4, Initial: 4})
	var slots []*hostlimit.Slot
	for range 4 {
		slots = append(slots, take(t, l, projectA, 0))
	}
	refused(t, l, projectB, 0) // the host is at its ceiling

	// b waits for a slot; a frees one and at once asks for it again: a,
	// above its fair share of 2 while b waits below it, gives way.
	got := make(chan *hostlimit.Slot)
	go func() {
		s, _ := l.Acquire(context.Background(), projectB, 0, time.Minute)
		got <- s
	}()
	require.Eventually(t, func() bool { return l.Flow(projectB).Waiting == 1 }, 10*time.Second, time.Millisecond)
	slots[0].Done(hostlimit.Sample{})
	refused(t, l, projectA, 0)
	b := <-got
	require.NotNil(t, b, "the waiting project took the freed slot")

	// a at 3 of 4, b at 1: b may take its share as a frees slots, a may
	// not take them back while b waits.
	slots[1].Done(hostlimit.Sample{})
	b2 := take(t, l, projectB, 0)
	refused(t, l, projectB, 0) // at the ceiling again
	for _, s := range append(slots[2:], b, b2) {
		s.Done(hostlimit.Sample{})
	}
}

func TestAcquireWaitsForAFreedSlot(t *testing.T) {
	t.Parallel()
	l := hostlimit.New(hostlimit.Config{Ceiling: 1})
	busy := take(t, l, projectA, 0)
	got := make(chan *hostlimit.Slot)
	go func() {
		s, _ := l.Acquire(context.Background(), projectA, 0, time.Minute)
		got <- s
	}()
	require.Eventually(t, func() bool { return l.Flow(projectA).Waiting == 1 }, 10*time.Second, time.Millisecond)
	busy.Done(answered)
	s := <-got
	require.NotNil(t, s, "the waiter took the freed slot")
	s.Done(answered)
}

func TestAcquireGivesUpAfterItsWaitOrWithItsContext(t *testing.T) {
	t.Parallel()
	l := hostlimit.New(hostlimit.Config{Ceiling: 1})
	busy := take(t, l, projectA, 0)
	s, d := l.Acquire(context.Background(), projectA, 0, 10*time.Millisecond)
	require.Nil(t, s, "the flow stayed busy for the whole wait")
	require.Positive(t, d)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s, _ = l.Acquire(ctx, projectA, 0, time.Minute)
	require.Nil(t, s, "a cancelled context stops the wait")
	require.Zero(t, l.Flow(projectA).Waiting)
	busy.Done(hostlimit.Sample{})
}

func TestASlowFlowDefersWithoutWaiting(t *testing.T) {
	t.Parallel()
	c := newClock()
	l := hostlimit.New(hostlimit.Config{Ceiling: 8, Initial: 2, Now: c.Now})
	a1, a2 := take(t, l, projectA, 0), take(t, l, projectA, 0)
	c.Add(2 * time.Second)
	// Its deliveries time out after 2 s: the limit halves, and a wait of
	// a minute would be for nothing.
	a1.Done(hostlimit.Sample{Signal: hostlimit.Overloaded, Latency: 2 * time.Second})
	require.Equal(t, 1, l.Flow(projectA).Limit)

	// A wait shorter than its deliveries take is not waited.
	start := time.Now()
	s, d := l.Acquire(context.Background(), projectA, 0, 1900*time.Millisecond)
	require.Nil(t, s)
	require.Less(t, time.Since(start), time.Second, "deferred at once")
	require.GreaterOrEqual(t, d, time.Second, "about a delivery time or more")

	// The more are deferred, the longer the next waits, up to the bound.
	for range 20 {
		d = refused(t, l, projectA, 0)
	}
	require.Equal(t, event.MaxDefer, d)
	a2.Done(hostlimit.Sample{})
}

func TestIdleFlowsAreForgotten(t *testing.T) {
	t.Parallel()
	c := newClock()
	l := hostlimit.New(hostlimit.Config{Ceiling: 8, Now: c.Now})
	s := take(t, l, projectA, 0)
	c.Add(time.Second)
	s.Done(hostlimit.Sample{Signal: hostlimit.Overloaded, Latency: time.Second})
	require.Equal(t, 4, l.Flow(projectA).Limit, "8 halved")

	// Within the idle time the learnt limit is kept.
	c.Add(time.Minute)
	take(t, l, otherA, 0).Done(hostlimit.Sample{})
	require.Equal(t, 4, l.Flow(projectA).Limit)
	// After it, the flow starts afresh.
	c.Add(10 * time.Minute)
	take(t, l, otherA, 0).Done(hostlimit.Sample{})
	require.Equal(t, hostlimit.Stats{}, l.Flow(projectA))
}

func TestNewAllowsAtLeastOne(t *testing.T) {
	t.Parallel()
	l := hostlimit.New(hostlimit.Config{})
	require.Equal(t, 1, l.Ceiling())
	take(t, l, projectA, 0).Done(hostlimit.Sample{})
}

func TestHost(t *testing.T) {
	t.Parallel()
	require.Equal(t, "a.example:443", hostlimit.Host("https://A.Example/x?y=1"))
	require.Equal(t, "a.example:443", hostlimit.Host("https://a.example:443/"))
	require.Equal(t, "127.0.0.1:8443", hostlimit.Host("https://127.0.0.1:8443/x"))
	require.Equal(t, "[::1]:443", hostlimit.Host("https://[::1]/"))
	require.Equal(t, "", hostlimit.Host("https://a b/%zz"))
}

// TestEveryFreedSlotReachesAWaiter has many deliveries of two projects
// contend for a host's four slots, some of them giving up after a
// millisecond. A freed slot wakes one waiter, not all; a slot handed to a
// waiter that gave up at that moment must be passed on. A slot lost on the
// way would leave the patient waiters without one at the end, for their
// whole wait, and they would come back empty.
func TestEveryFreedSlotReachesAWaiter(t *testing.T) {
	t.Parallel()
	l := hostlimit.New(hostlimit.Config{Ceiling: 4, Initial: 4})
	var (
		wg       sync.WaitGroup
		inFlight atomic.Int32
		most     atomic.Int32
		empty    atomic.Int32
	)
	for i := range 48 {
		key, wait := projectA, 10*time.Second
		if i%2 == 1 {
			key = projectB
		}
		impatient := i%3 == 0
		if impatient {
			wait = time.Millisecond
		}
		wg.Go(func() {
			for range 200 {
				s, _ := l.Acquire(context.Background(), key, 0, wait)
				if s == nil {
					if !impatient {
						empty.Add(1)
					}
					continue
				}
				n := inFlight.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				runtime.Gosched()
				inFlight.Add(-1)
				s.Done(hostlimit.Sample{})
			}
		})
	}
	wg.Wait()
	require.Zero(t, empty.Load(), "a patient waiter came back without a slot")
	require.LessOrEqual(t, most.Load(), int32(4), "the ceiling held")
	require.Equal(t, hostlimit.Stats{Limit: 4}, l.Flow(projectA))
	require.Equal(t, hostlimit.Stats{Limit: 4}, l.Flow(projectB))
}

func TestLimitIsANewFlowsUntilTheFlowIsKnown(t *testing.T) {
	t.Parallel()
	l := hostlimit.New(hostlimit.Config{Ceiling: 8, Initial: 3})
	require.Equal(t, 3, l.Limit(projectA), "a flow not seen yet starts at Initial")
	s := take(t, l, projectA, 0)
	defer s.Done(hostlimit.Sample{})
	require.Equal(t, l.Flow(projectA).Limit, l.Limit(projectA))
	require.Equal(t, 3, hostlimit.New(hostlimit.Config{Ceiling: 3, Initial: 16}).Limit(projectA),
		"nor above the ceiling")
}

// TestAHangingDeliveryIsParked: deliveries in flight far longer than their
// flow's typical one stop counting against its limit, so the domain's
// other paths keep their slots; at most the limit or half the ceiling,
// whichever is more, are parked (here both 4).
func TestAHangingDeliveryIsParked(t *testing.T) {
	t.Parallel()
	c := newClock()
	l := hostlimit.New(hostlimit.Config{Ceiling: 8, Initial: 4, Now: c.Now})
	take(t, l, projectA, 0).Done(hostlimit.Sample{Signal: hostlimit.Answered, Latency: 5 * time.Millisecond})
	hung := takeN(t, l, 4)
	refused(t, l, projectA, 0)
	c.Add(199 * time.Millisecond)
	refused(t, l, projectA, 0)
	c.Add(time.Millisecond) // 200 ms: the least a delivery is in flight before it parks
	fast := takeN(t, l, 4)
	require.Equal(t, hostlimit.Stats{Limit: 4, InFlight: 8, Parked: 4}, l.Flow(projectA))
	c.Add(time.Second)
	refused(t, l, projectA, 0) // no more parked than 4
	require.Equal(t, 4, l.Flow(projectA).Parked)

	for i := range 4 {
		fast[i].Done(hostlimit.Sample{Signal: hostlimit.Answered, Latency: 5 * time.Millisecond})
		hung[i].Done(hostlimit.Sample{Signal: hostlimit.TimedOut, Latency: 10 * time.Second})
	}
	got := l.Flow(projectA)
	require.GreaterOrEqual(t, got.Limit, 4, "timeouts among answers do not cut the limit")
	require.Equal(t, hostlimit.Stats{Limit: got.Limit}, got)
	require.Equal(t, 0, l.HostInFlight(projectA.Host))
}

// takeN takes n slots of projectA's flow without waiting.
func takeN(t *testing.T, l *hostlimit.Limiter, n int) []*hostlimit.Slot {
	t.Helper()
	slots := make([]*hostlimit.Slot, n)
	for i := range slots {
		slots[i] = take(t, l, projectA, 0)
	}
	return slots
}

// TestAWaiterTakesTheSlotOfADeliveryParkedDuringItsWait: a caller that
// finds the flow's slots held by hanging deliveries waits in memory and
// gets a slot once they park, not a deferral of seconds.
func TestAWaiterTakesTheSlotOfADeliveryParkedDuringItsWait(t *testing.T) {
	t.Parallel()
	l := hostlimit.New(hostlimit.Config{Ceiling: 16, Initial: 4})
	take(t, l, projectA, 0).Done(hostlimit.Sample{Signal: hostlimit.Answered, Latency: time.Millisecond})
	hung := takeN(t, l, 4)
	s, d := l.Acquire(context.Background(), projectA, 0, time.Minute)
	require.NotNil(t, s, "deferred for %s although the held slots park", d)
	require.Positive(t, l.Flow(projectA).Parked)
	for _, held := range append(hung, s) {
		held.Done(hostlimit.Sample{})
	}
}

// TestTimeoutsAreNotTheFlowsTypicalLatency: once a domain's other hooks are
// delivered, its hanging path's timeouts can be most of its flow's recent
// deliveries; the typical latency stays the answered deliveries', so new
// hanging requests still park within a fraction of a second and a healthy
// hook then takes a slot instead of being deferred for seconds.
func TestTimeoutsAreNotTheFlowsTypicalLatency(t *testing.T) {
	t.Parallel()
	c := newClock()
	l := hostlimit.New(hostlimit.Config{Ceiling: 64, Initial: 4, Now: c.Now})
	for range 8 {
		take(t, l, projectA, 0).Done(hostlimit.Sample{Signal: hostlimit.Answered, Latency: 5 * time.Millisecond})
	}
	for range 24 {
		take(t, l, projectA, 0).Done(hostlimit.Sample{Signal: hostlimit.TimedOut, Latency: 10 * time.Second})
	}
	hung := takeN(t, l, l.Flow(projectA).Limit)
	refused(t, l, projectA, 0)
	c.Add(200 * time.Millisecond)
	healthy := take(t, l, projectA, 0)
	require.Positive(t, l.Flow(projectA).Parked, "the hanging requests parked")
	for _, s := range append(hung, healthy) {
		s.Done(hostlimit.Sample{})
	}
}
