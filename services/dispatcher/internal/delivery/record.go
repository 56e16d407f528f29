package delivery

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sundial-run/sundial/pkg/asyncurl"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
)

// An attempt records the headers of its request, as prepared and sent, and
// those of the answer, as received (docs/choices.md, "Attempt headers"):
// the one place of their bounds and redactions. A hostile receiver's
// headers are bounded before they reach a result, the scheduler or the
// database.

// Bounds of one side's recorded headers. A line is one value of a name. A
// value longer than MaxRecordedValueBytes keeps that many bytes (a
// character cut by the bound dropped) and ends in RecordedCut; lines past
// MaxRecordedLines, or that would take the side's names and values past
// MaxRecordedBytes, are left out and counted (Headers.Omitted). Names are
// taken in order, so which lines a bound leaves out does not depend on
// how the receiver ordered them.
const (
	MaxRecordedLines      = 50
	MaxRecordedValueBytes = 1024
	MaxRecordedBytes      = 8 << 10
)

// RecordedCut ends a value cut at MaxRecordedValueBytes.
const RecordedCut = "…"

// Redacted stands for a credential's value in recorded headers.
const Redacted = "[redacted]"

// credentialNames are the names whose values are credentials wherever they
// appear: the request's Authorization is the project's custom value
// (write-only in the API); an answer has no business sending any of them,
// and a receiver that echoes its request would echo that value.
var credentialNames = map[string]bool{
	"Authorization":       true,
	"Proxy-Authorization": true,
	"Cookie":              true,
}

// field is one header name with its values, as a side's record is built.
type field struct {
	name   string
	values []string
}

// Recorded is the request's headers as its attempt records them: every
// header of the prepared request, with host (not empty) adding the Host
// and Content-Length lines the HTTPS request also carries (a listener's
// delivery has none). The Authorization value and the ack and nack URLs'
// token are redacted: the ack and nack URLs keep their shape
// (asyncurl.Redacted).
func (p Prepared) Recorded(host string) *eventv1.Headers {
	var buf [16]field
	fields := fieldsOf(buf[:0], p.Header)
	if host != "" {
		fields = append(fields, field{"Host", []string{host}},
			field{"Content-Length", []string{strconv.Itoa(len(p.Body))}})
	}
	return record(fields, func(name, v string) string {
		switch {
		case credentialNames[http.CanonicalHeaderKey(name)]:
			return Redacted
		case v == p.AckURL || v == p.NackURL:
			redacted, _ := asyncurl.Redacted(v)
			return redacted
		}
		return v
	})
}

// recordAnswer is an answer's headers as its attempt records them. Go has
// put their names in canonical form, and moved Transfer-Encoding out of
// the map; it is put back. Credentials are redacted: the values of
// credentialNames, a Set-Cookie's value (its cookie's name and attributes
// kept), and any value holding one of the request's secrets (its
// Authorization value, its ack and nack URLs' token).
func (p Prepared) recordAnswer(resp *http.Response) *eventv1.Headers {
	var buf [32]field
	fields := fieldsOf(buf[:0], resp.Header)
	if len(resp.TransferEncoding) > 0 && resp.Header["Transfer-Encoding"] == nil {
		fields = append(fields, field{"Transfer-Encoding", resp.TransferEncoding})
	}
	secrets := p.secrets()
	return record(fields, func(name, v string) string {
		switch {
		case credentialNames[name]:
			return Redacted
		case name == "Set-Cookie":
			return redactCookie(v)
		}
		for _, s := range secrets {
			if strings.Contains(v, s) {
				return Redacted
			}
		}
		return v
	})
}

// secrets are the request's values that must not be recorded in an
// answer's headers.
func (p Prepared) secrets() []string {
	var s []string
	if auth := p.Header.Get("Authorization"); auth != "" {
		s = append(s, auth)
	}
	if _, token := asyncurl.Redacted(p.AckURL); token != "" {
		s = append(s, token)
	}
	return s
}

// redactCookie is a Set-Cookie value with the cookie's value redacted:
// "sid=[redacted]; Path=/; HttpOnly".
func redactCookie(v string) string {
	pair, attrs, _ := strings.Cut(v, ";")
	name, _, ok := strings.Cut(pair, "=")
	if !ok {
		return Redacted
	}
	if attrs != "" {
		attrs = ";" + attrs
	}
	return strings.TrimSpace(name) + "=" + Redacted + attrs
}

func fieldsOf(dst []field, h http.Header) []field {
	for name, values := range h {
		dst = append(dst, field{name, values})
	}
	return dst
}

// record bounds fields into a side's record (the constants above), each
// value passed through redact first and made valid UTF-8 without NUL
// bytes, which PostgreSQL cannot store. A name's values that redact and
// the bounds leave alone are not copied: the record shares them.
func record(fields []field, redact func(name, value string) string) *eventv1.Headers {
	slices.SortFunc(fields, func(a, b field) int { return cmp.Compare(a.name, b.name) })
	out := &eventv1.Headers{}
	// One array for the record's fields (a proto message is not copied).
	kept := make([]eventv1.HeaderField, len(fields))
	n, lines, size := 0, 0, 0
	for _, f := range fields {
		// values is f.values[:same] while same is not -1.
		var values []string
		same := 0
		for _, v := range f.values {
			w := boundValue(redact(f.name, v))
			fits := lines < MaxRecordedLines && size+len(f.name)+len(w) <= MaxRecordedBytes
			if fits && same >= 0 && w == v {
				same++
				lines, size = lines+1, size+len(f.name)+len(w)
				continue
			}
			if same >= 0 {
				values, same = append(make([]string, 0, len(f.values)), f.values[:same]...), -1
			}
			if !fits {
				out.Omitted++
				continue
			}
			lines, size = lines+1, size+len(f.name)+len(w)
			values = append(values, w)
		}
		if same >= 0 {
			values = f.values[:same:same]
		}
		if len(values) > 0 {
			kept[n].Name, kept[n].Values = f.name, values
			n++
		}
	}
	out.Fields = make([]*eventv1.HeaderField, n)
	for i := range n {
		out.Fields[i] = &kept[i]
	}
	return out
}

// boundValue is v cut at MaxRecordedValueBytes, valid UTF-8 without NUL
// bytes.
func boundValue(v string) string {
	if len(v) <= MaxRecordedValueBytes && clean(v) {
		return v
	}
	cut := len(v) > MaxRecordedValueBytes
	if cut {
		v = v[:MaxRecordedValueBytes]
	}
	w := Excerpt([]byte(v), cut)
	if cut {
		w += RecordedCut
	}
	return w
}

// clean reports whether v is stored as it is: valid UTF-8 without NUL.
func clean(v string) bool {
	return utf8.ValidString(v) && strings.IndexByte(v, 0) < 0
}
