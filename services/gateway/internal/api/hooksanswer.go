package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/sundial-run/sundial/services/gateway/internal/api/gen"
	"github.com/sundial-run/sundial/services/gateway/internal/hook"
)

// hooksCreated is POST /v1/hooks/batch's answer 201, a gen.HooksResponse
// written byte for byte as the generated writer's encoding/json would
// write it, but a hook just created is appended by hand (appendNewHook):
// encoding/json's reflection, its compaction of each hook's data and its
// time formatting were a large share of the gateway's processor time in a
// full batch (docs/benchmarks.md, "Batch intake"). Any hook beyond
// that shape, or any string that would need escaping, goes through
// encoding/json itself. The response headers are the request's
// (responseHeaders, applied before the status line).
type hooksCreated struct {
	hooks []hook.Hook
}

func (r hooksCreated) VisitCreateHooksResponse(w http.ResponseWriter) error {
	b, err := appendHooksResponse(make([]byte, 0, 512*len(r.hooks)+16), r.hooks)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, err = w.Write(b)
	return err
}

// appendHooksResponse appends what json.NewEncoder(w).Encode of a
// gen.HooksResponse of hooks writes, newline included.
func appendHooksResponse(b []byte, hooks []hook.Hook) ([]byte, error) {
	b = append(b, `{"data":[`...)
	for i, h := range hooks {
		if i > 0 {
			b = append(b, ',')
		}
		g := toHook(h)
		if fast, ok := appendNewHook(b, g); ok {
			b = fast
			continue
		}
		raw, err := json.Marshal(g)
		if err != nil {
			return nil, err
		}
		b = append(b, raw...)
	}
	return append(b, "]}\n"...), nil
}

// appendNewHook appends h as encoding/json would, fields in gen.Hook's
// order, when it has the shape of a hook just created without any of the
// optional fields (no key, tags, ordering key, local time or retry
// override, no attempt) and nothing in it needs escaping; it reports
// false, with b unchanged, otherwise.
func appendNewHook(b []byte, h gen.Hook) ([]byte, bool) {
	if h.FailureError != nil || h.FailureClass != nil || h.RetryOverride != nil || h.SequenceData != nil || h.TryAt != nil ||
		h.WasNotified != nil || h.PostDurationSeconds != 0 || h.Key != nil || h.Tags != nil || h.OrderingKey != nil ||
		h.PostAtLocal != nil || h.Timezone != nil || h.Tzdata != nil ||
		!plainTime(h.CreatedAt) || !plainTime(h.PostAt) || !plainTime(h.UpdatedAt) ||
		!plainString(h.Domain) || !plainString(h.Path) || !plainString(string(h.Status)) {
		return b, false
	}
	start := len(b)
	b = append(b, `{"attempts":`...)
	b = strconv.AppendInt(b, int64(h.Attempts), 10)
	b = appendTime(append(b, `,"createdAt":`...), h.CreatedAt)
	b = append(b, `,"data":`...)
	b, ok := appendCompact(b, h.Data)
	if !ok {
		return b[:start], false
	}
	b = appendString(append(b, `,"domain":`...), h.Domain)
	b = append(b, `,"id":"`...)
	b = append(b, h.Id.String()...)
	b = appendString(append(b, `","path":`...), h.Path)
	b = appendTime(append(b, `,"postAt":`...), h.PostAt)
	b = append(b, `,"postDurationSeconds":0`...)
	b = appendString(append(b, `,"status":`...), string(h.Status))
	b = appendTime(append(b, `,"updatedAt":`...), h.UpdatedAt)
	return append(b, '}'), true
}

// plainTime reports whether t is one time.Time.MarshalJSON writes as
// RFC 3339 with nanoseconds (it refuses years outside 0-9999).
func plainTime(t time.Time) bool {
	return t.Year() >= 0 && t.Year() <= 9999
}

func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// plainString reports whether encoding/json writes s as it is, quoted:
// printable ASCII without a quote, a backslash or an HTML special
// character (<, > and &, which it escapes).
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendCompact appends the JSON data without the spaces PostgreSQL's jsonb
// text puts after colons and commas, as encoding/json compacts a
// json.RawMessage; it reports false for data it would also escape
// (non-ASCII, HTML special characters) or any byte outside plain JSON.
func appendCompact(b []byte, data []byte) ([]byte, bool) {
	inString, escaped := false, false
	for _, c := range data {
		switch {
		case c < 0x20 && c != ' ' && c != '\t' && c != '\n' && c != '\r', c > 0x7e, c == '<', c == '>', c == '&':
			return b, false
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		case c == '"':
			inString = true
		}
		b = append(b, c)
	}
	return b, !inString
}
