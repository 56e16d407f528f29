package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGetShowsTheAttempts: `hooks get` shows the hook, then its attempts
// (GET /v1/hooks/{id}/attempts), with each outcome, status and error, and
// an async attempt's state; with --headers each attempt's headers; with
// --output json both, headers included, in one object.
func TestGetShowsTheAttempts(t *testing.T) {
	t.Parallel()
	const id = "0193e3a0-0000-7000-8000-000000000001"
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/hooks/"+id, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data": {"id": "` + id + `", "status": "retry", "domain": "shop.example", "path": "/paid",
			"postAt": "2030-01-02T09:00:00Z", "attempts": 2, "createdAt": "2030-01-01T09:00:00Z", "data": {},
			"failureError": "timeout after 10s", "failureClass": "timeout", "orderingKey": "account:42"}}`))
	})
	mux.HandleFunc("GET /v1/hooks/"+id+"/attempts", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data": [
			{"attempt": 1, "startedAt": "2030-01-02T09:00:00Z", "durationSeconds": 10, "outcome": "failure", "error": "timeout after 10s", "failureClass": "timeout"},
			{"attempt": 2, "startedAt": "2030-01-02T09:00:40Z", "durationSeconds": 0.0123, "outcome": "async", "statusCode": 202,
			 "async": {"state": "waiting", "deadline": "2030-01-02T10:00:40Z"},
			 "requestHeaders": {"User-Agent": ["Sundial/1.0"], "Authorization": ["[redacted]"]},
			 "responseHeaders": {"X-Multi": ["one", "two"]}, "responseHeadersOmitted": 3}]}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	r := newRunner(t)
	r.env[envAPIKey], r.env[envAPIURL] = "sk_test", srv.URL

	res := r.run(context.Background(), "hooks", "get", id)
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "https://shop.example/paid")
	require.Regexp(t, `Failure class:\s+timeout\n`, res.stdout)
	require.Regexp(t, `Ordering key:\s+account:42\n`, res.stdout)
	require.Regexp(t, `ATTEMPT\s+STARTED\s+DURATION\s+OUTCOME\s+STATUS\s+CLASS\s+ERROR`, res.stdout)
	require.Regexp(t, `1\s+2030-01-02T09:00:00Z\s+10s\s+failure\s+timeout\s+timeout after 10s`, res.stdout)
	require.Regexp(t, `2\s+2030-01-02T09:00:40Z\s+12ms\s+async \(waiting\)\s+202`, res.stdout)
	require.NotContains(t, res.stdout, "headers", "headers only with --headers")

	res = r.run(context.Background(), "hooks", "get", id, "--headers")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "\nAttempt 1: no headers recorded.\n")
	require.Contains(t, res.stdout, "\nAttempt 2 request headers:\n  Authorization: [redacted]\n  User-Agent: Sundial/1.0\n")
	require.Contains(t, res.stdout, "\nAttempt 2 response headers (3 more left out):\n  X-Multi: one\n  X-Multi: two\n")

	res = r.run(context.Background(), "hooks", "get", id, "-o", "json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, `"id":"`+id+`"`)
	require.Contains(t, res.stdout, `"attemptHistory":[{"attempt":1`)
	require.Contains(t, res.stdout, `"requestHeaders":{"Authorization":["[redacted]"],"User-Agent":["Sundial/1.0"]}`)
	require.Contains(t, res.stdout, `"responseHeadersOmitted":3`)
}

// TestARefusedFieldIsSaidOnce: the API's refusal of a field reads as one
// sentence under the flag's name, with the status, code and request id,
// after a single "sundial: ".
func TestARefusedFieldIsSaidOnce(t *testing.T) {
	t.Parallel()
	const why = `not a duration: give a number and a unit, such as 90s, 15m, 2h or 1d`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req-7")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error": "invalid request: postIn: ` + why + `", "code": "invalid_request",
			"details": [{"field": "postIn", "message": "` + why + `"}], "requestId": "req-7"}`))
	}))
	t.Cleanup(srv.Close)
	r := newRunner(t)
	r.env[envAPIKey], r.env[envAPIURL] = "sk_test", srv.URL

	res := r.run(context.Background(), "hooks", "schedule", "--path", "/x", "--post-in", "5")
	require.Equal(t, ExitError, res.code)
	require.Equal(t, "sundial: --post-in: "+why+" (400 invalid_request, request req-7)\n", res.stderr)
}
