package signing

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Standard Webhooks (https://www.standardwebhooks.com, specification 1.0.0,
// github.com/standard-webhooks/standard-webhooks spec/standard-webhooks.md):
// webhook-id, webhook-timestamp and webhook-signature, the last one or more
// space-separated "v1,<base64 HMAC-SHA256 of id.timestamp.body>", keyed with
// the secret that receivers are given as "whsec_" + base64 of its bytes.
//
// Sundial's signing keys are strings, "sdsig_" + 32 random bytes in
// base64url, and Sundial's own scheme keys its HMAC with the string's
// bytes. The Standard scheme keys its HMAC with the 32 random bytes
// themselves (StandardKey), so that the whsec_ secret is the usual 32-byte
// one; a key of another form (written into the database by hand, or a test
// key) is used with its string's bytes. Either way the bytes whose base64
// follows "whsec_" are exactly the HMAC key.

// SignatureScheme is a project's choice of delivery signature headers.
type SignatureScheme string

// The signature schemes. The database holds the same words
// (projects.signature_scheme).
const (
	// SchemeSundial sends Sundial-Id, Sundial-Timestamp, Sundial-Signature
	// and the legacy X-Sundial-Signature (the default).
	SchemeSundial SignatureScheme = "sundial"
	// SchemeStandard sends webhook-id, webhook-timestamp and
	// webhook-signature instead.
	SchemeStandard SignatureScheme = "standard"
	// SchemeBoth sends both sets.
	SchemeBoth SignatureScheme = "both"
)

// SignatureSchemes lists the schemes, the default first.
var SignatureSchemes = []SignatureScheme{SchemeSundial, SchemeStandard, SchemeBoth}

// ParseSignatureScheme returns the scheme named s, or an error naming the
// accepted words.
func ParseSignatureScheme(s string) (SignatureScheme, error) {
	for _, v := range SignatureSchemes {
		if string(v) == s {
			return v, nil
		}
	}
	return "", fmt.Errorf("must be one of %q, %q or %q", SchemeSundial, SchemeStandard, SchemeBoth)
}

// sundial reports whether the scheme sends Sundial's signature headers;
// an unknown or empty scheme does (the default).
func (s SignatureScheme) sundial() bool { return s != SchemeStandard }

// standard reports whether the scheme sends the Standard Webhooks headers.
func (s SignatureScheme) standard() bool { return s == SchemeStandard || s == SchemeBoth }

// The Standard Webhooks header names, fixed by the specification (no
// SUNDIAL_HEADER_PREFIX).
const (
	StandardID        = "webhook-id"
	StandardTimestamp = "webhook-timestamp"
	StandardSignature = "webhook-signature"
	// StandardSecretPrefix marks a symmetric Standard Webhooks secret.
	StandardSecretPrefix = "whsec_"
	// keyPrefix is the prefix of the signing keys the gateway makes
	// (services/gateway/internal/signingkey).
	keyPrefix = "sdsig_"
	// minStandardKey is the specification's smallest symmetric secret.
	minStandardKey = 24
)

// StandardKey returns the HMAC key of the Standard scheme for a signing
// key: the random bytes of an "sdsig_" key (its base64url part decoded),
// or the key string's bytes for a key of another form.
func StandardKey(key string) []byte {
	return standardKey(nil, key)
}

// standardKey appends StandardKey(key) to dst.
func standardKey(dst []byte, key string) []byte {
	if rest, ok := strings.CutPrefix(key, keyPrefix); ok {
		if raw, err := base64.RawURLEncoding.AppendDecode(dst, []byte(rest)); err == nil && len(raw)-len(dst) >= minStandardKey {
			return raw
		}
	}
	return append(dst, key...)
}

// StandardSecret returns the signing key as Standard Webhooks receivers
// take it: "whsec_" + standard base64 of StandardKey.
func StandardSecret(key string) string {
	return StandardSecretPrefix + base64.StdEncoding.EncodeToString(StandardKey(key))
}

// StandardEntry returns one "v1,<base64>" signature of body with id at
// timestamp (Unix seconds) under key (a Sundial signing key).
func StandardEntry(key, id string, timestamp int64, body []byte) string {
	return string(appendStandardEntry(make([]byte, 0, standardEntryLen), key, id, timestamp, body))
}

// standardEntryLen is the length of a StandardEntry: "v1," and the base64
// of a SHA-256 sum.
var standardEntryLen = len(Scheme) + 1 + base64.StdEncoding.EncodedLen(sha256.Size)

func appendStandardEntry(dst []byte, key, id string, timestamp int64, body []byte) []byte {
	var raw [64]byte // an sdsig_ key's random bytes; the key decodes into it
	m := newMAC(standardKey(raw[:0], key))
	clear(raw[:])
	writeCopied(m, id)
	writeCopied(m, ".")
	m.writeTimestamp(timestamp, '.')
	m.write(body)
	dst = append(dst, Scheme+","...)
	dst = base64.StdEncoding.AppendEncode(dst, m.finish())
	m.done()
	return dst
}

// StandardHeader returns the webhook-signature value: one entry per key,
// active key first, separated by a space.
func StandardHeader(keys []string, id string, timestamp int64, body []byte) string {
	b := make([]byte, 0, len(keys)*(standardEntryLen+1))
	for i, k := range keys {
		if i > 0 {
			b = append(b, ' ')
		}
		b = appendStandardEntry(b, k, id, timestamp, body)
	}
	return string(b)
}

// VerifyStandard reports whether h carries a valid Standard Webhooks
// signature of body under key (a Sundial signing key): any "v1" entry of
// webhook-signature over webhook-id and webhook-timestamp, the timestamp
// within tolerance of now. It is what the demo receiver of make run does
// for a project whose scheme is standard.
func VerifyStandard(key string, h http.Header, body []byte, now time.Time, tolerance time.Duration) bool {
	id, ts := h.Get(StandardID), h.Get(StandardTimestamp)
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || id == "" {
		return false
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return false
	}
	want := []byte(StandardEntry(key, id, sec, body))
	for _, e := range strings.Fields(h.Get(StandardSignature)) {
		if hmac.Equal([]byte(e), want) {
			return true
		}
	}
	return false
}
