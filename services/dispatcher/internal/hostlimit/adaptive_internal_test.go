package hostlimit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// run feeds a flow rounds of samples as a receiver would produce them: each
// round, limit deliveries start together at t and end latency later.
type run struct {
	a *adaptive
	t time.Time
}

func newRun(initial, ceiling int) *run {
	return &run{a: newAdaptive(initial, ceiling), t: time.Unix(1_700_000_000, 0)}
}

// round runs one round trip at the current limit, every delivery ending
// with signal after latency.
func (r *run) round(signal Signal, latency time.Duration) {
	started, n := r.t, r.a.Limit()
	r.t = r.t.Add(latency)
	for range n {
		r.a.observe(Sample{Signal: signal, Started: started, Latency: latency, InFlight: n}, r.t)
	}
}

func TestLimitGrowsWhileTheReceiverKeepsUp(t *testing.T) {
	t.Parallel()
	r := newRun(16, 256)
	// Slow start: one more per answer doubles the limit each round trip.
	r.round(Answered, 20*time.Millisecond)
	require.Equal(t, 32, r.a.Limit())
	r.round(Answered, 20*time.Millisecond)
	require.Equal(t, 64, r.a.Limit())
	for range 10 {
		r.round(Answered, 20*time.Millisecond)
	}
	require.Equal(t, 256, r.a.Limit(), "never above the ceiling")
}

func TestLimitHalvesOncePerRoundTripOnOverload(t *testing.T) {
	t.Parallel()
	r := newRun(16, 256)
	r.round(Answered, 10*time.Millisecond) // 32
	// A round of 32 answers 429, all started before the first of them
	// ends: one cut, not 32.
	r.round(Overloaded, 10*time.Millisecond)
	require.Equal(t, 16, r.a.Limit())
	r.round(Overloaded, 10*time.Millisecond)
	require.Equal(t, 8, r.a.Limit())
	for range 10 {
		r.round(Overloaded, 10*time.Millisecond)
	}
	require.Equal(t, 1, r.a.Limit(), "never below one")

	// Recovery after the cut is additive: about one per round trip.
	for range 4 {
		r.round(Answered, 10*time.Millisecond)
	}
	require.InDelta(t, 5, r.a.Limit(), 1)
}

func TestLimitHalvesWhenMostDeliveriesTimeOut(t *testing.T) {
	t.Parallel()
	r := newRun(16, 256)
	r.round(Answered, 10*time.Millisecond) // 32
	// The whole receiver hangs: every delivery times out.
	r.round(TimedOut, 10*time.Second)
	require.Equal(t, 16, r.a.Limit(), "most of the recent deliveries timed out: one cut")
	for range 10 {
		r.round(TimedOut, 10*time.Second)
	}
	require.Equal(t, 1, r.a.Limit())
	// It answers again: once the timeouts are a minority of the recent
	// deliveries, the median is back near the minimum and the limit grows.
	for range 40 {
		r.round(Answered, 10*time.Millisecond)
	}
	require.Greater(t, r.a.Limit(), 4)
}

func TestTimeoutsOnAnotherPathJustAfterAnAnswerAreThatPaths(t *testing.T) {
	t.Parallel()
	r := newRun(16, 256)
	for range 3 {
		r.round(Answered, 10*time.Millisecond)
	}
	limit := r.a.Limit()
	answered := r.t
	r.a.observe(Sample{Signal: Answered, Started: r.t, Latency: 10 * time.Millisecond, InFlight: 1, Path: "/ok"}, r.t)
	// The domain's other paths fall quiet; only /hang has traffic, and it
	// times out.
	for i := range 64 {
		r.t = answered.Add(time.Duration(i+1) * time.Second)
		r.a.observe(Sample{Signal: TimedOut, Started: r.t.Add(-10 * time.Second), Latency: 10 * time.Second, InFlight: 1, Path: "/hang"}, r.t)
	}
	require.Equal(t, limit, r.a.Limit(), "the host answered a minute ago: /hang's timeouts are its own")
	require.Equal(t, 10*time.Millisecond, r.a.Typical())

	// Past the window, or on the path that answered, they are the host's.
	r.t = answered.Add(pathWindow + time.Second)
	for range 64 {
		r.t = r.t.Add(time.Second)
		r.a.observe(Sample{Signal: TimedOut, Started: r.t.Add(-10 * time.Second), Latency: 10 * time.Second, InFlight: 1, Path: "/hang"}, r.t)
	}
	require.Less(t, r.a.Limit(), limit)
}

// mixed feeds a flow the deliveries of a domain whose paths answer in
// 5 ms, but for every tenth a 500 and every twentieth a timeout after 10 s
// (which ends long after the answers started beside it).
func mixed(r *run, rounds int) {
	for range rounds {
		started, n := r.t, r.a.Limit()
		r.t = r.t.Add(5 * time.Millisecond)
		for i := range n {
			s := Sample{Signal: Answered, Started: started, Latency: 5 * time.Millisecond, InFlight: n}
			switch {
			case i%20 == 19:
				s.Signal, s.Latency = TimedOut, 10*time.Second
			case i%10 == 9:
				s.Signal = Answered // a 500: an answer about its payload
			}
			r.a.observe(s, r.t)
		}
	}
}

func TestASlowOrFailingMinorityDoesNotCutTheLimit(t *testing.T) {
	t.Parallel()
	r := newRun(16, 256)
	mixed(r, 1)
	require.Equal(t, 32, r.a.Limit(), "a timeout among answers is a fact about its request: still slow start")
	mixed(r, 10)
	require.Equal(t, 256, r.a.Limit(), "grows to the ceiling as an all-healthy flow does")
	require.Equal(t, 5*time.Millisecond, r.a.Typical(), "the median is the healthy paths' latency")
}

func TestLimitStopsGrowingWhenLatencyRises(t *testing.T) {
	t.Parallel()
	r := newRun(16, 256)
	r.round(Answered, 40*time.Millisecond) // minimum 40 ms; 32
	// Near the minimum: 2 x 40 ms + 25 ms = 105 ms still grows.
	r.round(Answered, 100*time.Millisecond)
	require.Equal(t, 64, r.a.Limit())
	// A queue builds: the smoothed latency climbs past 105 ms, growth stops.
	for range 3 {
		r.round(Answered, 200*time.Millisecond)
	}
	held := r.a.Limit()
	require.Less(t, held, 256)
	r.round(Answered, 200*time.Millisecond)
	require.Equal(t, held, r.a.Limit(), "held while latency is above its tolerance")
	// Far above (over 210 ms smoothed): a tenth off per round trip.
	for range 10 {
		r.round(Answered, time.Second)
	}
	require.Less(t, r.a.Limit(), held)
	require.GreaterOrEqual(t, r.a.Limit(), 1)
}

func TestLimitGrowsOnlyWhenUsed(t *testing.T) {
	t.Parallel()
	a := newAdaptive(16, 256)
	now := time.Unix(1_700_000_000, 0)
	for range 100 {
		a.observe(Sample{Signal: Answered, Started: now, Latency: time.Millisecond, InFlight: 2}, now.Add(time.Millisecond))
		now = now.Add(10 * time.Millisecond)
	}
	require.Equal(t, 16, a.Limit(), "two in flight of 16: the limit is not what holds the flow back")
}

func TestMinimumLatencyIsForgottenAfterTwoWindows(t *testing.T) {
	t.Parallel()
	a := newAdaptive(16, 256)
	now := time.Unix(1_700_000_000, 0)
	answers := func(latency time.Duration) {
		for range recentSamples {
			a.observe(Sample{Signal: Answered, Started: now, Latency: latency, InFlight: 1}, now)
		}
	}
	answers(5 * time.Millisecond)
	require.Equal(t, 5*time.Millisecond, a.minLatency())
	// The receiver moved: 80 ms from now on.
	for i := range 3 {
		now = now.Add(minRTTWindow)
		answers(80 * time.Millisecond)
		if i == 0 {
			require.Equal(t, 5*time.Millisecond, a.minLatency(), "the previous window still counts")
		}
	}
	require.Equal(t, 80*time.Millisecond, a.minLatency())
}

func TestCeilingChangeBoundsTheLimit(t *testing.T) {
	t.Parallel()
	r := newRun(16, 256)
	r.round(Answered, 10*time.Millisecond)
	r.a.setCeiling(4)
	require.Equal(t, 4, r.a.Limit())
	r.round(Answered, 10*time.Millisecond)
	require.Equal(t, 4, r.a.Limit())
}

func TestAReceiverOfSpreadLatenciesIsNotJudgedByItsFastestAnswer(t *testing.T) {
	t.Parallel()
	r := newRun(16, 256)
	// Its paths answer anywhere from 1 to 100 ms, unloaded: the median
	// (about 50 ms) is the base, not the 1 ms answers.
	for range 8 {
		started, n := r.t, r.a.Limit()
		r.t = r.t.Add(100 * time.Millisecond)
		for i := range n {
			// Spread over the round, as paths' answers come.
			latency := time.Duration(1+(i*37)%100) * time.Millisecond
			r.a.observe(Sample{Signal: Answered, Started: started, Latency: latency, InFlight: n}, r.t)
		}
	}
	require.Equal(t, 256, r.a.Limit())
}
