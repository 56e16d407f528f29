// Package bulk acts on many hooks of a project at once: bulk retry of failed
// hooks, bulk replay of completed ones (either with an edit of data, path
// or postAt), bulk cancel of pending ones, and the retry by ids of POST
// /v1/hooks/retryIDs. It validates the requests and runs each action as one
// transaction that never reaches another project's hooks, or as a dry run:
// the same transaction, rolled back.
package bulk

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/gateway/internal/hook"
)

// Bounds of a selection.
const (
	// MaxHookIDs bounds hookIDs, duplicates included.
	MaxHookIDs = 1000
	// MaxLimit bounds the hooks a time-range selection acts on.
	MaxLimit = 1000
	// MaxEndpointKeyBytes is the longest path a hook may have.
	MaxEndpointKeyBytes = 2048
	// maxIDProblems bounds the per-item problems reported for hookIDs, so
	// that a thousand bad ids do not make a thousand-line answer.
	maxIDProblems = 10
)

// Request is the body of POST /v1/hooks/bulk/{retry,replay,cancel}: either
// HookIDs, or the time-range filter (StartTime, EndTime and Limit, with
// EndpointKey, SequenceID and Tags optional); for retry and replay an
// Edit; and DryRun. Pointers tell a field that was left out from one given
// empty.
type Request struct {
	HookIDs     *[]string `json:"hookIDs"`
	StartTime   *string   `json:"startTime"`
	EndTime     *string   `json:"endTime"`
	Limit       *int      `json:"limit"`
	EndpointKey *string   `json:"endpointKey"`
	SequenceID  *string   `json:"sequenceID"`
	Tags        []string  `json:"tags"`
	// Edit gives the hooks a retry moves, or the copies a replay creates,
	// a new data, path or postAt.
	Edit *hook.EditRequest `json:"edit"`
	// DryRun asks what the action would do now, changing nothing.
	DryRun bool `json:"dryRun"`
}

// RetryIDsRequest is the body of POST /v1/hooks/retryIDs.
type RetryIDsRequest struct {
	ProjectID *string   `json:"projectID"`
	HookIDs   *[]string `json:"hookIDs"`
	DryRun    bool      `json:"dryRun"`
}

// Order is a validated Request: the hooks, the edit, and whether to only
// say what the action would do.
type Order struct {
	Selection
	// Edit is nil for none.
	Edit   *hook.Edit
	DryRun bool
}

// Selection is a validated choice of hooks: IDs, or a Range.
type Selection struct {
	// IDs are the hooks named, each once, in the order first given.
	IDs []uuid.UUID
	// Range is the time-range filter; nil when IDs are given.
	Range *Range
}

// Range selects up to Limit hooks whose postAt is in [Start, End), the
// earliest first (by postAt, then id).
type Range struct {
	Start, End time.Time
	Limit      int
	// EndpointKey, when set, keeps the hooks whose path is this one. A key
	// without a query string matches the path whatever its query string
	// (the endpoint is the path); a key with one must match exactly.
	EndpointKey *string
	// SequenceID, when set, keeps the hooks of that sequence.
	SequenceID *uuid.UUID
	// Tags, when set, keeps the hooks that have every one of them.
	Tags []string
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

// ErrForbidden is a retryIDs request for a project other than the API key's.
var ErrForbidden = errors.New("projectID is not the project of this API key")

// problems collects Problems.
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

// Order checks the request for action and returns it validated, or an
// *InvalidError naming every field at fault; an edit's data over
// maxDataBytes is a *hook.TooLargeError, before anything else. The edit is
// checked by the hook package's rules for a created hook's fields, and
// named under "edit".
func (r Request) Order(action Action, maxDataBytes int) (Order, error) {
	o := Order{DryRun: r.DryRun}
	var p problems
	if r.Edit != nil {
		if !action.edits() {
			p.add("edit", "%s takes no edit: only retry and replay do", action)
		} else if e, err := r.Edit.Validate("edit", maxDataBytes); err != nil {
			var bad *hook.InvalidError
			if !errors.As(err, &bad) {
				return Order{}, err
			}
			for _, f := range bad.Problems {
				p.add(f.Field, "%s", f.Message)
			}
		} else {
			o.Edit = &e
		}
	}
	sel, err := r.Validate()
	var bad *InvalidError
	if errors.As(err, &bad) {
		p = append(bad.Problems, p...)
	}
	if err := p.err(); err != nil {
		return Order{}, err
	}
	o.Selection = sel
	return o, nil
}

// Validate checks the request's selection and returns it, or an
// *InvalidError naming every field at fault.
func (r Request) Validate() (Selection, error) {
	var p problems
	filters := r.filterFields()
	switch {
	case r.HookIDs != nil && len(filters) > 0:
		for _, f := range filters {
			p.add(f, "must not be given with hookIDs: select hooks by hookIDs or by the time-range filter, not both")
		}
		return Selection{}, p.err()
	case r.HookIDs != nil:
		ids := validIDs("hookIDs", *r.HookIDs, &p)
		return Selection{IDs: ids}, p.err()
	case len(filters) == 0:
		p.add("hookIDs", "select hooks by hookIDs, or by startTime, endTime and limit")
		return Selection{}, p.err()
	}
	rng := r.validRange(&p)
	if err := p.err(); err != nil {
		return Selection{}, err
	}
	return Selection{Range: &rng}, nil
}

// filterFields names the filter fields the request gives.
func (r Request) filterFields() []string {
	var given []string
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"startTime", r.StartTime != nil}, {"endTime", r.EndTime != nil}, {"limit", r.Limit != nil},
		{"endpointKey", r.EndpointKey != nil}, {"sequenceID", r.SequenceID != nil}, {"tags", r.Tags != nil},
	} {
		if f.set {
			given = append(given, f.name)
		}
	}
	return given
}

func (r Request) validRange(p *problems) Range {
	var rng Range
	start, startOK := validTime("startTime", r.StartTime, p)
	end, endOK := validTime("endTime", r.EndTime, p)
	if startOK && endOK && !start.Before(end) {
		p.add("endTime", "must be after startTime (the range is startTime inclusive to endTime exclusive)")
	}
	rng.Start, rng.End = start, end
	switch {
	case r.Limit == nil:
		p.add("limit", "is required with the time-range filter")
	case *r.Limit < 1 || *r.Limit > MaxLimit:
		p.add("limit", "must be from 1 to %d", MaxLimit)
	default:
		rng.Limit = *r.Limit
	}
	if r.EndpointKey != nil {
		if msg := endpointKeyProblem(*r.EndpointKey); msg != "" {
			p.add("endpointKey", "%s", msg)
		}
		rng.EndpointKey = r.EndpointKey
	}
	if r.SequenceID != nil {
		if id, ok := parseUUID(*r.SequenceID); ok {
			rng.SequenceID = &id
		} else {
			p.add("sequenceID", "must be a UUID")
		}
	}
	rng.Tags = validTags(r.Tags, p)
	return rng
}

// validTags checks the tags filter: 1 to hook.MaxTags tags, each a tag a
// hook can have.
func validTags(tags []string, p *problems) []string {
	if tags == nil {
		return nil
	}
	if len(tags) == 0 || len(tags) > hook.MaxTags {
		p.add("tags", "must have 1 to %d items, got %d", hook.MaxTags, len(tags))
		return nil
	}
	for i, t := range tags {
		if err := hook.ValidateTag(t); err != nil {
			p.add(fmt.Sprintf("tags[%d]", i), "%s", err)
			return nil
		}
	}
	return tags
}

func validTime(field string, s *string, p *problems) (time.Time, bool) {
	if s == nil {
		p.add(field, "is required with the time-range filter")
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		p.add(field, "must be an RFC 3339 date-time with an offset, e.g. 2026-01-02T15:04:05Z")
		return time.Time{}, false
	}
	return t, true
}

// endpointKeyProblem checks an endpoint key: a hook path, which starts with
// "/" and holds no whitespace or control characters.
func endpointKeyProblem(key string) string {
	switch {
	case key == "":
		return "must not be empty"
	case len(key) > MaxEndpointKeyBytes:
		return fmt.Sprintf("must be at most %d bytes", MaxEndpointKeyBytes)
	case !strings.HasPrefix(key, "/"):
		return `must be a hook path, starting with "/"`
	case strings.IndexFunc(key, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return "must not contain whitespace or control characters"
	}
	return ""
}

// validIDs checks a list of hook ids: 1 to MaxHookIDs items, each a UUID.
// It returns them without duplicates, in the order first given.
func validIDs(field string, raw []string, p *problems) []uuid.UUID {
	if len(raw) == 0 || len(raw) > MaxHookIDs {
		p.add(field, "must have 1 to %d items, got %d", MaxHookIDs, len(raw))
		return nil
	}
	ids := make([]uuid.UUID, 0, len(raw))
	seen := make(map[uuid.UUID]bool, len(raw))
	bad := 0
	for i, s := range raw {
		id, ok := parseUUID(s)
		if !ok {
			if bad++; bad <= maxIDProblems {
				p.add(fmt.Sprintf("%s[%d]", field, i), "must be a UUID")
			}
			continue
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	if bad > maxIDProblems {
		p.add(field, "%d more items are not UUIDs", bad-maxIDProblems)
	}
	return ids
}

// parseUUID accepts the canonical 36-character form only (either case):
// uuid.Parse also takes braces, a urn: prefix and bare hex, which no id
// this API hands out looks like.
func parseUUID(s string) (uuid.UUID, bool) {
	if len(s) != 36 {
		return uuid.Nil, false
	}
	id, err := uuid.Parse(s)
	return id, err == nil
}

// Validate checks the request and returns the hooks it names, deduplicated,
// or an *InvalidError. It returns ErrForbidden when the request is valid but
// projectID is not keyProject, the API key's project.
func (r RetryIDsRequest) Validate(keyProject uuid.UUID) ([]uuid.UUID, error) {
	var p problems
	var project uuid.UUID
	switch {
	case r.ProjectID == nil:
		p.add("projectID", "is required")
	default:
		id, ok := parseUUID(*r.ProjectID)
		if !ok {
			p.add("projectID", "must be a project id (a UUID)")
		}
		project = id
	}
	var ids []uuid.UUID
	if r.HookIDs == nil {
		p.add("hookIDs", "is required")
	} else {
		ids = validIDs("hookIDs", *r.HookIDs, &p)
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	if project != keyProject {
		return nil, ErrForbidden
	}
	return ids, nil
}
