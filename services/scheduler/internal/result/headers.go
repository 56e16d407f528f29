package result

import (
	"encoding/json"
	"slices"
	"unicode/utf8"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
)

// recordedHeaders is one side of an attempt's headers as hook_attempts
// stores it (migration 00030): a JSON object of header name to the list of
// its values, empty when none was recorded, and the header lines the
// dispatcher's bounds left out.
type recordedHeaders struct {
	object  string
	omitted int32
}

// recordHeaders is h as it is stored. The dispatcher has bounded and
// redacted it (docs/choices.md, "Attempt headers"); here names and values
// are only made storable (cleanText: a result the database refuses would
// be redelivered for ever), and a name that comes twice is kept once with
// all its values. The object is written by hand, not by encoding/json
// (reflection over a map, its keys sorted), since every attempt of every
// result passes here: the column is jsonb, so only the meaning of the text
// counts, not its spacing or key order.
func recordHeaders(h *eventv1.Headers) recordedHeaders {
	if h == nil {
		return recordedHeaders{}
	}
	fields := h.GetFields()
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = cleanText(f.GetName())
	}
	b := make([]byte, 0, 64*len(fields)+2)
	b = append(b, '{')
	for i, name := range names {
		if slices.Index(names[:i], name) >= 0 {
			continue // written with the first field of its name
		}
		b = appendField(b, name, fields[i:], names[i:])
	}
	b = append(b, '}')
	return recordedHeaders{object: string(b), omitted: max(h.GetOmitted(), 0)}
}

// appendField appends to the object b the member of name: the values of
// every field of fields whose cleaned name (names) is name. A name without
// values is left out.
func appendField(b []byte, name string, fields []*eventv1.HeaderField, names []string) []byte {
	start := len(b)
	if start > 1 {
		b = append(b, ',')
	}
	b = appendJSONString(b, name)
	b = append(b, ':', '[')
	values := 0
	for j, f := range fields {
		if names[j] != name {
			continue
		}
		for _, v := range f.GetValues() {
			if values > 0 {
				b = append(b, ',')
			}
			values++
			b = appendJSONString(b, cleanText(v))
		}
	}
	if values == 0 {
		return b[:start]
	}
	return append(b, ']')
}

// text is the object as InsertAttempts takes it: empty for none.
func (h recordedHeaders) text() string { return h.object }

// raw is the object as a jsonb parameter: nil (NULL) for none.
func (h recordedHeaders) raw() json.RawMessage {
	if h.object == "" {
		return nil
	}
	return json.RawMessage(h.object)
}

// appendJSONString appends s, valid UTF-8 without NUL bytes (cleanText),
// as a JSON string: quotes, backslashes and control characters escaped,
// the rest as it is.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf || (c >= 0x20 && c != '"' && c != '\\') {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
