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
// <prefix>-Timestamp, <prefix>-Signature and X-<prefix>-Signature.
func NewHeaders(prefix string) Headers {
	return Headers{
		ID:              prefix + "-Id",
		Timestamp:       prefix + "-Timestamp",
		Signature:       prefix + "-Signature",
		LegacySignature: "X-" + prefix + "-Signature",
	}
}

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
	if scheme.sundial() {
		h.Set(n.ID, id)
		h.Set(n.Timestamp, ts)
		h.Set(n.Signature, Header(keys, timestamp, body))
		h.Set(n.LegacySignature, Legacy(keys[0], body))
	}
	if scheme.standard() {
		h.Set(StandardID, id)
		h.Set(StandardTimestamp, ts)
		h.Set(StandardSignature, StandardHeader(keys, id, timestamp, body))
	}
}
