// Package asyncurl makes and checks the ack and nack URLs of async hooks:
// the dispatcher sends them with every delivery, the gateway answers them.
// It also holds the bounds of an async wait (timeout.go).
//
// A URL names the hook and the lease of the delivery it came with, plus a
// token, base64url(HMAC-SHA256(project's async secret, "<hook id>.<lease>")),
// which is its only credential: unguessable without the secret, different
// for every delivery, and checkable without storing anything per delivery.
//
//	<public base URL>/v1/async/<hook id>/<lease>/<token>/ack
//	<public base URL>/v1/async/<hook id>/<lease>/<token>/nack
package asyncurl

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/signing"
)

// Token is the token of the hook's delivery under lease.
func Token(secret []byte, hookID uuid.UUID, lease int64) string {
	var b [tokenLen]byte
	return string(appendToken(b[:0], secret, hookID, lease))
}

// tokenLen is a token's length: the base64url of a SHA-256 sum.
const tokenLen = (sha256.Size*8 + 5) / 6

// appendToken appends the token to dst without allocating: a delivery
// makes one (URLs), and crypto/hmac's states were an allocation each.
func appendToken(dst, secret []byte, hookID uuid.UUID, lease int64) []byte {
	var msg [36 + 1 + 20]byte // "<hook id>.<lease>"
	m := strconv.AppendInt(append(appendUUID(msg[:0], hookID), '.'), lease, 10)
	var sum [sha256.Size]byte
	return base64.RawURLEncoding.AppendEncode(dst, signing.AppendHMAC(sum[:0], secret, m))
}

// appendUUID appends id's canonical text, as id.String() makes it.
func appendUUID(dst []byte, id uuid.UUID) []byte {
	var b [36]byte
	hex.Encode(b[0:8], id[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], id[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], id[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], id[8:10])
	b[23] = '-'
	hex.Encode(b[24:], id[10:])
	return append(dst, b[:]...)
}

// Valid reports, in constant time, whether token is the token of the hook's
// delivery under lease.
func Valid(secret []byte, hookID uuid.UUID, lease int64, token string) bool {
	want := Token(secret, hookID, lease)
	return hmac.Equal([]byte(want), []byte(token))
}

// URLs returns the ack and nack URLs of the hook's delivery under lease, on
// the deployment's public base URL (e.g. https://sundial.example.com).
func URLs(base string, secret []byte, hookID uuid.UUID, lease int64) (ack, nack string) {
	base = strings.TrimRight(base, "/")
	b := make([]byte, 0, len(base)+len("/v1/async/")+36+1+20+1+tokenLen+len("/nack"))
	b = append(append(b, base...), "/v1/async/"...)
	b = strconv.AppendInt(append(appendUUID(b, hookID), '/'), lease, 10)
	b = appendToken(append(b, '/'), secret, hookID, lease)
	prefix := len(b)
	ack = string(append(b, "/ack"...))
	nack = string(append(b[:prefix], "/nack"...))
	return ack, nack
}

// RedactedToken stands for a token where an ack or nack URL is shown or
// stored (an attempt's recorded request headers): the token is the URL's
// only credential, and it is never stored.
const RedactedToken = "[redacted]"

// Redacted is u, an ack or nack URL as URLs makes it, with its token
// replaced by RedactedToken, and the token it had. A string of another
// shape is RedactedToken whole, with no token.
func Redacted(u string) (redacted, token string) {
	i := strings.LastIndex(u, "/v1/async/")
	if i < 0 {
		return RedactedToken, ""
	}
	// <hook id>/<lease>/<token>/<ack|nack>
	rest := u[i+len("/v1/async/"):]
	parts := strings.Split(rest, "/")
	if len(parts) != 4 || parts[2] == "" || (parts[3] != "ack" && parts[3] != "nack") {
		return RedactedToken, ""
	}
	return u[:len(u)-len(rest)] + parts[0] + "/" + parts[1] + "/" + RedactedToken + "/" + parts[3], parts[2]
}
