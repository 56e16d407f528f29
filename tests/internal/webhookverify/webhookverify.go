// Package webhookverify verifies a delivery as a Standard Webhooks receiver
// does, written from the specification (github.com/standard-webhooks/
// standard-webhooks, spec/standard-webhooks.md, 1.0.0) and not from
// Sundial's signing code, so that the tests that use it check Sundial
// against the specification rather than against itself.
package webhookverify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Tolerance is the usual allowance for clock skew and transit (the
// reference libraries' 5 minutes).
const Tolerance = 5 * time.Minute

// Verify checks that the request's webhook-signature header holds a valid
// "v1" signature of body by secret ("whsec_" + base64 of the key bytes),
// over "<webhook-id>.<webhook-timestamp>.<body>", and that the timestamp
// is within tolerance of now.
func Verify(secret string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return fmt.Errorf("secret: %w", err)
	}
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return errors.New("missing webhook-id, webhook-timestamp or webhook-signature")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("webhook-timestamp %q: %w", ts, err)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("webhook-timestamp %s is %s from now", ts, d)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, entry := range strings.Split(sigs, " ") {
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return errors.New("no valid v1 signature")
}
