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
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// Token is the token of the hook's delivery under lease.
func Token(secret []byte, hookID uuid.UUID, lease int64) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(hookID.String() + "." + strconv.FormatInt(lease, 10)))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
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
	prefix := strings.TrimRight(base, "/") + "/v1/async/" + hookID.String() + "/" +
		strconv.FormatInt(lease, 10) + "/" + Token(secret, hookID, lease)
	return prefix + "/ack", prefix + "/nack"
}
