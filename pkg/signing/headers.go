package signing

import (
	"net/http"
	"strconv"
)

// DefaultHeaderPrefix is SUNDIAL_HEADER_PREFIX's default: the headers are
// Sundial-Signature, Sundial-Id, ...
const DefaultHeaderPrefix = "Sundial"

// ValidHeaderPrefix accepts a SUNDIAL_HEADER_PREFIX: an HTTP header name
// token that reads as a name (letters, digits and dashes, starting with a
// letter, at most 64 bytes). Every service that sends signed requests names
// its headers <prefix>-Signature, <prefix>-Id, ..., so they check it alike.
func ValidHeaderPrefix(s string) bool {
	if s == "" || len(s) > 64 || !isLetter(s[0]) || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isLetter(s[i]) && !(s[i] >= '0' && s[i] <= '9') && s[i] != '-' {
			return false
		}
	}
	return true
}

func isLetter(b byte) bool {
	return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z')
}

// Headers are the names of the headers every signed request carries (a
// hook's delivery, a custom-webhook notification) under a prefix, made once
// so that a request does not build them again.
type Headers struct {
	ID, Timestamp, Signature, LegacySignature string
}

// NewHeaders names the headers under prefix: <prefix>-Id,
// <prefix>-Timestamp, <prefix>-Signature and X-<prefix>-Signature, each
// in its canonical form (as http.Header.Set would write it), so that
// SetScheme can set them without canonicalising them again.
func NewHeaders(prefix string) Headers {
	return Headers{
		ID:              http.CanonicalHeaderKey(prefix + "-Id"),
		Timestamp:       http.CanonicalHeaderKey(prefix + "-Timestamp"),
		Signature:       http.CanonicalHeaderKey(prefix + "-Signature"),
		LegacySignature: http.CanonicalHeaderKey("X-" + prefix + "-Signature"),
	}
}

// The Standard Webhooks headers' canonical forms, as http.Header.Set
// writes them.
var (
	standardIDKey        = http.CanonicalHeaderKey(StandardID)
	standardTimestampKey = http.CanonicalHeaderKey(StandardTimestamp)
	standardSignatureKey = http.CanonicalHeaderKey(StandardSignature)
)

// Set signs body at timestamp (Unix seconds) and sets the headers on h: the
// request's id, the timestamp, the signature by each key (Header) and the
// legacy signature by the first, the active key (Legacy). keys must not be
// empty. It is SetScheme with SchemeSundial.
func (n Headers) Set(h http.Header, id string, keys []string, timestamp int64, body []byte) {
	n.SetScheme(h, SchemeSundial, id, keys, timestamp, body)
}

// SetScheme signs body at timestamp (Unix seconds) with each key and sets
// the headers of scheme on h: Sundial's (as Set) unless the scheme is
// SchemeStandard, and the Standard Webhooks headers (webhook-id = id,
// webhook-timestamp, webhook-signature by each key, StandardHeader) when
// it is SchemeStandard or SchemeBoth. keys must not be empty.
func (n Headers) SetScheme(h http.Header, scheme SignatureScheme, id string, keys []string, timestamp int64, body []byte) {
	ts := strconv.FormatInt(timestamp, 10)
	// The values share one array: this runs for every delivery, and a
	// slice per header was an allocation each.
	values := make([]string, 0, 7)
	set := func(name, v string) {
		values = append(values, v)
		h[name] = values[len(values)-1 : len(values) : len(values)]
	}
	if scheme.sundial() {
		set(n.ID, id)
		set(n.Timestamp, ts)
		set(n.Signature, Header(keys, timestamp, body))
		set(n.LegacySignature, Legacy(keys[0], body))
	}
	if scheme.standard() {
		set(standardIDKey, id)
		set(standardTimestampKey, ts)
		set(standardSignatureKey, StandardHeader(keys, id, timestamp, body))
	}
}
