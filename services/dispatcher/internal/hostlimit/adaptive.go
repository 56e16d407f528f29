package hostlimit

import (
	"slices"
	"time"

	"github.com/sundial-run/sundial/services/dispatcher/internal/least"
)

// The adaptive limit of one flow (a project's deliveries to one host): an
// additive-increase, multiplicative-decrease window as TCP's, gated by
// latency as TCP Vegas and gradient limiters are. It is a pure function of
// the samples it is given and of the times they carry, so it is tested
// with made-up samples and no clock.
//
// A flow mixes paths: most answer in milliseconds, a few may be slow, fail
// for their payload or hang until the timeout. What the limit learns must
// follow the flow's typical delivery, not its slowest one, or one hanging
// path would make every other hook to the domain wait (docs/choices.md,
// "Per-host concurrency adapts to the receiver"). So:
//
//   - Latency is judged by the median of the flow's recent deliveries
//     (timeouts included, at their duration): it moves only once most of
//     them are slow, which is what an overloaded receiver looks like. Its
//     base is the least median observed, since the spread of a domain's
//     paths is not load.
//   - What parking, waiting and deferring go by (Typical) is the median of
//     the recent answered deliveries alone: a domain's hanging path must
//     not make its other paths' hooks wait once it is most of the traffic.
//   - It starts at the limiter's initial limit and, while that median stays
//     near its least and the flow uses at least half its
//     limit, grows: by one per answer (doubling each round trip, "slow
//     start") until its first back-off, then by one per round trip's worth
//     of answers.
//   - The receiver's own statement of overload (a 429 or 503 answer) or a
//     connection error halves it. A timeout halves it only when most of the
//     recent deliveries failed so: one hanging path is a fact about its
//     requests, not about the host. A timeout on another path than the one
//     the flow's last answer came from, within pathWindow of that answer,
//     is left out altogether, as the breaker leaves out such a run: the
//     host has just answered, and once a domain's other paths fall quiet
//     its hanging path's timeouts would otherwise be all the recent
//     deliveries and take the limit down to one. Any other answer, a 500 included, is an
//     answer about its payload. A median far above the minimum takes a
//     tenth off. Each cut at most once per round trip: a sample of a
//     delivery started before the last cut says nothing new.
//   - It stays between 1 and its ceiling (the operator's, or the project's
//     maxConcurrency when lower).

// Signal is what one delivery says about its receiver's load.
type Signal int

// Signals.
const (
	// Answered: the receiver answered in time with anything but 429 or
	// 503.
	Answered Signal = iota + 1
	// TimedOut: no answer within the delivery timeout.
	TimedOut
	// Overloaded: a 429 or 503 answer, or a connection or TLS error.
	Overloaded
)

// Sample is one finished delivery.
type Sample struct {
	Signal Signal
	// Started is when the delivery took its slot, Latency how long its
	// exchange took.
	Started time.Time
	Latency time.Duration
	// InFlight is the flow's deliveries counted against its limit when it
	// started, itself included: growth needs a limit that is being used.
	InFlight int
	// Path is the hook's path (and query string).
	Path string
}

// Tuning of the adaptive limit.
const (
	// backoff is the factor a sign of overload multiplies the limit by,
	// latencyBackoff the one of latency far above its minimum.
	backoff        = 0.5
	latencyBackoff = 0.9
	// Latency is "near its minimum" while the median latency is at most
	// latencyTolerance times the minimum plus latencySlack (the slack keeps
	// a receiver of sub-millisecond answers from being judged by jitter);
	// it is "far above" at twice that.
	latencyTolerance = 2
	latencySlack     = 25 * time.Millisecond
	// minRTTWindow is how long a minimum latency is remembered: the
	// minimum is of this window and the one before, so a receiver that
	// moved (a slower region) is re-measured within two windows.
	minRTTWindow = 30 * time.Second
	// recentSamples is how many of the latest deliveries the median and the
	// share of timeouts are taken over: enough that a few slow paths are a
	// minority, few enough that a receiver turning slow shows within a
	// round trip of a busy flow.
	recentSamples = 32
	// medianEvery is how many samples pass between two computations of the
	// median once the window is full: sorting 32 latencies on every
	// delivery would cost a burst more than the median's freshness is
	// worth.
	medianEvery = 4
	// pathWindow is how long after the flow's last answer a timeout on
	// another path is that path's and not the host's: the scheduler's
	// breaker's window (breaker.DefaultPathWindow).
	pathWindow = 2 * time.Minute
)

// adaptive is the limit state of one flow.
type adaptive struct {
	limit    float64
	ssthresh float64 // slow start below this; 0 until the first cut
	ceiling  float64
	// minRTT is the least median latency of the last two windows.
	minRTT least.Window
	// recent holds the latest deliveries' latencies (a ring, next is where
	// the next goes, seen how many it holds) and failed which of them timed
	// out or found the host overloaded; failures counts those.
	recent   [recentSamples]time.Duration
	failed   [recentSamples]bool
	next     int
	seen     int
	failures int
	// median is the median of recent, answered that of the recent
	// deliveries that were answered (median when none was), sinceMedian
	// the samples since they were computed.
	median      time.Duration
	answered    time.Duration
	sinceMedian int
	// lastCut is when the limit was last cut; samples of deliveries
	// started before it do not cut again.
	lastCut time.Time
	// answeredPath and answeredAt are the path and time of the last answer.
	answeredPath string
	answeredAt   time.Time
}

func newAdaptive(initial, ceiling int) *adaptive {
	return &adaptive{limit: float64(min(initial, ceiling)), ceiling: float64(ceiling),
		minRTT: least.Window{Length: minRTTWindow}}
}

// Limit is the deliveries the flow may have in flight, at least 1 and at
// most its ceiling.
func (a *adaptive) Limit() int { return max(int(min(a.limit, a.ceiling)), 1) }

// Typical is the median latency of the flow's recent answered deliveries
// (of all of them when none was answered), 0 before the first: what
// parking, waiting and deferring go by. Timeouts are left out: when a
// domain's only traffic for a while is its hanging path (its other hooks
// delivered), a median of timeouts would stop the hanging requests from
// parking and defer the next healthy hook by seconds. A receiver whose
// every request times out has no answered delivery, and its timeouts are
// its typical latency.
func (a *adaptive) Typical() time.Duration { return a.answered }

// setCeiling bounds the limit by ceiling (a project's cap may change): the
// limit learnt is kept, so a cap lifted again does not start it afresh.
func (a *adaptive) setCeiling(ceiling int) {
	a.ceiling = float64(max(ceiling, 1))
}

// minLatency is the least latency observed in the last two windows, 0 if
// none.
func (a *adaptive) minLatency() time.Duration { return a.minRTT.Least() }

// observe takes one sample, finished at now.
func (a *adaptive) observe(s Sample, now time.Time) {
	if s.Signal != Answered && s.Signal != TimedOut && s.Signal != Overloaded {
		return
	}
	if s.Signal == TimedOut && a.pathsTimeout(s, now) {
		return
	}
	if s.Signal == Answered {
		a.answeredPath, a.answeredAt = s.Path, now
	}
	a.remember(s)
	switch s.Signal {
	case Overloaded:
		a.cut(s, now, backoff)
		return
	case TimedOut:
		if 2*a.failures > a.seen {
			a.cut(s, now, backoff)
		}
		return
	}
	if a.seen < recentSamples {
		// Too few deliveries for a median to judge by: a new flow grows
		// while it is used, as in slow start.
		a.grow(s)
		return
	}
	// The base the median is compared with is the least median, not the
	// least sample: a receiver whose paths answer anywhere from 1 to 50 ms
	// has a median far above its fastest answer without being loaded.
	a.minRTT.Note(a.median, now)
	near := time.Duration(float64(a.minLatency())*latencyTolerance) + latencySlack
	switch {
	case a.median > 2*near:
		a.cut(s, now, latencyBackoff)
	case a.median <= near:
		a.grow(s)
	}
}

// pathsTimeout reports whether a timeout is its path's own: the flow's
// last answer, on another path, came within pathWindow.
func (a *adaptive) pathsTimeout(s Sample, now time.Time) bool {
	return !a.answeredAt.IsZero() && s.Path != a.answeredPath && now.Sub(a.answeredAt) <= pathWindow
}

// grow raises the limit after an answer, if the flow uses at least half of
// it: by one in slow start, by one per round trip's worth after.
func (a *adaptive) grow(s Sample) {
	if 2*s.InFlight < a.Limit() || a.limit >= a.ceiling {
		return
	}
	if a.ssthresh == 0 || a.limit < a.ssthresh {
		a.limit++
	} else {
		a.limit += 1 / a.limit
	}
	a.limit = min(a.limit, a.ceiling)
}

// remember adds s to the recent deliveries and keeps their median.
func (a *adaptive) remember(s Sample) {
	failed := s.Signal != Answered
	if a.seen == recentSamples {
		if a.failed[a.next] {
			a.failures--
		}
	} else {
		a.seen++
	}
	a.recent[a.next], a.failed[a.next] = s.Latency, failed
	if failed {
		a.failures++
	}
	a.next = (a.next + 1) % recentSamples
	a.sinceMedian++
	if a.seen < recentSamples || a.sinceMedian >= medianEvery {
		a.median = median(a.recent[:a.seen])
		a.answered = a.answeredMedian()
		a.sinceMedian = 0
	}
}

// answeredMedian is the median of the recent deliveries that were
// answered, or median when none was.
func (a *adaptive) answeredMedian() time.Duration {
	var buf [recentSamples]time.Duration
	ok := buf[:0]
	for i, d := range a.recent[:a.seen] {
		if !a.failed[i] {
			ok = append(ok, d)
		}
	}
	if len(ok) == 0 {
		return a.median
	}
	return median(ok)
}

// median is the median of ds (the upper one of an even count), which it
// leaves as it was.
func median(ds []time.Duration) time.Duration {
	var buf [recentSamples]time.Duration
	sorted := buf[:len(ds)]
	copy(sorted, ds)
	slices.Sort(sorted)
	return sorted[len(sorted)/2]
}

// cut multiplies the limit by factor, once per round trip.
func (a *adaptive) cut(s Sample, now time.Time, factor float64) {
	if !a.lastCut.IsZero() && s.Started.Before(a.lastCut) {
		return
	}
	a.limit = max(min(a.limit, a.ceiling)*factor, 1)
	a.ssthresh = a.limit
	a.lastCut = now
}
