package listen

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The listener's four answers, each through the real command and processes:
// the local server's status decides what `sundial listen` answers (2xx ack,
// 202 accept, anything else, a silence of 9 s included, nack). Each becomes
// an ordinary attempt of the hook. (The gateway's own ack timeout, for a
// listener that does not answer at all, is tested by the gateway's
// conformance tests, services/gateway/app/listener_test.go.)
func TestListenerAnswers(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.local.setAnswer(func(a arrival, nth int) (int, http.Header, time.Duration) {
		switch {
		case strings.HasPrefix(a.Path, "/nack/") && nth == 1:
			return http.StatusInternalServerError, nil, 0
		case strings.HasPrefix(a.Path, "/accept/"):
			return http.StatusAccepted, http.Header{"Sundial-Async-Timeout": {"120"}}, 0
		case strings.HasPrefix(a.Path, "/slow/") && nth == 1:
			// Longer than the command's 9 s and the gateway's 10 s.
			return http.StatusOK, nil, 13 * time.Second
		}
		return http.StatusOK, nil, 0
	})
	b.listen(t)
	retry := map[string]any{"minRetries": 3, "delaySecs": 5, "strategy": "fixed"}
	soon := time.Now().Add(time.Second)

	t.Run("ack completes the hook, signed as over HTTPS", func(t *testing.T) {
		t.Parallel()
		h := b.schedule(t, "/ack/1", soon, nil)
		got := b.waitStatus(t, h.ID, "completed", time.Minute)
		require.Equal(t, 1, got.Attempts)
		a := b.local.only(t, h.ID)
		require.Equal(t, "/ack/1", a.Path)
		require.NoError(t, verify(b.project.SigningKey, a), "the forwarded request carries the delivery's signature")
		require.Equal(t, []attempt{{Attempt: 1, Outcome: "success"}}, b.attempts(t, h.ID))
	})
	t.Run("nack fails the attempt and the hook is retried", func(t *testing.T) {
		t.Parallel()
		h := b.schedule(t, "/nack/1", soon, retry)
		got := b.waitStatus(t, h.ID, "completed", time.Minute)
		require.Equal(t, 2, got.Attempts)
		at := b.attempts(t, h.ID)
		require.Len(t, at, 2)
		require.Equal(t, "failure", at[0].Outcome)
		require.Contains(t, at[0].Error, "500")
		require.Equal(t, "success", at[1].Outcome)
	})
	t.Run("accept makes the hook async until its ack URL is called", func(t *testing.T) {
		t.Parallel()
		h := b.schedule(t, "/accept/1", soon, nil)
		var a arrival
		require.Eventually(t, func() bool {
			as := b.local.of(h.ID)
			if len(as) == 0 {
				return false
			}
			a = as[0]
			return true
		}, time.Minute, 20*time.Millisecond)
		ackURL := a.Header.Get("Sundial-Ack-URL")
		require.NotEmpty(t, ackURL, "an accepted delivery carries its ack URL: %v", a.Header)
		require.Eventually(t, func() bool {
			at := b.attempts(t, h.ID)
			return len(at) == 1 && at[0].Outcome == "async"
		}, 30*time.Second, 50*time.Millisecond, "the accept was never recorded as an async attempt")
		resp, err := b.http.Post(ackURL, "application/json", nil)
		require.NoError(t, err)
		resp.Body.Close()
		require.Less(t, resp.StatusCode, 300, "POST ack URL answered %d", resp.StatusCode)
		b.waitStatus(t, h.ID, "completed", 30*time.Second)
	})
	t.Run("a local server silent for 9 s is a failed attempt, nacked with the cause", func(t *testing.T) {
		t.Parallel()
		h := b.schedule(t, "/slow/1", soon, retry)
		got := b.waitStatus(t, h.ID, "completed", 2*time.Minute)
		require.Equal(t, 2, got.Attempts)
		at := b.attempts(t, h.ID)
		require.Len(t, at, 2)
		require.Equal(t, "failure", at[0].Outcome)
		// The command's nack, before the gateway's 10 s ack_timeout.
		require.Contains(t, at[0].Error, "local server")
		require.Contains(t, at[0].Error, "Client.Timeout exceeded")
	})
	t.Cleanup(func() {
		require.Zero(t, b.domain.count(), "a delivery went to the domain while a listener was connected")
	})
}
