package sundial

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultTolerance is how far a delivery's timestamp may be from now.
const DefaultTolerance = 5 * time.Minute

// DefaultMaxBodyBytes bounds the body ParseDelivery and NewHandler read: a
// hook's data is at most 1 MiB, and the delivery wraps it in a few fields.
const DefaultMaxBodyBytes = 2 << 20

// The Standard Webhooks header names (fixed by that specification).
const (
	HeaderStandardID        = "webhook-id"
	HeaderStandardTimestamp = "webhook-timestamp"
	HeaderStandardSignature = "webhook-signature"
)

// DefaultHeaderPrefix is the prefix of Sundial's own headers
// (Sundial-Signature...); a deployment may change it with
// SUNDIAL_HEADER_PREFIX (see WithHeaderPrefix).
const DefaultHeaderPrefix = "Sundial"

// The ways a signature check fails; the error Verify returns wraps one.
var (
	// ErrNoSignature: neither Sundial's nor the Standard Webhooks signature
	// headers are there.
	ErrNoSignature = errors.New("sundial: no signature headers")
	// ErrTimestamp: the timestamp is missing, unreadable, or too far from
	// now (a replay, or a clock far off).
	ErrTimestamp = errors.New("sundial: signature timestamp out of tolerance")
	// ErrBadSignature: no signature matches any key.
	ErrBadSignature = errors.New("sundial: no signature matches the signing keys")
	// ErrNoKeys: the verifier was given no key.
	ErrNoKeys = errors.New("sundial: no signing keys to verify with")
)

// Verifier checks deliveries' signatures with a project's signing keys.
type Verifier struct {
	keys      []verifyKey
	tolerance time.Duration
	headers   headerNames
	maxBody   int64
	now       func() time.Time
}

// VerifyOption configures a Verifier (and NewHandler, ParseDelivery).
type VerifyOption func(*Verifier)

// WithTolerance sets how far a timestamp may be from now (default 5 min).
func WithTolerance(d time.Duration) VerifyOption {
	return func(v *Verifier) {
		if d > 0 {
			v.tolerance = d
		}
	}
}

// WithHeaderPrefix names Sundial's headers for a deployment that set
// SUNDIAL_HEADER_PREFIX: <prefix>-Signature, <prefix>-Ack-URL...
func WithHeaderPrefix(prefix string) VerifyOption {
	return func(v *Verifier) { v.headers = newHeaderNames(prefix) }
}

// WithMaxBodyBytes bounds the body ParseDelivery and NewHandler read
// (default DefaultMaxBodyBytes); a larger body is refused.
func WithMaxBodyBytes(n int64) VerifyOption {
	return func(v *Verifier) {
		if n > 0 {
			v.maxBody = n
		}
	}
}

// headerNames are Sundial's header names under a prefix.
type headerNames struct {
	id, timestamp, signature, ackURL, nackURL, asyncTimeout string
}

func newHeaderNames(prefix string) headerNames {
	return headerNames{
		id:           prefix + "-Id",
		timestamp:    prefix + "-Timestamp",
		signature:    prefix + "-Signature",
		ackURL:       prefix + "-Ack-URL",
		nackURL:      prefix + "-Nack-URL",
		asyncTimeout: prefix + "-Async-Timeout",
	}
}

// verifyKey is one key in the two forms the schemes take: Sundial's HMAC
// key (the key string's bytes) and the Standard Webhooks one.
type verifyKey struct {
	sundial  [][]byte
	standard []byte
}

// NewVerifier returns a verifier for the project's signing keys: the keys
// of GET /v1/signing-keys (sdsig_...: they verify both schemes) or their
// standardSecret (whsec_...). Give the active and the retiring key during
// a rotation; any one matching is enough.
func NewVerifier(keys []string, opts ...VerifyOption) *Verifier {
	v := &Verifier{
		tolerance: DefaultTolerance,
		headers:   newHeaderNames(DefaultHeaderPrefix),
		maxBody:   DefaultMaxBodyBytes,
		now:       time.Now,
	}
	for _, k := range keys {
		if k != "" {
			v.keys = append(v.keys, parseKey(k))
		}
	}
	for _, o := range opts {
		o(v)
	}
	return v
}

// parseKey derives both HMAC keys. Sundial's signing keys are "sdsig_" +
// base64url of 32 random bytes: Sundial's scheme keys its HMAC with the
// string's bytes, the Standard one with the random bytes, shown as
// "whsec_" + base64 of them. A whsec_ secret gives the Standard key
// directly, and the Sundial key is the sdsig_ string it came from, or (for
// a key of another form) the bytes themselves: both are tried.
func parseKey(k string) verifyKey {
	if rest, ok := strings.CutPrefix(k, "whsec_"); ok {
		raw, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return verifyKey{standard: []byte(k), sundial: [][]byte{[]byte(k)}}
		}
		return verifyKey{standard: raw, sundial: [][]byte{
			[]byte("sdsig_" + base64.RawURLEncoding.EncodeToString(raw)), raw,
		}}
	}
	std := []byte(k)
	if rest, ok := strings.CutPrefix(k, "sdsig_"); ok {
		if raw, err := base64.RawURLEncoding.DecodeString(rest); err == nil && len(raw) >= 24 {
			std = raw
		}
	}
	return verifyKey{sundial: [][]byte{[]byte(k)}, standard: std}
}

// Verify checks a delivery's signature with keys (see NewVerifier), under
// Sundial's scheme (Sundial-Signature over "<timestamp>.<body>") or the
// Standard Webhooks scheme (webhook-signature over "<id>.<timestamp>.<body>"),
// whichever the headers carry; the timestamp must be within tolerance of
// now (0: DefaultTolerance). body is the raw body, as received.
func Verify(keys []string, header http.Header, body []byte, tolerance time.Duration) error {
	return NewVerifier(keys, WithTolerance(tolerance)).Verify(header, body)
}

// Verify checks a delivery's signature (see the function Verify). The
// deprecated X-Sundial-Signature, which signs the body alone and so can be
// replayed at any time, is never accepted.
func (v *Verifier) Verify(header http.Header, body []byte) error {
	if len(v.keys) == 0 {
		return ErrNoKeys
	}
	sig, std := headerValue(header, v.headers.signature), headerValue(header, HeaderStandardSignature)
	if sig == "" && std == "" {
		return ErrNoSignature
	}
	var err error
	if sig != "" {
		if err = v.verifySundial(header, sig, body); err == nil {
			return nil
		}
	}
	if std != "" {
		err = v.verifyStandard(header, std, body)
	}
	return err
}

func (v *Verifier) timestamp(s string) (int64, error) {
	ts, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not Unix seconds", ErrTimestamp, s)
	}
	if d := v.now().Sub(time.Unix(ts, 0)); d > v.tolerance || d < -v.tolerance {
		return 0, fmt.Errorf("%w: %s from now", ErrTimestamp, d.Round(time.Second))
	}
	return ts, nil
}

func (v *Verifier) verifySundial(header http.Header, sig string, body []byte) error {
	tsText := headerValue(header, v.headers.timestamp)
	if _, err := v.timestamp(tsText); err != nil {
		return err
	}
	entries := versioned(sig)
	for _, k := range v.keys {
		for _, key := range k.sundial {
			want := hmacOf(key, []byte(tsText), []byte{'.'}, body)
			for _, e := range entries {
				got, err := hex.DecodeString(e)
				if err == nil && hmac.Equal(got, want) {
					return nil
				}
			}
		}
	}
	return ErrBadSignature
}

func (v *Verifier) verifyStandard(header http.Header, sig string, body []byte) error {
	id, tsText := headerValue(header, HeaderStandardID), headerValue(header, HeaderStandardTimestamp)
	if id == "" {
		return fmt.Errorf("%w: no %s", ErrBadSignature, HeaderStandardID)
	}
	if _, err := v.timestamp(tsText); err != nil {
		return err
	}
	entries := versioned(sig)
	for _, k := range v.keys {
		want := hmacOf(k.standard, []byte(id), []byte{'.'}, []byte(tsText), []byte{'.'}, body)
		for _, e := range entries {
			got, err := base64.StdEncoding.DecodeString(e)
			if err == nil && hmac.Equal(got, want) {
				return nil
			}
		}
	}
	return ErrBadSignature
}

// versioned returns the signatures of the "v1" entries of a
// space-separated header; entries of other versions are ignored.
func versioned(header string) []string {
	var out []string
	for _, e := range strings.Fields(header) {
		if sig, ok := strings.CutPrefix(e, "v1,"); ok {
			out = append(out, sig)
		}
	}
	return out
}

func hmacOf(key []byte, parts ...[]byte) []byte {
	h := hmac.New(sha256.New, key)
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)
}
