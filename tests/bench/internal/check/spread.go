package check

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// LateBound is the lateness beyond which a hook counts in Spread: the
// steady goals' p99 (docs/benchmarks.md).
const LateBound = 10 * time.Millisecond

// worstShown is how many of the worst seconds Spread keeps.
const worstShown = 3

// Spread says how the hooks later than LateBound fall over the seconds of
// the run (by due instant, from the first postAt): a p99 set by a few
// seconds of stall (a checkpoint, a slow commit) looks different from one
// set by hooks a little late all along, and the cures differ.
type Spread struct {
	// Late counts delivered hooks later than LateBound.
	Late int `json:"late"`
	// Seconds counts the seconds holding at least one of them, of Span.
	Seconds int `json:"seconds"`
	Span    int `json:"span"`
	// Worst are the seconds holding the most, most first.
	Worst []LateSecond `json:"worst,omitempty"`
	// BySecond counts them second by second, for a plot.
	BySecond []int `json:"bySecond,omitempty"`
}

// LateSecond is one second of the run and its hooks later than LateBound.
type LateSecond struct {
	// Second counts from the first postAt.
	Second int `json:"second"`
	Late   int `json:"late"`
	// MaxMs is the latest of them.
	MaxMs float64 `json:"maxMs"`
}

// spread buckets the late hooks of dues (each hook's postAt) and lates
// (its lateness, same order) by second.
func spread(first time.Time, last time.Time, dues []time.Time, lates []time.Duration) Spread {
	s := Spread{Span: int(last.Sub(first)/time.Second) + 1}
	s.BySecond = make([]int, s.Span)
	maxMs := make([]float64, s.Span)
	for i, late := range lates {
		if late <= LateBound {
			continue
		}
		s.Late++
		sec := int(dues[i].Sub(first) / time.Second)
		s.BySecond[sec]++
		maxMs[sec] = max(maxMs[sec], float64(late.Microseconds())/1000)
	}
	for sec, n := range s.BySecond {
		if n > 0 {
			s.Worst = append(s.Worst, LateSecond{Second: sec, Late: n, MaxMs: maxMs[sec]})
		}
	}
	s.Seconds = len(s.Worst)
	slices.SortFunc(s.Worst, func(a, b LateSecond) int {
		return cmp.Or(cmp.Compare(b.Late, a.Late), cmp.Compare(a.Second, b.Second))
	})
	if len(s.Worst) > worstShown {
		s.Worst = s.Worst[:worstShown]
	}
	return s
}

// String is the spread in one line of the report.
func (s Spread) String() string {
	if s.Late == 0 {
		return fmt.Sprintf("none later than %s", LateBound)
	}
	worst := make([]string, len(s.Worst))
	for i, ls := range s.Worst {
		worst[i] = fmt.Sprintf("+%ds: %d (max %.1f ms)", ls.Second, ls.Late, ls.MaxMs)
	}
	return fmt.Sprintf("%d later than %s, in %d of %d seconds; most in %s", s.Late, LateBound, s.Seconds, s.Span, strings.Join(worst, ", "))
}
