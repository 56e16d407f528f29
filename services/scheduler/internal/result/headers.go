package result

import (
	"encoding/json"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
)

// recordedHeaders is one side of an attempt's headers as hook_attempts
// stores it (migration 00030): a JSON object of header name to the list of
// its values, nil when none was recorded, and the header lines the
// dispatcher's bounds left out.
type recordedHeaders struct {
	object  json.RawMessage
	omitted int32
}

// recordHeaders is h as it is stored. The dispatcher has bounded and
// redacted it (docs/choices.md, "Attempt headers"); here names and values
// are only made storable (cleanText: a result the database refuses would
// be redelivered for ever), and a name that comes twice is kept once with
// all its values.
func recordHeaders(h *eventv1.Headers) recordedHeaders {
	if h == nil {
		return recordedHeaders{}
	}
	m := make(map[string][]string, len(h.GetFields()))
	for _, f := range h.GetFields() {
		name := cleanText(f.GetName())
		for _, v := range f.GetValues() {
			m[name] = append(m[name], cleanText(v))
		}
	}
	// A map of strings to lists of strings always encodes.
	object, _ := json.Marshal(m)
	return recordedHeaders{object: object, omitted: max(h.GetOmitted(), 0)}
}

// text is the object as InsertAttempts takes it: empty for none.
func (h recordedHeaders) text() string { return string(h.object) }
