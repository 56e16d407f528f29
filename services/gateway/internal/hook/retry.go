package hook

import (
	"encoding/json"
)

// RetryOverrideRequest is a hook's own retry settings, as a client sends
// them.
type RetryOverrideRequest struct {
	MinRetries    *int     `json:"minRetries"`
	DelaySecs     *int     `json:"delaySecs"`
	Strategy      *string  `json:"strategy"`
	BackoffFactor *float64 `json:"backoffFactor"`
	MaxDelaySecs  *int     `json:"maxDelaySecs"`
	Jitter        *bool    `json:"jitter"`
}

// DefaultBackoffFactor applies when an override leaves backoffFactor out.
const DefaultBackoffFactor = 2.0

// retryOverride is the JSON stored in hooks.retry_override, which the
// scheduler reads: defaults are filled in so that it need not know them,
// except maxDelaySecs, whose absence means the scheduler's own cap.
type retryOverride struct {
	MinRetries    int     `json:"minRetries"`
	DelaySecs     int     `json:"delaySecs"`
	Strategy      string  `json:"strategy"`
	BackoffFactor float64 `json:"backoffFactor"`
	MaxDelaySecs  *int    `json:"maxDelaySecs,omitempty"`
	Jitter        bool    `json:"jitter"`
}

// validate returns the JSON to store, or nil when there is no override.
func (r *RetryOverrideRequest) validate(p *problems) json.RawMessage {
	if r == nil {
		return nil
	}
	before := len(*p)
	out := retryOverride{
		MinRetries:    requiredInt(r.MinRetries, "retryOverride.minRetries", 1, 15, p),
		DelaySecs:     requiredInt(r.DelaySecs, "retryOverride.delaySecs", 5, 60, p),
		Strategy:      strategy(r.Strategy, p),
		BackoffFactor: DefaultBackoffFactor,
		MaxDelaySecs:  r.MaxDelaySecs,
		Jitter:        r.Jitter != nil && *r.Jitter,
	}
	if f := r.BackoffFactor; f != nil {
		if *f < 1.1 || *f > 4.0 {
			p.add("retryOverride.backoffFactor", "must be from 1.1 to 4.0")
		}
		out.BackoffFactor = *f
	}
	if m := r.MaxDelaySecs; m != nil && (*m < 60 || *m > 3600) {
		p.add("retryOverride.maxDelaySecs", "must be from 60 to 3600")
	}
	if len(*p) > before {
		return nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		p.add("retryOverride", "cannot be encoded: %s", err)
		return nil
	}
	return b
}

func requiredInt(v *int, field string, lo, hi int, p *problems) int {
	switch {
	case v == nil:
		p.add(field, "is required")
		return 0
	case *v < lo || *v > hi:
		p.add(field, "must be from %d to %d", lo, hi)
	}
	return *v
}

func strategy(s *string, p *problems) string {
	switch {
	case s == nil:
		p.add("retryOverride.strategy", "is required")
		return ""
	case *s != "fixed" && *s != "exponential":
		p.add("retryOverride.strategy", `must be "fixed" or "exponential"`)
	}
	return *s
}
