// Package retry is the retry policy of hooks, the one contract the gateway
// (which validates and stores it) and the scheduler (which applies it)
// share: the policy and its bounds, the defaults, the JSON of a hook's
// retryOverride, and the formulas for how many attempts a hook may make and
// how long to wait before each retry. It is pure logic: a project's
// settings and a hook's retryOverride come in, numbers go out.
package retry

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Strategies.
const (
	StrategyFixed       = "fixed"
	StrategyExponential = "exponential"
)

// Defaults of the optional override fields (docs/product.md, "Statuses and
// retries").
const (
	DefaultBackoffFactor = 2.0
	DefaultMaxDelaySecs  = 3600
)

// Jitter bounds: a jittered delay is the delay times a uniform factor in
// [JitterMin, JitterMax].
const (
	JitterMin = 0.8
	JitterMax = 1.2
)

// Policy is a retry configuration: a project's defaults or a hook's override.
type Policy struct {
	// MinRetries is the number of retries after the first attempt.
	MinRetries int
	// DelaySecs is the delay before a retry (fixed) or before the first one
	// (exponential).
	DelaySecs int
	// Strategy is StrategyFixed or StrategyExponential.
	Strategy string
	// BackoffFactor multiplies the delay for each further retry (exponential only).
	BackoffFactor float64
	// MaxDelaySecs caps an exponential delay (before jitter).
	MaxDelaySecs int
	// Jitter spreads each delay by a uniform factor in [JitterMin, JitterMax]
	// so that hooks failing together do not retry together.
	Jitter bool
}

// Rand returns a uniform number in [0, 1). Tests inject one to bound jitter;
// nil means math/rand/v2's Float64, which is safe for concurrent use.
type Rand func() float64

// MaxAttempts is the number of attempts the policy allows: the first plus
// the retries.
func (p Policy) MaxAttempts() int {
	return 1 + max(p.MinRetries, 0)
}

// Budget is the retry budget a hook is on: its policy, counted from Base,
// the attempts made before the budget started. A new hook's Base is 0; a
// bulk retry starts a fresh budget at the attempts made so far, so that
// attempt numbers keep counting up while the policy applies anew.
type Budget struct {
	Policy Policy
	Base   int
}

// MaxAttempts is the hook's last allowed attempt number: the attempts made
// before this budget, plus the first attempt and the retries of the policy.
func (b Budget) MaxAttempts() int {
	return max(b.Base, 0) + b.Policy.MaxAttempts()
}

// DelayAfter is the wait before the retry that follows attempt (the hook's
// overall attempt number): the policy's retry n, numbered within the budget.
func (b Budget) DelayAfter(attempt int, rnd Rand) time.Duration {
	return b.Policy.Delay(attempt-max(b.Base, 0), rnd)
}

// Delay is the wait before retry n (1-based: retry 1 follows attempt 1).
func (p Policy) Delay(n int, rnd Rand) time.Duration {
	n = max(n, 1)
	secs := float64(p.DelaySecs)
	if p.Strategy == StrategyExponential {
		// Pow may overflow to +Inf for large n; min still yields the cap.
		secs = math.Min(secs*math.Pow(p.BackoffFactor, float64(n-1)), float64(p.MaxDelaySecs))
	}
	if p.Jitter {
		if rnd == nil {
			rnd = rand.Float64
		}
		secs *= JitterMin + (JitterMax-JitterMin)*rnd()
	}
	return time.Duration(secs * float64(time.Second))
}

// Validate reports a policy that the formulas cannot use.
func (p Policy) Validate() error {
	var errs []error
	if p.MinRetries < 0 {
		errs = append(errs, fmt.Errorf("minRetries %d: must not be negative", p.MinRetries))
	}
	if p.DelaySecs < 0 {
		errs = append(errs, fmt.Errorf("delaySecs %d: must not be negative", p.DelaySecs))
	}
	switch p.Strategy {
	case StrategyFixed:
	case StrategyExponential:
		if p.BackoffFactor < 1 {
			errs = append(errs, fmt.Errorf("backoffFactor %g: must be at least 1", p.BackoffFactor))
		}
		if p.MaxDelaySecs < 0 {
			errs = append(errs, fmt.Errorf("maxDelaySecs %d: must not be negative", p.MaxDelaySecs))
		}
	default:
		errs = append(errs, fmt.Errorf("strategy %q: want %q or %q", p.Strategy, StrategyFixed, StrategyExponential))
	}
	return errors.Join(errs...)
}
