package retry

import (
	"errors"
	"fmt"
)

// Range is the values a setting accepts, both ends included.
type Range[T int | float64] struct {
	Min, Max T
}

// Check returns nil for a value in the range, else an error in the words
// the API answers with: "must be from 5 to 60" ("from 1.1 to 4.0" for a
// factor). NaN is out of every range.
func (r Range[T]) Check(v T) error {
	if v >= r.Min && v <= r.Max {
		return nil
	}
	return fmt.Errorf("must be from %s to %s", bound(r.Min), bound(r.Max))
}

func bound[T int | float64](v T) string {
	if f, ok := any(v).(float64); ok {
		return fmt.Sprintf("%.1f", f)
	}
	return fmt.Sprint(v)
}

// Bounds are the values the API accepts for each numeric setting of a
// policy.
type Bounds struct {
	MinRetries    Range[int]
	DelaySecs     Range[int]
	BackoffFactor Range[float64]
	MaxDelaySecs  Range[int]
}

// ProjectBounds bound a project's default policy (PATCH /v1/project).
var ProjectBounds = Bounds{
	MinRetries:    Range[int]{0, 15},
	DelaySecs:     Range[int]{5, 3600},
	BackoffFactor: Range[float64]{1.1, 4.0},
	MaxDelaySecs:  Range[int]{60, 86400},
}

// OverrideBounds bound a hook's retryOverride (POST /v1/hooks): narrower
// than a project's, and a missing maxDelaySecs means the largest.
var OverrideBounds = Bounds{
	MinRetries:    Range[int]{1, 15},
	DelaySecs:     Range[int]{5, 60},
	BackoffFactor: Range[float64]{1.1, 4.0},
	MaxDelaySecs:  Range[int]{60, DefaultMaxDelaySecs},
}

var errStrategy = fmt.Errorf("must be %q or %q", StrategyFixed, StrategyExponential)

// CheckStrategy returns nil for StrategyFixed and StrategyExponential
// (spelt exactly so), else an error in the words the API answers with.
func CheckStrategy(s string) error {
	if s != StrategyFixed && s != StrategyExponential {
		return errStrategy
	}
	return nil
}

// errRequired is the API's words for a required member left out.
var errRequired = errors.New("is required")
