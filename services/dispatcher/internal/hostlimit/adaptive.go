package hostlimit

import "time"

// The adaptive limit of one flow (a project's deliveries to one host): an
// additive-increase, multiplicative-decrease window as TCP's, gated by
// latency as TCP Vegas and gradient limiters are. It is a pure function of
// the samples it is given and of the times they carry, so it is tested
// with made-up samples and no clock.
//
//   - It starts at the limiter's initial limit and, while the receiver
//     answers, latency stays near its observed minimum and the flow uses at
//     least half its limit, grows: by one per answer (doubling each round
//     trip, "slow start") until its first back-off, then by one per round
//     trip's worth of answers.
//   - A sign of overload (a timeout, a connection error, a 5xx or 429
//     answer) halves it; latency far above its minimum takes a tenth off.
//     Either at most once per round trip: a sample of a delivery started
//     before the last cut says nothing new.
//   - It stays between 1 and its ceiling (the operator's, or the project's
//     maxConcurrency when lower).

// Signal is what one delivery says about its receiver's load.
type Signal int

// Signals.
const (
	// Answered: the receiver answered in time with anything but 429 or a
	// 5xx.
	Answered Signal = iota + 1
	// Overloaded: a timeout, a connection or TLS error, or a 429 or 5xx
	// answer.
	Overloaded
)

// Sample is one finished delivery.
type Sample struct {
	Signal Signal
	// Started is when the delivery took its slot, Latency how long its
	// exchange took.
	Started time.Time
	Latency time.Duration
	// InFlight is the flow's deliveries in flight when it started, itself
	// included: growth needs a limit that is being used.
	InFlight int
}

// Tuning of the adaptive limit.
const (
	// backoff is the factor a sign of overload multiplies the limit by,
	// latencyBackoff the one of latency far above its minimum.
	backoff        = 0.5
	latencyBackoff = 0.9
	// Latency is "near its minimum" while the smoothed latency is at most
	// latencyTolerance times the minimum plus latencySlack (the slack keeps
	// a receiver of sub-millisecond answers from being judged by jitter);
	// it is "far above" at twice that.
	latencyTolerance = 2
	latencySlack     = 25 * time.Millisecond
	// minRTTWindow is how long a minimum latency is remembered: the
	// minimum is of this window and the one before, so a receiver that
	// moved (a slower region) is re-measured within two windows.
	minRTTWindow = 30 * time.Second
	// smoothing is the weight of a new sample in the smoothed latencies.
	smoothing = 0.125
)

// adaptive is the limit state of one flow.
type adaptive struct {
	limit    float64
	ssthresh float64 // slow start below this; 0 until the first cut
	ceiling  float64
	// minRTT is the least latency of the current window, prevMinRTT of the
	// previous one (0: none), windowStart when the current began.
	minRTT, prevMinRTT time.Duration
	windowStart        time.Time
	// srtt smooths the latencies of answers; service those of every
	// delivery, timeouts included (the deferral suggestion's base).
	srtt, service time.Duration
	// lastCut is when the limit was last cut; samples of deliveries
	// started before it do not cut again.
	lastCut time.Time
}

func newAdaptive(initial, ceiling int) *adaptive {
	return &adaptive{limit: float64(min(initial, ceiling)), ceiling: float64(ceiling)}
}

// Limit is the deliveries the flow may have in flight, at least 1 and at
// most its ceiling.
func (a *adaptive) Limit() int { return max(int(min(a.limit, a.ceiling)), 1) }

// setCeiling bounds the limit by ceiling (a project's cap may change): the
// limit learnt is kept, so a cap lifted again does not start it afresh.
func (a *adaptive) setCeiling(ceiling int) {
	a.ceiling = float64(max(ceiling, 1))
}

// minLatency is the least latency observed in the last two windows, 0 if
// none.
func (a *adaptive) minLatency() time.Duration {
	switch {
	case a.prevMinRTT == 0:
		return a.minRTT
	case a.minRTT == 0:
		return a.prevMinRTT
	}
	return min(a.minRTT, a.prevMinRTT)
}

// observe takes one sample, finished at now.
func (a *adaptive) observe(s Sample, now time.Time) {
	a.service = smooth(a.service, s.Latency)
	if s.Signal == Overloaded {
		a.cut(s, now, backoff)
		return
	}
	if s.Signal != Answered {
		return
	}
	a.noteLatency(s.Latency, now)
	a.srtt = smooth(a.srtt, s.Latency)
	near := time.Duration(float64(a.minLatency())*latencyTolerance) + latencySlack
	switch {
	case a.srtt > 2*near:
		a.cut(s, now, latencyBackoff)
	case a.srtt <= near && 2*s.InFlight >= a.Limit() && a.limit < a.ceiling:
		if a.ssthresh == 0 || a.limit < a.ssthresh {
			a.limit++
		} else {
			a.limit += 1 / a.limit
		}
		a.limit = min(a.limit, a.ceiling)
	}
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

func (a *adaptive) noteLatency(d time.Duration, now time.Time) {
	if a.windowStart.IsZero() {
		a.windowStart = now
	}
	if now.Sub(a.windowStart) >= minRTTWindow {
		a.prevMinRTT, a.minRTT, a.windowStart = a.minRTT, 0, now
	}
	if a.minRTT == 0 || d < a.minRTT {
		a.minRTT = max(d, time.Microsecond)
	}
}

func smooth(avg, sample time.Duration) time.Duration {
	if avg == 0 {
		return sample
	}
	return avg + time.Duration(smoothing*float64(sample-avg))
}
