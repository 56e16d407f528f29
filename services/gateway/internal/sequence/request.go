// Package sequence is the sequence resource of the API: the definition a
// client sends (a named schedule and its steps) and its validation, the
// planning of a sequence's next slot, and the store operations behind
// /v1/sequences. The gateway writes definitions and trigger requests only;
// runs, their steps and their hooks are the scheduler's
// (docs/sequences.md, "Who writes what").
package sequence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	"github.com/sundial-run/sundial/pkg/calendar"
	"github.com/sundial-run/sundial/pkg/retry"
	"github.com/sundial-run/sundial/services/gateway/internal/hook"
)

// Bounds of a definition (decisions: Sequences).
const (
	MaxSteps = 10
	// MaxStepDataBytes bounds a step's data, compacted.
	MaxStepDataBytes = 64 << 10
)

// The catch-up and overlap policies, and their defaults.
const (
	CatchUpLatest = "latest"
	CatchUpAll    = "all"
	CatchUpNone   = "none"
	OverlapAllow  = "allow"
	OverlapSkip   = "skip"
)

// The statuses of a sequence.
const (
	StatusActive = "active"
	StatusPaused = "paused"
	StatusEnded  = "ended"
)

// namePattern is a sequence's and a step's name.
var namePattern = regexp.MustCompile(`^[a-z0-9_-]{1,100}$`)

// Request is the body of POST /v1/sequences and PUT /v1/sequences/{id}.
// Pointers tell a field that was left out from one given empty.
type Request struct {
	Name     *string        `json:"name"`
	Schedule *calendar.Spec `json:"schedule"`
	Steps    *[]StepRequest `json:"steps"`
	StartAt  *string        `json:"startAt"`
	EndAt    *string        `json:"endAt"`
	CatchUp  *string        `json:"catchUp"`
	Overlap  *string        `json:"overlap"`
}

// StepRequest is one step as a client sends it.
type StepRequest struct {
	Name          *string         `json:"name"`
	Path          *string         `json:"path"`
	Data          json.RawMessage `json:"data"`
	DependsOn     []string        `json:"dependsOn"`
	RetryOverride *retry.Request  `json:"retryOverride"`
}

// Definition is a validated Request, ready to be planned and stored.
type Definition struct {
	Name     string
	Schedule calendar.Schedule
	// StartAt is nil when the request left it out: the sequence's creation
	// time.
	StartAt *time.Time
	EndAt   *time.Time
	CatchUp string
	Overlap string
	Steps   []Step
}

// Step is a validated step, as sequences.steps stores it and the scheduler
// reads it: data compacted, retryOverride with its defaults written out
// (as hooks.retry_override holds it).
type Step struct {
	Name          string          `json:"name"`
	Path          string          `json:"path"`
	Data          json.RawMessage `json:"data"`
	DependsOn     []string        `json:"dependsOn,omitempty"`
	RetryOverride json.RawMessage `json:"retryOverride,omitempty"`
}

// Problem is one field at fault.
type Problem struct {
	Field   string
	Message string
}

// InvalidError lists every field at fault in a request.
type InvalidError struct {
	Problems []Problem
}

func (e *InvalidError) Error() string {
	if len(e.Problems) == 1 {
		return e.Problems[0].Field + ": " + e.Problems[0].Message
	}
	return fmt.Sprintf("%d fields are invalid", len(e.Problems))
}

// TooLargeError is a step's data over MaxStepDataBytes.
type TooLargeError struct {
	Field     string
	Size, Max int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: is %d bytes compacted, more than the maximum of %d", e.Field, e.Size, e.Max)
}

// problems collects what validation finds.
type problems []Problem

func (p *problems) add(field, format string, args ...any) {
	*p = append(*p, Problem{Field: field, Message: fmt.Sprintf(format, args...)})
}

func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return &InvalidError{Problems: p}
}

// Validate checks the request and returns its definition. A step's data
// over the limit is a *TooLargeError, reported before anything else; all
// other problems come at once, as an *InvalidError.
func (r Request) Validate() (Definition, error) {
	var p problems
	d := Definition{}
	steps, err := validSteps(r.Steps, &p)
	if err != nil {
		return Definition{}, err
	}
	d.Steps = steps
	d.Name = validName("name", r.Name, &p)
	d.Schedule = validSchedule(r.Schedule, &p)
	d.StartAt, d.EndAt = validBounds(r.StartAt, r.EndAt, &p)
	d.CatchUp = oneOf("catchUp", r.CatchUp, CatchUpLatest, &p, CatchUpLatest, CatchUpAll, CatchUpNone)
	d.Overlap = oneOf("overlap", r.Overlap, OverlapAllow, &p, OverlapAllow, OverlapSkip)
	if err := p.err(); err != nil {
		return Definition{}, err
	}
	return d, nil
}

func validName(field string, name *string, p *problems) string {
	switch {
	case name == nil:
		p.add(field, "is required")
	case !namePattern.MatchString(*name):
		p.add(field, "must be 1 to 100 of a-z, 0-9, _ and -")
	default:
		return *name
	}
	return ""
}

// validSchedule checks a schedule with pkg/calendar, whose problems name
// their fields from "schedule".
func validSchedule(spec *calendar.Spec, p *problems) calendar.Schedule {
	if spec == nil {
		p.add("schedule", "is required")
		return calendar.Schedule{}
	}
	s, err := calendar.New(*spec)
	if err != nil {
		addCalendarProblems(err, p)
	}
	return s
}

func addCalendarProblems(err error, p *problems) {
	bad, ok := err.(*calendar.InvalidError)
	if !ok {
		p.add("schedule", "%s", err.Error())
		return
	}
	for _, b := range bad.Problems {
		p.add(b.Field, "%s", b.Message)
	}
}

// validBounds parses startAt and endAt; endAt may not be before startAt
// (both inclusive: a slot at endAt runs).
func validBounds(startAt, endAt *string, p *problems) (*time.Time, *time.Time) {
	start := validInstant("startAt", startAt, p)
	end := validInstant("endAt", endAt, p)
	if start != nil && end != nil && end.Before(*start) {
		p.add("endAt", "must not be before startAt")
	}
	return start, end
}

func validInstant(field string, s *string, p *problems) *time.Time {
	if s == nil {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		p.add(field, "must be an RFC 3339 date-time with an offset, e.g. 2030-01-02T15:04:05Z")
		return nil
	}
	t = t.UTC()
	if !calendar.InRange(t) {
		p.add(field, calendar.RangeProblem)
		return nil
	}
	return &t
}

func oneOf(field string, v *string, def string, p *problems, allowed ...string) string {
	if v == nil {
		return def
	}
	for _, a := range allowed {
		if *v == a {
			return a
		}
	}
	p.add(field, "must be one of %q", allowed)
	return ""
}

// validSteps checks each step, then the dependencies between them.
func validSteps(reqs *[]StepRequest, p *problems) ([]Step, error) {
	switch {
	case reqs == nil:
		p.add("steps", "is required")
		return nil, nil
	case len(*reqs) == 0 || len(*reqs) > MaxSteps:
		p.add("steps", "must have 1 to %d steps", MaxSteps)
		return nil, nil
	}
	steps := make([]Step, len(*reqs))
	index := map[string]int{}
	for i, r := range *reqs {
		field := fmt.Sprintf("steps[%d]", i)
		data, err := validData(field+".data", r.Data, p)
		if err != nil {
			return nil, err
		}
		s := Step{Name: validName(field+".name", r.Name, p), Data: data, Path: validPath(field+".path", r.Path, p)}
		if j, taken := index[s.Name]; taken && s.Name != "" {
			p.add(field+".name", "%q is the name of steps[%d]: step names are unique", s.Name, j)
		} else if s.Name != "" {
			index[s.Name] = i
		}
		raw, bad := r.RetryOverride.ValidateOverride()
		for _, b := range bad {
			p.add(field+"."+b.Field, "%s", b.Message)
		}
		s.RetryOverride = raw
		steps[i] = s
	}
	if checkDependsOn(*reqs, index, steps, p) {
		checkCycles(steps, index, p)
	}
	return steps, nil
}

func validPath(field string, path *string, p *problems) string {
	if path == nil {
		p.add(field, "is required")
		return ""
	}
	if msg := hook.PathProblem(*path); msg != "" {
		p.add(field, "%s", msg)
		return ""
	}
	return *path
}

// validData requires a JSON object and returns it compacted: the limit
// applies to the payload, not to the client's indentation.
func validData(field string, raw json.RawMessage, p *problems) (json.RawMessage, error) {
	if len(raw) == 0 {
		p.add(field, "is required")
		return nil, nil
	}
	if raw[0] != '{' {
		p.add(field, "must be a JSON object")
		return nil, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		p.add(field, "malformed JSON: %s", err)
		return nil, nil
	}
	if buf.Len() > MaxStepDataBytes {
		return nil, &TooLargeError{Field: field, Size: buf.Len(), Max: MaxStepDataBytes}
	}
	return buf.Bytes(), nil
}
