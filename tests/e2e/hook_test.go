package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event"
)

// hmacHex is the receiver's own signature computation, written here from
// the specification rather than taken from pkg/signing.
func hmacHex(key string, msg []byte) string {
	h := hmac.New(sha256.New, []byte(key))
	h.Write(msg)
	return hex.EncodeToString(h.Sum(nil))
}

func TestHookDeliveredSignedOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})

	created := b.schedule(t, map[string]any{
		"path":   "/webhooks/orders?source=e2e",
		"postIn": "1s",
		"data":   map[string]any{"order": 42, "note": "héllo"},
	})
	require.Equal(t, "pending", created.Status)
	require.Equal(t, b.receiver.Domain(), created.Domain)

	done := b.waitStatus(t, created.ID, "completed", 20*time.Second)
	require.Equal(t, 1, done.Attempts)
	require.Empty(t, done.FailureError)
	require.Positive(t, done.PostDurationSeconds)

	got := b.receiver.Received()
	require.Len(t, got, 1, "delivered exactly once")
	r := got[0]
	require.False(t, r.At.Before(created.PostAt), "delivered at %s, before postAt %s", r.At, created.PostAt)

	// Headers.
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	require.Equal(t, created.ID, r.Header.Get("Sundial-Id"))
	require.True(t, strings.HasPrefix(r.Header.Get("User-Agent"), "Sundial/"), r.Header.Get("User-Agent"))

	// Signature: "v1,<hex hmac of '<timestamp>.<body>'>" with the signing key.
	ts := r.Header.Get("Sundial-Timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), time.Unix(sec, 0), 5*time.Minute)
	want := "v1," + hmacHex(b.creds.SigningKey, []byte(ts+"."+string(r.Body)))
	require.Equal(t, want, r.Header.Get("Sundial-Signature"))
	require.Equal(t, hmacHex(b.creds.SigningKey, r.Body), r.Header.Get("X-Sundial-Signature"))

	// Body.
	var body struct {
		ID        string          `json:"id"`
		Path      string          `json:"path"`
		PostAt    time.Time       `json:"postAt"`
		PostedAt  time.Time       `json:"postedAt"`
		Data      json.RawMessage `json:"data"`
		CreatedAt time.Time       `json:"createdAt"`
		UpdatedAt time.Time       `json:"updatedAt"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &body))
	require.Equal(t, created.ID, body.ID)
	require.Equal(t, "/webhooks/orders?source=e2e", body.Path)
	require.True(t, body.PostAt.Equal(created.PostAt))
	require.False(t, body.PostedAt.Before(body.PostAt))
	require.JSONEq(t, `{"order": 42, "note": "héllo"}`, string(body.Data))
}

func TestHookRetriedAfterServerError(t *testing.T) {
	t.Parallel()
	b := setup(t, options{statuses: []int{500, 200}})

	created := b.schedule(t, map[string]any{
		"path":   "/flaky",
		"postIn": "1s",
		"data":   map[string]any{"try": true},
		// The shortest retry the API allows, without jitter, so the test
		// waits about five seconds for the second attempt.
		"retryOverride": map[string]any{"minRetries": 2, "delaySecs": 5, "strategy": "fixed"},
	})

	retrying := b.waitStatus(t, created.ID, "retry", 20*time.Second)
	require.Equal(t, 1, retrying.Attempts)
	require.Equal(t, "HTTP 500", retrying.FailureError)

	done := b.waitStatus(t, created.ID, "completed", 30*time.Second)
	require.Equal(t, 2, done.Attempts)
	require.Empty(t, done.FailureError)

	got := b.receiver.Received()
	require.Len(t, got, 2, "delivered twice")
	require.Equal(t, got[0].Header.Get("Sundial-Id"), got[1].Header.Get("Sundial-Id"))
	require.GreaterOrEqual(t, got[1].At.Sub(got[0].At), 5*time.Second-time.Second/2,
		"the retry waits its delay (database clock vs local clock, so allow some skew)")
}

func TestHookDeliveredAfterStreamLost(t *testing.T) {
	t.Parallel()
	// No dispatcher yet: the scheduler claims the hook and publishes its
	// DueHook, which then goes down with the stream.
	b := setup(t, options{without: map[string]bool{"dispatcher": true}})
	_, js := b.nats.Connect(t)

	created := b.schedule(t, map[string]any{"path": "/lost", "postIn": "1s", "data": map[string]any{"n": 1}})

	require.Eventually(t, func() bool {
		s, err := js.Stream(b.ctx, event.StreamDue)
		if err != nil {
			return false
		}
		info, err := s.Info(b.ctx)
		return err == nil && info.State.Msgs == 1
	}, 20*time.Second, 20*time.Millisecond, "the scheduler claimed the hook and published it")
	require.NoError(t, js.DeleteStream(b.ctx, event.StreamDue))

	b.start(t, "dispatcher")
	done := b.waitStatus(t, created.ID, "completed", 30*time.Second)
	require.Equal(t, 1, done.Attempts)
	require.Len(t, b.receiver.Received(), 1, "delivered once, by the re-driven lease")
}
