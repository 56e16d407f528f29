// Package signing signs deliveries the way receivers verify them.
//
// Sundial-Signature carries one "v1,<hex>" entry per signing key (two during
// a rotation's grace period), each an HMAC-SHA256 of "<timestamp>.<body>"
// keyed with the key string's bytes. X-Sundial-Signature, the deprecated
// legacy header, is the hex HMAC-SHA256 of the body alone with the active key.
package signing

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// Scheme is the version prefix of every signature entry.
const Scheme = "v1"

// Entry returns one "v1,<hex>" signature of body at timestamp (Unix seconds).
func Entry(key string, timestamp int64, body []byte) string {
	var b [entryLen]byte
	return string(appendEntry(b[:0], key, timestamp, body))
}

// entryLen is the length of an Entry: "v1," and 64 hex digits.
const entryLen = len(Scheme) + 1 + 2*sha256.Size

func appendEntry(dst []byte, key string, timestamp int64, body []byte) []byte {
	m := newMAC(key)
	m.writeTimestamp(timestamp, '.')
	m.write(body)
	dst = append(dst, Scheme+","...)
	dst = hex.AppendEncode(dst, m.finish())
	m.done()
	return dst
}

// Header returns the Sundial-Signature value: one entry per key, active key
// first, separated by a space.
func Header(keys []string, timestamp int64, body []byte) string {
	b := make([]byte, 0, len(keys)*(entryLen+1))
	for i, k := range keys {
		if i > 0 {
			b = append(b, ' ')
		}
		b = appendEntry(b, k, timestamp, body)
	}
	return string(b)
}

// Legacy returns the X-Sundial-Signature value: hex HMAC-SHA256 of the body.
func Legacy(activeKey string, body []byte) string {
	var b [2 * sha256.Size]byte
	m := newMAC(activeKey)
	m.write(body)
	hex.Encode(b[:], m.finish())
	m.done()
	return string(b[:])
}

// Verify reports whether any entry of header is a valid signature of body at
// timestamp under key, and the timestamp is within tolerance of now. It is
// what a receiver does; Sundial uses it in its tests and its listener.
func Verify(key, header, timestamp string, body []byte, now time.Time, tolerance time.Duration) bool {
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return false
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return false
	}
	want := []byte(Entry(key, ts, body))
	for _, e := range strings.Fields(header) {
		if hmac.Equal([]byte(e), want) {
			return true
		}
	}
	return false
}
