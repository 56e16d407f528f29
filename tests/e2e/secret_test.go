package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/testkit/logtest"
	"github.com/sundial-run/sundial/tests/internal/apiclient"
	"github.com/sundial-run/sundial/tests/internal/dbdump"
)

// secretSet collects every secret a run handles, by what it is.
type secretSet map[string]string

func (s secretSet) add(what, value string) string {
	if value != "" {
		s[what] = value
	}
	return value
}

// token is a fresh random string marked as what it is.
func token(what string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return what + "-" + hex.EncodeToString(b)
}

// A full run with every kind of secret (API keys, signing keys before and
// after a rotation, a custom Authorization value, chat and webhook channel
// URLs with tokens, an SMTP password, async ack tokens), deliveries that
// succeed and fail, and alerts sent, with every service logging at debug
// level: none of the secrets appears in any log line or in any error the
// API answers, and the database holds none of the stored ones, nor the ack
// tokens its attempts' recorded headers redact, in plain text
// (docs/security.md, "Secrets at rest").
func TestNoSecretInLogsErrorsOrTheDatabase(t *testing.T) {
	t.Parallel()
	logs := &logtest.Buffer{}
	// Deliveries in order: the failing hook's only attempt (500), the
	// retried hook's two (500, 200), the async hook's (202).
	b := setup(t, options{statuses: []int{500, 500, 200, 202}, logs: logs,
		without: map[string]bool{"scheduler": true, "dispatcher": true, "notifier": true}})
	b.env["SUNDIAL_LOG_LEVEL"] = "debug"
	b.env["SUNDIAL_PUBLIC_URL"] = b.baseURL
	b.env["SUNDIAL_NOTIFIER_POLL_INTERVAL"] = "100ms"
	b.env["SUNDIAL_SCHEDULER_ASYNC_SWEEP_INTERVAL"] = "100ms"
	for _, name := range []string{"scheduler", "dispatcher", "notifier"} {
		b.start(t, name)
	}
	api := b.api()
	secrets := secretSet{}
	secrets.add("API key", b.creds.APIKey)
	secrets.add("first signing key", b.creds.SigningKey)
	var errorTexts []string
	// refused sends a request the API must refuse, and keeps its answer.
	refused := func(c apiclient.Client, method, path string, body any, status int) {
		t.Helper()
		resp, raw := c.Do(t, method, path, body)
		require.Equal(t, status, resp.StatusCode, "%s %s: %s", method, path, raw)
		errorTexts = append(errorTexts, string(raw))
	}

	// Settings with secrets, and refused ones.
	auth := secrets.add("Authorization value", "Bearer "+token("auth"))
	patchProject(t, api, map[string]any{
		"authorizationHeader": auth,
		"alerts":              map[string]any{"groupWaitSecs": 0},
		"retryPolicy":         map[string]any{"minRetries": 0},
	})
	refused(api, http.MethodPatch, "/v1/project",
		map[string]any{"authorizationHeader": "Bearer\t" + secrets.add("refused Authorization value", token("badauth"))}, http.StatusBadRequest)

	resp, raw := api.Do(t, http.MethodPost, "/v1/api-keys", map[string]any{"name": "second"})
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%s", raw)
	var apiKey struct{ Data map[string]any }
	require.NoError(t, json.Unmarshal(raw, &apiKey))
	secrets.add("second API key", apiKey.Data["key"].(string))
	wrongKey := apiclient.Client{BaseURL: api.BaseURL, APIKey: api.APIKey[:len(api.APIKey)-4] + "AAAA", HTTP: api.HTTP}
	secrets.add("guessed API key", wrongKey.APIKey)
	refused(wrongKey, http.MethodGet, "/v1/hooks", nil, http.StatusUnauthorized)

	resp, raw = api.Do(t, http.MethodPost, "/v1/signing-keys/rotate", map[string]any{"gracePeriodSecs": 3600})
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%s", raw)
	var rotated struct{ Data []struct{ Key string } }
	require.NoError(t, json.Unmarshal(raw, &rotated))
	secrets.add("rotated signing key", rotated.Data[0].Key)

	// A listener ticket: a credential for a minute, kept only as a hash.
	resp, raw = api.Do(t, http.MethodPost, "/v1/ws/ticket", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	var ticket struct{ Data struct{ Ticket string } }
	require.NoError(t, json.Unmarshal(raw, &ticket))
	secrets.add("listener ticket", ticket.Data.Ticket)

	chat, hooks := newInbox(t), newInbox(t)
	chatURL := chat.URL("/services/" + secrets.add("chat URL token", token("chattoken")))
	createChannel(t, api, map[string]any{"name": "ops chat", "type": "chat", "url": chatURL})
	createChannel(t, api, map[string]any{"name": "ops hook", "type": "webhook",
		"url": hooks.URL("/alerts?token=" + secrets.add("webhook URL token", token("hooktoken")))})
	createChannel(t, api, map[string]any{"name": "ops mail", "type": "email", "events": []string{"quota.threshold"},
		"email": map[string]any{"host": "smtp.example.com", "port": 587, "username": "ops",
			"password": secrets.add("SMTP password", token("smtppass")), "tls": "starttls",
			"from": "alerts@example.com", "to": []string{"ops@example.com"}}})
	refused(api, http.MethodPost, "/v1/channels", map[string]any{"name": "bad", "type": "chat",
		"url": "http://chat.example.com/services/" + secrets.add("refused chat URL token", token("badchat"))}, http.StatusBadRequest)

	// A hook that fails for good (an alert goes to both channels), one
	// that fails once then succeeds, one answered asynchronously.
	failed := b.schedule(t, map[string]any{"path": "/orders", "postIn": "1s", "data": map[string]any{"n": 1}})
	b.waitStatus(t, failed.ID, "failed", 30*time.Second)
	retried := b.schedule(t, map[string]any{"path": "/orders", "postIn": "1s", "data": map[string]any{"n": 2},
		"retryOverride": map[string]any{"minRetries": 2, "delaySecs": 5, "strategy": "fixed"}})
	b.waitStatus(t, retried.ID, "completed", 60*time.Second)
	async := b.schedule(t, map[string]any{"path": "/async", "postIn": "1s", "data": map[string]any{"n": 3}})
	require.Eventually(t, func() bool { return len(b.receiver.Received()) == 4 }, 30*time.Second, 50*time.Millisecond)
	got := b.receiver.Received()
	for _, r := range got {
		require.Equal(t, auth, r.Header.Get("Authorization"), "every delivery carries the (sealed, then opened) value")
	}
	ackURL := got[3].Header.Get("Sundial-Ack-URL")
	parts := strings.Split(ackURL, "/")
	ackToken := secrets.add("async ack token", parts[len(parts)-2])
	wrong := strings.Replace(ackURL, ackToken, secrets.add("guessed async token", token("guess")), 1)
	status, body := b.answerURL(t, wrong, `{}`)
	require.Equal(t, http.StatusNotFound, status, body)
	errorTexts = append(errorTexts, body)
	status, body = b.answerURL(t, ackURL, `{}`)
	require.Equal(t, http.StatusOK, status, body)
	b.waitStatus(t, async.ID, "completed", 30*time.Second)

	// The failure alert reached both channels: the notifier opened their
	// sealed settings and the signing keys.
	chat.wait(t, 1, 60*time.Second)
	signed := hooks.wait(t, 1, 60*time.Second)[0]
	require.NotEmpty(t, signed.Header.Get("Sundial-Signature"))

	b.stopAll() // every line written
	all := logs.String()
	require.Contains(t, all, `"service":"dispatcher"`, "the logs were captured")
	require.Contains(t, all, failed.ID, "the logs name the hooks")
	for what, value := range secrets {
		// False, not NotContains: a failure names the secret, without printing every log line.
		require.False(t, strings.Contains(all, value), "the %s is in the logs", what)
		for _, text := range errorTexts {
			require.NotContains(t, text, value, "the %s is in an error answer", what)
		}
	}

	conn, err := pgx.Connect(b.ctx, b.env["SUNDIAL_DATABASE_URL"])
	require.NoError(t, err)
	defer conn.Close(b.ctx)
	rows, err := dbdump.New(conn).DumpRows(b.ctx)
	require.NoError(t, err)
	require.NotEmpty(t, rows)
	redacted := 0
	for _, r := range rows {
		if r.Tbl == "hook_attempts" && strings.Contains(r.Row, "[redacted]") {
			redacted++
		}
	}
	require.Positive(t, redacted, "the attempts recorded their headers, redacted")
	for _, r := range rows {
		for what, value := range secrets {
			if what == "guessed async token" || what == "guessed API key" {
				continue // refused, never stored
			}
			// The ack token is made from the secret at each delivery and
			// never stored: the attempts record their headers with it
			// redacted (docs/choices.md, "Attempt headers").
			require.False(t, strings.Contains(r.Row, value), "the %s is stored in plain text in %s", what, r.Tbl)
		}
	}
}
