package hook

import (
	"encoding/json"
	"time"
)

// EditRequest is the edit of a bulk retry or replay (the edit object of
// POST /v1/hooks/bulk/{retry,replay}): a new data, path or postAt for each
// hook the action moves or copies, any subset of them. It is checked by
// the rules of a created hook's fields, so that an edited hook is one a
// client could have scheduled.
type EditRequest struct {
	Data   json.RawMessage `json:"data"`
	Path   *string         `json:"path"`
	PostAt *string         `json:"postAt"`
}

// Edit is a validated EditRequest; a nil field keeps the hook's own.
type Edit struct {
	// Data is compacted, as a created hook's.
	Data   json.RawMessage
	Path   *string
	PostAt *time.Time
}

// Validate checks the edit as a created hook's data, path and postAt are
// checked, and names each field at fault under prefix (prefix + ".data",
// ...; prefix alone for an edit of nothing). It reports data over maxDataBytes as a *TooLargeError
// before anything else, and all other problems at once as an
// *InvalidError.
func (r EditRequest) Validate(prefix string, maxDataBytes int) (Edit, error) {
	var (
		p problems
		e Edit
	)
	if r.Data == nil && r.Path == nil && r.PostAt == nil {
		p.add("", "give at least one of data, path and postAt to edit")
	}
	if r.Data != nil {
		data, err := validData(r.Data, maxDataBytes, &p)
		if err != nil {
			return Edit{}, err
		}
		e.Data = data
	}
	if r.Path != nil {
		if path := validPath(r.Path, &p); path != "" {
			e.Path = &path
		}
	}
	if r.PostAt != nil {
		if t, ok := parsePostAt(*r.PostAt, &p); ok {
			e.PostAt = &t
		}
	}
	if len(p) > 0 {
		for i := range p {
			if p[i].Field == "" {
				p[i].Field = prefix
			} else {
				p[i].Field = prefix + "." + p[i].Field
			}
		}
		return Edit{}, &InvalidError{Problems: p}
	}
	return e, nil
}
