package delivery

import (
	"bytes"
	"encoding/json"
	"time"
)

// Body returns the delivery's JSON body:
// {"id","path","postAt","postedAt","data","createdAt","updatedAt"}.
// data is embedded exactly as stored (encoding/json would re-compact it and
// escape HTML characters), so the receiver gets the bytes that were scheduled.
func Body(r Request, postedAt time.Time) []byte {
	var b bytes.Buffer
	b.Grow(len(r.Data) + 256)
	b.WriteString(`{"id":`)
	writeString(&b, r.HookID)
	b.WriteString(`,"path":`)
	writeString(&b, r.Path)
	b.WriteString(`,"postAt":`)
	writeTime(&b, r.PostAt)
	b.WriteString(`,"postedAt":`)
	writeTime(&b, postedAt)
	b.WriteString(`,"data":`)
	b.Write(r.Data)
	b.WriteString(`,"createdAt":`)
	writeTime(&b, r.CreatedAt)
	b.WriteString(`,"updatedAt":`)
	writeTime(&b, r.UpdatedAt)
	b.WriteByte('}')
	return b.Bytes()
}

// writeTime writes t as a JSON string: RFC 3339 in UTC, with as many
// fractional digits as it needs (never a character JSON escapes).
func writeTime(b *bytes.Buffer, t time.Time) {
	b.WriteByte('"')
	b.Write(t.UTC().AppendFormat(b.AvailableBuffer(), time.RFC3339Nano))
	b.WriteByte('"')
}

// writeString writes s as a JSON string, as encoding/json does without
// HTML escaping (a path's "&" stays readable). Ids, timestamps and most
// paths need no escape and are copied between quotes: an encoder for each
// of a body's six strings was a visible share of the dispatcher's CPU in a
// burst.
func writeString(b *bytes.Buffer, s string) {
	if plainJSON(s) {
		b.WriteByte('"')
		b.WriteString(s)
		b.WriteByte('"')
		return
	}
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)       // a string always encodes
	b.Truncate(b.Len() - 1) // Encode ends with a newline
}

// plainJSON reports whether s is printable ASCII without a quote or a
// backslash: the JSON string is s itself between quotes.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
