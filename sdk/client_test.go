package sundial

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// server is a fake gateway that answers each request with the next of its
// answers (then 200 {"data":{}}) and records what it got.
type server struct {
	srv    *httptest.Server
	client *Client

	mu      sync.Mutex
	got     []*http.Request
	bodies  []string
	answers []answer
	// waits are the client's waits between tries, recorded instead of
	// waited.
	waits []time.Duration
}

type answer struct {
	status int
	header map[string]string
	body   string
}

// setup starts a fake gateway answering answers in order, and a client of
// it that records its waits between tries instead of waiting.
func setup(t *testing.T, answers ...answer) *server {
	t.Helper()
	s := &server{answers: answers}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	s.client = NewClient("sdk_test_key", WithBaseURL(s.srv.URL+"/v1/"),
		WithRetryPolicy(RetryPolicy{MaxAttempts: 4, BaseDelay: 100 * time.Millisecond, MaxDelay: 5 * time.Second}))
	s.client.sleep = func(ctx context.Context, d time.Duration) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.waits = append(s.waits, d)
		return ctx.Err()
	}
	return s
}

func (s *server) recordedWaits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

func (s *server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.got = append(s.got, r)
	s.bodies = append(s.bodies, string(body))
	a := answer{status: http.StatusOK, body: `{"data":{}}`}
	if len(s.answers) > 0 {
		a, s.answers = s.answers[0], s.answers[1:]
	}
	s.mu.Unlock()
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

func (s *server) requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.got...)
}

func (s *server) body(i int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies[i]
}

const hookJSON = `{"data":{"id":"0192f0c4-9b1e-7c3a-8f00-1a2b3c4d5e6f","path":"/x","domain":"example.com","data":{"a":1},"postAt":"2030-01-01T00:00:00Z","status":"pending","attempts":0,"postDurationSeconds":0,"createdAt":"2029-01-01T00:00:00Z","updatedAt":"2029-01-01T00:00:00Z"}}`

func TestRequestCarriesKeyAndAgent(t *testing.T) {
	t.Parallel()
	s := setup(t, answer{status: 200, body: hookJSON})
	h, err := s.client.Hooks.Get(context.Background(), "0192f0c4-9b1e-7c3a-8f00-1a2b3c4d5e6f")
	require.NoError(t, err)
	require.Equal(t, "/x", h.Path, "decoded %+v", h)
	require.Equal(t, StatusPending, h.Status, "decoded %+v", h)
	require.Equal(t, `{"a":1}`, string(h.Data), "decoded %+v", h)
	r := s.requests()[0]
	require.Equal(t, http.MethodGet, r.Method)
	require.Equal(t, "/v1/hooks/0192f0c4-9b1e-7c3a-8f00-1a2b3c4d5e6f", r.URL.Path)
	require.Equal(t, "sdk_test_key", r.Header.Get("X-API-Key"), "headers %v", r.Header)
	require.True(t, strings.HasPrefix(r.Header.Get("User-Agent"), "sundial-go/"), "User-Agent %q", r.Header.Get("User-Agent"))
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	s := setup(t,
		answer{status: 503, header: map[string]string{"Retry-After": "1"}, body: `{"error":"database unreachable","code":"unavailable","requestId":"r1"}`},
		answer{status: 200, body: hookJSON})
	_, err := s.client.Hooks.Get(context.Background(), "id")
	require.NoError(t, err)
	require.Len(t, s.requests(), 2, "requests")
	require.Equal(t, []time.Duration{time.Second}, s.recordedWaits(), "waits: want Retry-After's 1s")
}

func TestRetryAfterAsAnHTTPDateIsHonoured(t *testing.T) {
	t.Parallel()
	at := time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat)
	s := setup(t, answer{status: 429, header: map[string]string{"Retry-After": at}, body: `{"error":"x","code":"rate_limited","requestId":"r"}`},
		answer{status: 200, body: hookJSON})
	_, err := s.client.Hooks.Get(context.Background(), "id")
	require.NoError(t, err)
	// The date has whole seconds: 2 to 3 s from now.
	w := s.recordedWaits()
	require.Len(t, w, 1, "waits %v", w)
	require.GreaterOrEqual(t, w[0], time.Second, "wait for Retry-After %s", at)
	require.LessOrEqual(t, w[0], 3*time.Second, "wait for Retry-After %s", at)
}

func TestBackoffDoublesWithJitter(t *testing.T) {
	t.Parallel()
	busy := answer{status: 503, body: "busy"}
	s := setup(t, busy, busy, busy, busy)
	_, err := s.client.Hooks.Get(context.Background(), "id")
	require.Error(t, err)
	w := s.recordedWaits()
	require.Len(t, w, 3, "waits %v, want 3 (4 tries)", w)
	for i, d := range w {
		full := 100 * time.Millisecond << i
		require.GreaterOrEqual(t, d, full/2, "wait %d, want %s to %s", i+1, full/2, full)
		require.LessOrEqual(t, d, full, "wait %d, want %s to %s", i+1, full/2, full)
	}
}

func TestRetryAfterAsHTTPDate(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	require.Equal(t, 90*time.Second, parseRetryAfter(now.Add(90*time.Second).Format(http.TimeFormat), now), "HTTP date")
	require.Equal(t, 7*time.Second, parseRetryAfter("7", now), "seconds")
	for _, v := range []string{"", "soon", "-3", now.Add(-time.Minute).Format(http.TimeFormat)} {
		require.Zero(t, parseRetryAfter(v, now), "Retry-After %q", v)
	}
}

func TestRetriesAreBounded(t *testing.T) {
	t.Parallel()
	busy := answer{status: 502, body: "<html>bad gateway</html>"}
	s := setup(t, busy, busy, busy, busy, busy, busy)
	_, err := s.client.Project.Get(context.Background())
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, 502, apiErr.StatusCode, "error %v", err)
	require.Contains(t, apiErr.Message, "bad gateway", "a proxy's page should show in the message")
	require.Len(t, s.requests(), 4, "requests, want MaxAttempts = 4")
}

func TestRetryAfterBeyondMaxDelayIsNotWaited(t *testing.T) {
	t.Parallel()
	s := setup(t, answer{status: 429, header: map[string]string{"Retry-After": "3600"},
		body: `{"error":"slow down","code":"rate_limited","requestId":"r"}`})
	_, err := s.client.APIKeys.List(context.Background())
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, time.Hour, apiErr.RetryAfter, "error %#v", apiErr)
	require.Equal(t, CodeRateLimited, apiErr.Code, "error %#v", apiErr)
	require.Len(t, s.requests(), 1, "requests: a Retry-After beyond MaxDelay was waited")
}

func TestRetryStopsAtTheContextDeadline(t *testing.T) {
	t.Parallel()
	s := setup(t, answer{status: 503, header: map[string]string{"Retry-After": "2"}, body: `{"error":"x","code":"unavailable","requestId":"r"}`})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := s.client.Hooks.Get(ctx, "id")
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, 503, apiErr.StatusCode, "error %v", err)
	require.Len(t, s.requests(), 1, "requests: a retry after the deadline was attempted")
}

func TestPostWithoutIdempotencyKeyIsNotRetried(t *testing.T) {
	t.Parallel()
	s := setup(t, answer{status: 503, header: map[string]string{"Retry-After": "1"}, body: `{"error":"x","code":"unavailable","requestId":"r"}`})
	_, err := s.client.Hooks.BulkCancel(context.Background(), BulkActionRequest{HookIDs: []string{"a"}})
	require.Error(t, err)
	require.Len(t, s.requests(), 1, "requests: a POST without an idempotency key was retried")
}

func TestScheduleSendsOneIdempotencyKeyAcrossRetries(t *testing.T) {
	t.Parallel()
	s := setup(t, answer{status: 504, body: "timeout"}, answer{status: 201, body: hookJSON})
	h, err := s.client.Hooks.Schedule(context.Background(), ScheduleHookRequest{Path: "/x", Data: map[string]int{"a": 1}, PostIn: Delay(90 * time.Minute)})
	require.NoError(t, err)
	require.NotEmpty(t, h.ID, "no hook")
	reqs := s.requests()
	require.Len(t, reqs, 2, "requests")
	k1, k2 := reqs[0].Header.Get("Idempotency-Key"), reqs[1].Header.Get("Idempotency-Key")
	require.NotEmpty(t, k1, "no idempotency key")
	require.Equal(t, k1, k2, "want one key, sent twice")
	require.Equal(t, `{"path":"/x","data":{"a":1},"postIn":"1h30m"}`, s.body(0), "body")
	require.Equal(t, "application/json", reqs[0].Header.Get("Content-Type"), "content type")
}

func TestScheduleKeepsTheCallersKey(t *testing.T) {
	t.Parallel()
	s := setup(t, answer{status: 201, body: hookJSON})
	_, err := s.client.Hooks.Schedule(context.Background(), ScheduleHookRequest{Path: "/x", Data: struct{}{}, PostAt: time.Date(2030, 1, 1, 9, 0, 0, 0, time.FixedZone("", 3600)), IdempotencyKey: "order-42"})
	require.NoError(t, err)
	require.Equal(t, "order-42", s.requests()[0].Header.Get("Idempotency-Key"), "idempotency key")
	require.Equal(t, `{"path":"/x","data":{},"postAt":"2030-01-01T09:00:00+01:00"}`, s.body(0), "body")
}

func TestNetworkErrorIsRetriedForGets(t *testing.T) {
	t.Parallel()
	// A listener that closes every connection at once: no answer ever.
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	}))
	var mu sync.Mutex
	n := 0
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			mu.Lock()
			n++
			mu.Unlock()
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	c := NewClient("k", WithBaseURL(srv.URL), WithRetryPolicy(RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond}))
	_, err := c.Endpoints.List(context.Background())
	var netErr *NetworkError
	require.ErrorAs(t, err, &netErr)
	mu.Lock()
	defer mu.Unlock()
	// The transport may itself retry a request on a fresh connection once,
	// so count at least one connection per attempt.
	require.GreaterOrEqual(t, n, 3, "connections for 3 attempts")
}

func TestErrorNamesTheField(t *testing.T) {
	t.Parallel()
	s := setup(t, answer{status: 400, header: map[string]string{"X-Request-Id": "req-1"},
		body: `{"error":"invalid request","code":"invalid_request","details":[{"field":"retryOverride.minRetries","message":"must be 1 to 15"}],"requestId":"req-1"}`})
	_, err := s.client.Hooks.Schedule(context.Background(), ScheduleHookRequest{Path: "/x", Data: map[string]any{}, PostIn: "1s"})
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, 400, apiErr.StatusCode, "%+v", apiErr)
	require.Equal(t, CodeInvalidRequest, apiErr.Code, "%+v", apiErr)
	require.Equal(t, "req-1", apiErr.RequestID, "%+v", apiErr)
	msg, ok := apiErr.Field("retryOverride.minRetries")
	require.True(t, ok, "no detail for retryOverride.minRetries in %+v", apiErr)
	require.Equal(t, "must be 1 to 15", msg, "the field's message")
	require.EqualError(t, apiErr, "sundial: 400 invalid_request: invalid request (retryOverride.minRetries: must be 1 to 15) [request req-1]")
	require.Len(t, s.requests(), 1, "requests: a 400 was retried")
}

func TestPatchSendsOnlyWhatIsSet(t *testing.T) {
	t.Parallel()
	s := setup(t, answer{status: 200, body: `{"data":{"id":"p","maxConcurrency":null}}`})
	p, err := s.client.Project.Update(context.Background(), ProjectPatch{
		Name:                Ptr("Acme"),
		AuthorizationHeader: SetNull[string](),
		MaxConcurrency:      SetTo(8),
		RetentionDays:       Ptr(45),
		Alerts:              &AlertSettingsPatch{OwnerEmails: []string{}},
		OrderingOnFailure:   Ptr(OrderingHold),
	})
	require.NoError(t, err)
	require.Nil(t, p.MaxConcurrency, "a null maxConcurrency")
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(s.body(0)), &raw), "body %s", s.body(0))
	got := make(map[string]string, len(raw))
	for k, v := range raw {
		got[k] = string(v)
	}
	want := map[string]string{"name": `"Acme"`, "authorizationHeader": "null", "maxConcurrency": "8", "retentionDays": "45",
		"alerts": `{"ownerEmails":[]}`, "orderingOnFailure": `"hold"`}
	require.Equal(t, want, got, "body %s", s.body(0))
	require.Equal(t, http.MethodPatch, s.requests()[0].Method)
}

func TestAsyncAnswersCarryNoAPIKey(t *testing.T) {
	t.Parallel()
	s := setup(t,
		answer{status: 503, body: "busy"},
		answer{status: 200, body: `{"data":{"status":"completed"}}`},
		answer{status: 410, body: `{"error":"the async timeout passed","code":"gone","requestId":"r"}`})
	ack := s.srv.URL + "/v1/async/0192f0c4-9b1e-7c3a-8f00-1a2b3c4d5e6f/1/secret-token/ack"
	got, err := s.client.Async.Ack(context.Background(), ack, map[string]int{"processed": 42})
	require.NoError(t, err)
	require.Equal(t, "completed", got.Status, "status")
	reqs := s.requests()
	require.Len(t, reqs, 2, "requests: the 503 should be retried once")
	require.Equal(t, "/v1/async/0192f0c4-9b1e-7c3a-8f00-1a2b3c4d5e6f/1/secret-token/ack", reqs[1].URL.Path)
	require.Empty(t, reqs[1].Header.Get("X-API-Key"), "the API key went to an async URL")
	require.Equal(t, `{"processed":42}`, s.body(1), "ack body")
	_, err = s.client.Async.Nack(context.Background(), strings.TrimSuffix(ack, "ack")+"nack", "out of stock")
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, CodeGone, apiErr.Code, "error %v", err)
	require.Equal(t, `{"reason":"out of stock"}`, s.body(2), "nack body")
	require.NotContains(t, err.Error(), "secret-token", "the token shows in the error")
}

func TestAsyncRefusesANonHTTPURL(t *testing.T) {
	t.Parallel()
	c := NewClient("")
	_, err := c.Async.Ack(context.Background(), "file:///etc/passwd", nil)
	require.Error(t, err, "a file: URL was taken")
}

func TestDelay(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		time.Second: "1s", 90 * time.Second: "1m30s", 90 * time.Minute: "1h30m",
		36 * time.Hour: "1d12h", 1500 * time.Millisecond: "2s", 0: "0s",
	} {
		require.Equal(t, want, Delay(d), "Delay(%s)", d)
	}
}

func TestEmptyIDsAreRefusedBeforeSending(t *testing.T) {
	t.Parallel()
	s := setup(t)
	ctx := context.Background()
	calls := map[string]func() error{
		"Hooks.Get":          func() error { _, err := s.client.Hooks.Get(ctx, ""); return err },
		"Hooks.Delete":       func() error { return s.client.Hooks.Delete(ctx, "") },
		"Hooks.Attempts":     func() error { _, err := s.client.Hooks.Attempts(ctx, ""); return err },
		"APIKeys.Revoke":     func() error { return s.client.APIKeys.Revoke(ctx, "") },
		"SigningKeys.Revoke": func() error { return s.client.SigningKeys.Revoke(ctx, "") },
		"Channels.Get":       func() error { _, err := s.client.Channels.Get(ctx, ""); return err },
		"Channels.Update":    func() error { _, err := s.client.Channels.Update(ctx, "", ChannelPatch{}); return err },
		"Channels.Delete":    func() error { return s.client.Channels.Delete(ctx, "") },
		"Channels.Sends":     func() error { _, err := s.client.Channels.Sends(ctx, "", 0); return err },
		"Channels.Test":      func() error { _, err := s.client.Channels.Test(ctx, ""); return err },
		"Async.Ack":          func() error { _, err := s.client.Async.Ack(ctx, "", nil); return err },
		"Async.Nack":         func() error { _, err := s.client.Async.Nack(ctx, "", "x"); return err },
		"OrderingKeys.Get":   func() error { _, err := s.client.OrderingKeys.Get(ctx, ""); return err },
		"OrderingKeys.Resume": func() error {
			_, err := s.client.OrderingKeys.Resume(ctx, "")
			return err
		},
	}
	for name, call := range calls {
		require.ErrorIs(t, call(), ErrMissingID, name)
	}
	require.Empty(t, s.requests(), "requests sent")
}
