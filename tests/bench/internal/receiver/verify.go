package receiver

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// tolerance is how far a request's Sundial-Timestamp may be from now: the
// usual allowance of receivers' libraries (5 minutes).
const tolerance = 5 * time.Minute

// Verify checks a delivery as a receiver following Sundial's documentation
// does: one of the "v1,<hex>" entries of Sundial-Signature is the
// HMAC-SHA256, keyed with key's bytes, of "<Sundial-Timestamp>.<body>", and
// the timestamp is within 5 minutes of now. It is written from the
// documented scheme (docs/product.md), not from Sundial's signing code, so
// that Sundial and the baseline are held to the same check.
func Verify(key string, h http.Header, body []byte, now time.Time) bool {
	ts := h.Get("Sundial-Timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return false
	}
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte(ts))
	mac.Write([]byte{'.'})
	mac.Write(body)
	want := mac.Sum(nil)
	for _, entry := range strings.Fields(h.Get("Sundial-Signature")) {
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := hex.DecodeString(sig)
		if err == nil && hmac.Equal(got, want) {
			return true
		}
	}
	return false
}
