package retry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// OverrideField is the member of a hook that holds its own retry settings.
const OverrideField = "retryOverride"

// Request is a retry policy as JSON carries it: a hook's retryOverride as a
// client sends it and as hooks.retry_override stores it, or the retryPolicy
// of a change to a project's settings. Pointers tell a member left out from
// one given as zero.
type Request struct {
	MinRetries    *int     `json:"minRetries"`
	DelaySecs     *int     `json:"delaySecs"`
	Strategy      *string  `json:"strategy"`
	BackoffFactor *float64 `json:"backoffFactor"`
	// MaxDelaySecs is left out of a stored override that has none: the
	// scheduler then caps delays at DefaultMaxDelaySecs.
	MaxDelaySecs *int  `json:"maxDelaySecs,omitempty"`
	Jitter       *bool `json:"jitter"`
}

// Problem is a member at fault, named by its dotted path in the request
// ("retryOverride.minRetries"), with what is wrong in the API's words.
type Problem struct {
	Field   string
	Message string
}

type problems []Problem

// check records err, when there is one, against the override's member.
func (p *problems) check(member string, err error) {
	if err != nil {
		*p = append(*p, Problem{Field: OverrideField + "." + member, Message: err.Error()})
	}
}

// ValidateOverride checks r as a hook's retryOverride (OverrideBounds) and
// returns the JSON to store in hooks.retry_override, or every problem. A
// nil r is no override: nil JSON, no problem. The defaults of the optional
// members are written out, so that the scheduler need not know them, except
// maxDelaySecs, whose absence means the scheduler's own cap.
func (r *Request) ValidateOverride() (json.RawMessage, []Problem) {
	if r == nil {
		return nil, nil
	}
	var bad problems
	b := OverrideBounds
	bad.check("minRetries", required(r.MinRetries, b.MinRetries.Check))
	bad.check("delaySecs", required(r.DelaySecs, b.DelaySecs.Check))
	bad.check("strategy", required(r.Strategy, CheckStrategy))
	bad.check("backoffFactor", optional(r.BackoffFactor, b.BackoffFactor.Check))
	bad.check("maxDelaySecs", optional(r.MaxDelaySecs, b.MaxDelaySecs.Check))
	if len(bad) > 0 {
		return nil, bad
	}
	factor, jitter := valueOr(r.BackoffFactor, DefaultBackoffFactor), valueOr(r.Jitter, false)
	stored := Request{
		MinRetries: r.MinRetries, DelaySecs: r.DelaySecs, Strategy: r.Strategy,
		BackoffFactor: &factor, MaxDelaySecs: r.MaxDelaySecs, Jitter: &jitter,
	}
	raw, err := json.Marshal(stored)
	if err != nil {
		return nil, []Problem{{Field: OverrideField, Message: "cannot be encoded: " + err.Error()}}
	}
	return raw, nil
}

func required[T any](v *T, check func(T) error) error {
	if v == nil {
		return errRequired
	}
	return check(*v)
}

func optional[T any](v *T, check func(T) error) error {
	if v == nil {
		return nil
	}
	return check(*v)
}

// ParseOverride decodes a hook's retry_override column. ok is false when the
// hook has none (SQL NULL or JSON null). Absent optional fields take their
// defaults: backoffFactor 2.0, maxDelaySecs 3600, jitter off.
//
// A claim and a batch of results read one per hook, and a project's hooks
// share a few overrides, stored as the gateway normalised them: each
// column's text is decoded once (parsedOverrides).
func ParseOverride(raw json.RawMessage) (p Policy, ok bool, err error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return Policy{}, false, nil
	}
	if o, found := parsedOverrides.get(trimmed); found {
		return o.policy, o.ok, o.err
	}
	p, ok, err = parseOverride(trimmed)
	parsedOverrides.put(trimmed, parsedOverride{policy: p, ok: ok, err: err})
	return p, ok, err
}

func parseOverride(trimmed []byte) (p Policy, ok bool, err error) {
	var o Request
	if err := json.Unmarshal(trimmed, &o); err != nil {
		return Policy{}, false, fmt.Errorf("retry override: %w", err)
	}
	if o.MinRetries == nil || o.DelaySecs == nil || o.Strategy == nil {
		return Policy{}, false, errors.New("retry override: minRetries, delaySecs and strategy are required")
	}
	p = Policy{
		MinRetries:    *o.MinRetries,
		DelaySecs:     *o.DelaySecs,
		Strategy:      *o.Strategy,
		BackoffFactor: valueOr(o.BackoffFactor, DefaultBackoffFactor),
		MaxDelaySecs:  valueOr(o.MaxDelaySecs, DefaultMaxDelaySecs),
		Jitter:        valueOr(o.Jitter, false),
	}
	if err := p.Validate(); err != nil {
		return Policy{}, false, fmt.Errorf("retry override: %w", err)
	}
	return p, true, nil
}

// maxParsedOverrides bounds parsedOverrides; past it the memo starts
// again empty, so a process that meets many distinct overrides holds at
// most this many.
const maxParsedOverrides = 1024

// parsedOverrides memoises parseOverride by the column's text.
var parsedOverrides = overrideMemo{m: make(map[string]parsedOverride)}

type parsedOverride struct {
	policy Policy
	ok     bool
	err    error
}

type overrideMemo struct {
	mu sync.Mutex
	m  map[string]parsedOverride
}

func (o *overrideMemo) get(raw []byte) (parsedOverride, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	v, found := o.m[string(raw)]
	return v, found
}

func (o *overrideMemo) put(raw []byte, v parsedOverride) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.m) >= maxParsedOverrides {
		clear(o.m)
	}
	o.m[string(raw)] = v
}

func valueOr[T any](v *T, def T) T {
	if v == nil {
		return def
	}
	return *v
}

// Effective is the policy that governs a hook: its override when it has one,
// which replaces the project's defaults entirely, else the project's. An
// override that cannot be used yields the project's policy and the error, so
// that the caller can report it and still schedule the hook.
func Effective(project Policy, rawOverride json.RawMessage) (Policy, error) {
	p, ok, err := ParseOverride(rawOverride)
	if err != nil || !ok {
		return project, err
	}
	return p, nil
}
