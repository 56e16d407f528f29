package scenario

import (
	"cmp"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/tests/bench/internal/check"
	"github.com/sundial-run/sundial/tests/bench/internal/load"
	"github.com/sundial-run/sundial/tests/bench/internal/receiver"
	"github.com/sundial-run/sundial/tests/bench/internal/report"
	"github.com/sundial-run/sundial/tests/bench/internal/stats"
)

// The realistic scenario's receiver: how its paths answer, as real
// receivers do. The hooks' shares are per hundred consecutive hooks (by
// postAt), so that every second and every burst has the same mix.
const (
	// healthyPaths are the paths that answer 200 in realisticQuick; a
	// project's receiver has several endpoints.
	healthyPaths = 8
	// failingShare, slowShare, hangingShare and asyncShare are the
	// hundredths of the hooks on paths that answer 500, answer in
	// realisticSlow, never answer before the delivery timeout
	// (realisticHang), and answer 202; the rest are healthy.
	failingShare = 3
	slowShare    = 3
	hangingShare = 1
	asyncShare   = 3
	// flakyShare is the hundredths of the hooks, all on healthy paths,
	// whose first attempt is answered 500 and whose retry succeeds: the
	// retries whose lateness is measured.
	flakyShare = 3
	// realisticRetryDelay is every hook's fixed retry delay (the API's
	// least), and realisticRetries its retries: one, so that a hook on a
	// failing or hanging path ends after two attempts.
	realisticRetryDelay = 5 * time.Second
	realisticRetries    = 1
	// realisticHang outlasts both systems' delivery timeout (10 s).
	realisticHang = 12 * time.Second
	// realisticDeadline bounds the wait for the last expected arrival
	// after the last postAt: a hanging hook's retry comes after its first
	// attempt's timeout and the retry delay.
	realisticDeadline = 2 * time.Minute
	// realisticGoalMs is issue 41's bound on the healthy paths' lateness
	// p99.
	realisticGoalMs = 50
)

var (
	realisticQuick = receiver.Span{Min: time.Millisecond, Max: 50 * time.Millisecond}
	realisticSlow  = receiver.Span{Min: time.Second, Max: 5 * time.Second}
)

// realisticShape is the realistic scenario's load: a steady flow with
// bursts, over paths of every kind.
type realisticShape struct {
	rate, seconds int
	// burst hooks are due at one instant every burstEvery within the flow.
	burst      int
	burstEvery time.Duration
	// hanging says whether the hanging paths take their share: a quick run
	// leaves them out (their 12 s would be most of its length) and gives
	// their share to the healthy paths.
	hanging bool
}

func realisticOf(c Config) *realisticShape {
	return &realisticShape{
		rate: c.RealisticRate, seconds: c.RealisticSeconds, burst: c.RealisticBurst,
		burstEvery: time.Duration(c.RealisticBurstEvery) * time.Second, hanging: !c.Quick,
	}
}

// bursts are the burst instants' offsets from the first postAt.
func (r *realisticShape) bursts() []time.Duration {
	var out []time.Duration
	span := time.Duration(r.seconds) * time.Second
	for at := r.burstEvery; r.burstEvery > 0 && at < span; at += r.burstEvery {
		out = append(out, at)
	}
	return out
}

func (r *realisticShape) hooks() int { return r.rate*r.seconds + r.burst*len(r.bursts()) }

// postAts are the flow's instants, evenly spaced from t0, and the bursts',
// merged in order.
func (r *realisticShape) postAts(t0 time.Time) []time.Time {
	flow := r.rate * r.seconds
	out := make([]time.Time, 0, r.hooks())
	for i := range flow {
		out = append(out, t0.Add(time.Second*time.Duration(i)/time.Duration(r.rate)))
	}
	for _, b := range r.bursts() {
		for range r.burst {
			out = append(out, t0.Add(b))
		}
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

// kind is the kind of path of the i-th hook, and whether it is flaky.
func (r *realisticShape) kind(i int) (receiver.Kind, bool) {
	n := i % 100
	switch {
	case n < failingShare:
		return receiver.Failing, false
	case n < failingShare+slowShare:
		return receiver.Slow, false
	case n < failingShare+slowShare+hangingShare && r.hanging:
		return receiver.Hanging, false
	case n < failingShare+slowShare+hangingShare:
		return receiver.Healthy, false
	case n < failingShare+slowShare+hangingShare+asyncShare:
		return receiver.Async, false
	}
	// Flaky hooks are spread through the rest, one in every 100/flakyShare.
	return receiver.Healthy, n%(100/flakyShare) == 0
}

func (r *realisticShape) path(i int, k receiver.Kind) string {
	if k == receiver.Healthy {
		return fmt.Sprintf("/realistic/healthy/%d", i%healthyPaths)
	}
	return "/realistic/" + k.String()
}

// specs are the hooks to create, each with the same fixed retry policy.
func (r *realisticShape) specs(postAts []time.Time) []load.Spec {
	out := make([]load.Spec, len(postAts))
	for i, at := range postAts {
		k, _ := r.kind(i)
		out[i] = load.Spec{PostAt: at, Path: r.path(i, k), Retries: realisticRetries, RetryDelay: realisticRetryDelay}
	}
	return out
}

// expected is how many times each hook should arrive: twice when its
// first attempt fails (flaky, failing and hanging hooks: one retry), once
// otherwise.
func (r *realisticShape) expected(i int) int {
	k, flaky := r.kind(i)
	if flaky || k == receiver.Failing || k == receiver.Hanging {
		return 1 + realisticRetries
	}
	return 1
}

// receiver is how the receiver should answer the created hooks, verifying
// every signature with key.
func (r *realisticShape) receiver(hooks []check.Hook, key string) *receiver.Realistic {
	real := &receiver.Realistic{
		SigningKey: key,
		Behaviour: receiver.Behaviour{
			Paths: map[string]receiver.Kind{}, FailFirst: map[uuid.UUID]*atomic.Bool{},
			Quick: realisticQuick, Slow: realisticSlow, Hang: realisticHang,
		},
	}
	for i, h := range hooks {
		k, flaky := r.kind(i)
		real.Behaviour.Paths[r.path(i, k)] = k
		if flaky {
			real.Behaviour.FailFirst[h.ID] = &atomic.Bool{}
		}
	}
	return real
}

// want is each hook's expected arrivals, for waitArrivals, and their sum.
func (r *realisticShape) want(hooks []check.Hook) (map[uuid.UUID]int, int) {
	out := make(map[uuid.UUID]int, len(hooks))
	total := 0
	for i, h := range hooks {
		out[h.ID] = r.expected(i)
		total += out[h.ID]
	}
	return out, total
}

// burstInstants are the bursts' postAts (as Unix nanoseconds), from the
// first hook's postAt: a flow hook due at a burst's instant counts as the
// burst's, being due with it.
func (r *realisticShape) burstInstants(hooks []check.Hook) map[int64]bool {
	out := map[int64]bool{}
	if len(hooks) == 0 {
		return out
	}
	for _, b := range r.bursts() {
		out[hooks[0].PostAt.Add(b).UnixNano()] = true
	}
	return out
}

// figures measures the run from the receiver's arrivals: by kind of path,
// the healthy paths' first attempts and retries, what arrived beyond what
// was expected, and the goal.
func (r *realisticShape) figures(hooks []check.Hook, arrivals []receiver.Arrival, recv *receiver.Receiver) *report.Realistic {
	byID := make(map[uuid.UUID][]receiver.Arrival, len(hooks))
	for _, a := range arrivals {
		byID[a.ID] = append(byID[a.ID], a)
	}
	out := &report.Realistic{
		RetryDelaySecs: int(realisticRetryDelay / time.Second), Bursts: len(r.bursts()), BurstSize: r.burst,
		Hanging: r.hanging, BadSignatures: recv.BadSignatures(), Verified: len(arrivals),
	}
	type tally struct {
		paths    map[string]bool
		hooks    int
		arrivals int
		late     []time.Duration
	}
	kinds := map[receiver.Kind]*tally{}
	var healthy, flow, burst, retries []time.Duration
	inBurst := r.burstInstants(hooks)
	for i, h := range hooks {
		k, flaky := r.kind(i)
		t := kinds[k]
		if t == nil {
			t = &tally{paths: map[string]bool{}}
			kinds[k] = t
		}
		t.paths[r.path(i, k)] = true
		t.hooks++
		got := byID[h.ID]
		slices.SortFunc(got, func(a, b receiver.Arrival) int { return cmp.Compare(a.Since, b.Since) })
		t.arrivals += len(got)
		if extra := len(got) - r.expected(i); extra > 0 {
			out.Unexpected += extra
		}
		if len(got) == 0 {
			if k == receiver.Healthy {
				out.HealthyMissing++
			}
			continue
		}
		first := recv.At(got[0]).Sub(h.PostAt)
		t.late = append(t.late, first)
		if k != receiver.Healthy {
			continue
		}
		healthy = append(healthy, first)
		if inBurst[h.PostAt.UnixNano()] {
			burst = append(burst, first)
		} else {
			flow = append(flow, first)
		}
		if !flaky {
			continue
		}
		out.Retries++
		if len(got) < 2 || got[0].Answered == 0 {
			out.RetriesMissing++
			continue
		}
		// The retry is due the fixed delay after the failed attempt was
		// answered: neither system can know of the failure any sooner.
		due := got[0].Answered + realisticRetryDelay
		late := got[1].Since - due
		if late < 0 {
			out.RetriesEarly++
		}
		retries = append(retries, late)
	}
	for _, k := range receiver.Kinds {
		if t := kinds[k]; t != nil {
			out.Paths = append(out.Paths, report.PathFigures{
				Kind: k.String(), Paths: len(t.paths), Hooks: t.hooks, Arrivals: t.arrivals, Lateness: stats.Summarize(t.late),
			})
		}
	}
	out.Healthy = stats.Summarize(healthy)
	out.HealthyFlow, out.HealthyBurst = stats.Summarize(flow), stats.Summarize(burst)
	out.HealthyRetries = stats.Summarize(retries)
	out.Goals = []report.Goal{{
		What: "healthy-path lateness p99", Target: fmt.Sprintf("<= %d ms", realisticGoalMs),
		Value: out.Healthy.P99Ms, Unit: "ms",
		Met: out.Healthy.Count > 0 && out.HealthyMissing == 0 && out.Healthy.P99Ms <= realisticGoalMs,
	}}
	return out
}
