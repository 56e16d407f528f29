// Package breaker is the circuit breaker of the scheduler's endpoints
// (docs/security.md, "Circuit breaker and Retry-After"): the state of each
// unit that fails together, a project's domain, and how delivery outcomes
// move it. A run of failures (no answer, 429, 5xx) opens it; a 429 or 503
// with Retry-After pauses it at once until then. While it is paused the
// claim leases none of its hooks (it moves their run_at to the pause's end,
// spending no attempt); when the pause ends the claim lets one hook through,
// the probe, whose answer closes the breaker or opens it again for longer.
//
// This file is the state machine, pure: outcomes and the database's now in,
// the next state and the events to announce out. record.go keeps the state
// in PostgreSQL, in the transaction that applies a batch of results.
package breaker

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Causes of a pause, as endpoint_breakers.pause_cause and the API name them.
const (
	CauseFailures   = "failures"
	CauseRetryAfter = "retry_after"
	// CausePolicy: the project's failure policy pauses on a failure of
	// its class (pkg/failclass, Pause), until the pause is resumed.
	CausePolicy = "failure_policy"
)

// PolicyPause is how far ahead a pause by the failure policy ends: it
// waits for POST /v1/endpoints/resume, and no probe goes before. (A
// timestamp rather than none keeps every reader of paused_until as it is.)
const PolicyPause = 100 * 365 * 24 * time.Hour

// Policy is when the breaker opens and for how long.
type Policy struct {
	// Failures in a row that open the breaker, once they span MinSpan.
	Failures int
	// MinSpan is how long a run of failures must last before it opens the
	// breaker: a burst of failures that all end in the same instant (one
	// network blip under many deliveries) is not yet a failing server.
	MinSpan time.Duration
	// Cooldown is the first pause after the breaker opens; each failed
	// probe of the same pause doubles it, up to MaxCooldown.
	Cooldown    time.Duration
	MaxCooldown time.Duration
	// AlertRetryAfter is the shortest Retry-After pause that raises an
	// endpoint.paused alert: shorter ones are a receiver's routine flow
	// control, visible in the API but not worth waking anyone.
	AlertRetryAfter time.Duration
	// PathWindow is how long after a path of the domain answered a run of
	// failures that spares that path is taken for the fault of the paths
	// that fail (hanging or failing handlers), not the server's, which has
	// just answered: it does not open the breaker, and those paths' hooks
	// fail or retry on their own.
	PathWindow time.Duration
}

// Defaults of Policy.
const (
	DefaultFailures        = 10
	DefaultMinSpan         = 3 * time.Second
	DefaultCooldown        = 30 * time.Second
	DefaultMaxCooldown     = 10 * time.Minute
	DefaultAlertRetryAfter = time.Minute
	DefaultPathWindow      = 2 * time.Minute
)

// DefaultPolicy is the policy with every default.
var DefaultPolicy = Policy{
	Failures: DefaultFailures, MinSpan: DefaultMinSpan, Cooldown: DefaultCooldown,
	MaxCooldown: DefaultMaxCooldown, AlertRetryAfter: DefaultAlertRetryAfter, PathWindow: DefaultPathWindow,
}

// Validate reports a policy the breaker cannot run with.
func (p Policy) Validate() error {
	var errs []error
	if p.Failures < 1 {
		errs = append(errs, fmt.Errorf("breaker failures %d: must be at least 1", p.Failures))
	}
	if p.MinSpan < 0 {
		errs = append(errs, fmt.Errorf("breaker span %s: must not be negative", p.MinSpan))
	}
	if p.Cooldown < time.Second || p.MaxCooldown < p.Cooldown {
		errs = append(errs, fmt.Errorf("breaker cooldown %s up to %s: want at least 1s, and a maximum no less", p.Cooldown, p.MaxCooldown))
	}
	if p.AlertRetryAfter < 0 {
		errs = append(errs, fmt.Errorf("breaker alert threshold %s: must not be negative", p.AlertRetryAfter))
	}
	if p.PathWindow < 0 {
		errs = append(errs, fmt.Errorf("breaker path window %s: must not be negative", p.PathWindow))
	}
	return errors.Join(errs...)
}

// State is one unit's breaker. The zero State is active with no failure.
type State struct {
	// Failures counts the failures since the last healthy answer, and
	// FailingSince is when the first of them was applied.
	Failures     int32
	FailingSince time.Time
	LastError    string
	// PausedAt is when the pause began (zero: active); PausedUntil is when
	// the next probe may go.
	PausedAt    time.Time
	PausedUntil time.Time
	Cause       string
	Reason      string
	// Cooldown is the last opening's cooldown (doubles per failed probe).
	Cooldown time.Duration
	// HeldUntil is the latest run_at a hook of this pause was deferred to.
	HeldUntil time.Time
	// Probe is the hook let through as the probe, uuid.Nil when none.
	Probe uuid.UUID
	// Alerted: this pause raised endpoint.paused.
	Alerted bool
	// ResumeRequested: the API asked to resume (the gateway's only write).
	ResumeRequested bool
	// PauseClass is the failure class of a pause by the failure policy,
	// for its alert; not stored (the reason says it).
	PauseClass string
	// HealthyAt and HealthyPath are the last healthy answer that ended a
	// run of failures, and HealthyPathFailing says that path has failed in
	// the run since.
	HealthyAt          time.Time
	HealthyPath        string
	HealthyPathFailing bool
}

// Paused reports whether the unit is paused.
func (s State) Paused() bool { return !s.PausedAt.IsZero() }

// Outcome is what one applied delivery result says about its unit.
type Outcome struct {
	HookID uuid.UUID
	// Path is the hook's path (and query string).
	Path string
	// Failing: no answer (timeout, connection or TLS error), 429 or 5xx.
	// Any other answer shows the server up, whatever it said of the hook.
	Failing bool
	Error   string
	// RetryAfter is the wait a 429 or 503 asked for (0: none).
	RetryAfter time.Duration
	// PauseClass, when set, is the failure class whose failure policy
	// pauses the unit until it is resumed.
	PauseClass string
}

// EventKind is what an event announces.
type EventKind int

// Event kinds.
const (
	// Paused: a pause that deserves an alert began (once per pause).
	Paused EventKind = iota + 1
	// Resumed: a pause ended (by a probe or the API). Release the hooks it
	// held; announce it if the pause was announced.
	Resumed
)

// Event is a change to announce; State is the unit's state that the event
// describes (for Resumed, the pause that ended).
type Event struct {
	Kind  EventKind
	State State
}

// Apply moves s by one outcome applied at now (the database clock).
func (p Policy) Apply(s State, o Outcome, now time.Time) (State, []Event) {
	if o.PauseClass != "" {
		return p.pauseByPolicy(s, o, now)
	}
	probe := s.Paused() && s.Probe != uuid.Nil && o.HookID == s.Probe
	switch {
	case !o.Failing && probe:
		s, events := s.close()
		s.HealthyAt, s.HealthyPath = now, o.Path
		return s, events
	case !o.Failing && s.Paused():
		// Only the probe decides: an answer to a delivery sent before the
		// pause says nothing of the server since.
		return s, nil
	case !o.Failing:
		if s.Failures > 0 {
			s.HealthyAt, s.HealthyPath = now, o.Path
		}
		s.Failures, s.FailingSince, s.LastError, s.HealthyPathFailing = 0, time.Time{}, "", false
		return s, nil
	}
	if s.Failures == 0 {
		s.FailingSince = now
	}
	s.HealthyPathFailing = s.HealthyPathFailing || o.Path == s.HealthyPath
	s.Failures++
	s.LastError = o.Error
	tripped := int(s.Failures) >= p.Failures && now.Sub(s.FailingSince) >= p.MinSpan && !p.pathsFault(s, now)
	switch {
	case s.Paused() && !probe:
		// A delivery sent before the pause: it can only lengthen it.
		if o.RetryAfter > 0 {
			s = s.pauseUntil(now.Add(o.RetryAfter))
		}
		return s, nil
	case tripped || probe && o.RetryAfter == 0:
		cooldown := p.nextCooldown(s)
		s.Cooldown = cooldown
		s = s.pauseAt(now, now.Add(max(cooldown, o.RetryAfter)), CauseFailures,
			fmt.Sprintf("%d failures in a row since %s; last: %s", s.Failures, s.FailingSince.UTC().Format(time.RFC3339), o.Error))
	case o.RetryAfter > 0:
		s = s.pauseAt(now, now.Add(o.RetryAfter), CauseRetryAfter,
			fmt.Sprintf("the receiver answered %s with Retry-After: %s", o.Error, o.RetryAfter))
	default:
		return s, nil
	}
	return p.announce(s)
}

// pathsFault reports whether the run of failures is the fault of the
// paths that fail: a path of the domain answered within PathWindow before
// now, and has not failed since. A server that is down fails that path
// too.
func (p Policy) pathsFault(s State, now time.Time) bool {
	return p.PathWindow > 0 && !s.HealthyAt.IsZero() && !s.HealthyPathFailing && now.Sub(s.HealthyAt) <= p.PathWindow
}

// pauseByPolicy pauses the unit until it is resumed, as the project's
// failure policy asks for a failure of o's class; a pause in progress
// becomes that pause (and keeps its start and its alert).
func (p Policy) pauseByPolicy(s State, o Outcome, now time.Time) (State, []Event) {
	if s.Failures == 0 {
		s.FailingSince = now
	}
	s.Failures++
	s.LastError = o.Error
	s = s.pauseAt(now, now.Add(PolicyPause), CausePolicy,
		fmt.Sprintf("the project's failure policy pauses on %s failures; last: %s", o.PauseClass, o.Error))
	s.PauseClass = o.PauseClass
	return p.announce(s)
}

// Resume ends a pause the API asked to end; an active unit only loses the
// request.
func (p Policy) Resume(s State) (State, []Event) {
	s.ResumeRequested = false
	if !s.Paused() {
		return s, nil
	}
	return s.close()
}

// nextCooldown is the cooldown of an opening: the first of a pause is
// Cooldown, each later one (a failed probe) doubles the last.
func (p Policy) nextCooldown(s State) time.Duration {
	if !s.Paused() || s.Cooldown == 0 {
		return p.Cooldown
	}
	return min(2*s.Cooldown, p.MaxCooldown)
}

// announce raises the pause's alert the first time it deserves one.
func (p Policy) announce(s State) (State, []Event) {
	if s.Alerted || !s.Paused() {
		return s, nil
	}
	if s.Cause == CauseRetryAfter && s.PausedUntil.Sub(s.PausedAt) < p.AlertRetryAfter {
		return s, nil
	}
	s.Alerted = true
	return s, []Event{{Kind: Paused, State: s}}
}

// pauseAt (re)opens the breaker until until; a pause in progress keeps its
// start (one pause, one alert) and loses its probe, which has answered.
func (s State) pauseAt(now, until time.Time, cause, reason string) State {
	if !s.Paused() {
		s.PausedAt = now
	}
	s.PausedUntil = until
	s.HeldUntil = later(s.HeldUntil, until)
	s.Cause, s.Reason = cause, reason
	s.Probe = uuid.Nil
	return s
}

// pauseUntil lengthens a pause in progress to until, if that is later.
func (s State) pauseUntil(until time.Time) State {
	s.PausedUntil = later(s.PausedUntil, until)
	s.HeldUntil = later(s.HeldUntil, until)
	return s
}

// close ends the pause: the unit is active with no failure.
func (s State) close() (State, []Event) {
	ended := s
	return State{}, []Event{{Kind: Resumed, State: ended}}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
