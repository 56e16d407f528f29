package sundial

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
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
	if err != nil {
		t.Fatal(err)
	}
	if h.Path != "/x" || h.Status != StatusPending || string(h.Data) != `{"a":1}` {
		t.Fatalf("decoded %+v", h)
	}
	r := s.requests()[0]
	if r.URL.Path != "/v1/hooks/0192f0c4-9b1e-7c3a-8f00-1a2b3c4d5e6f" || r.Method != "GET" {
		t.Fatalf("sent %s %s", r.Method, r.URL.Path)
	}
	if r.Header.Get("X-API-Key") != "sdk_test_key" || !strings.HasPrefix(r.Header.Get("User-Agent"), "sundial-go/") {
		t.Fatalf("headers %v", r.Header)
	}
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	s := setup(t,
		answer{status: 503, header: map[string]string{"Retry-After": "1"}, body: `{"error":"database unreachable","code":"unavailable","requestId":"r1"}`},
		answer{status: 200, body: hookJSON})
	_, err := s.client.Hooks.Get(context.Background(), "id")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.requests()); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
	if w := s.recordedWaits(); len(w) != 1 || w[0] != time.Second {
		t.Fatalf("waits %v, want Retry-After's 1s", w)
	}
}

func TestRetryAfterAsAnHTTPDateIsHonoured(t *testing.T) {
	t.Parallel()
	at := time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat)
	s := setup(t, answer{status: 429, header: map[string]string{"Retry-After": at}, body: `{"error":"x","code":"rate_limited","requestId":"r"}`},
		answer{status: 200, body: hookJSON})
	if _, err := s.client.Hooks.Get(context.Background(), "id"); err != nil {
		t.Fatal(err)
	}
	// The date has whole seconds: 2 to 3 s from now.
	if w := s.recordedWaits(); len(w) != 1 || w[0] < time.Second || w[0] > 3*time.Second {
		t.Fatalf("waits %v", w)
	}
}

func TestBackoffDoublesWithJitter(t *testing.T) {
	t.Parallel()
	busy := answer{status: 503, body: "busy"}
	s := setup(t, busy, busy, busy, busy)
	if _, err := s.client.Hooks.Get(context.Background(), "id"); err == nil {
		t.Fatal("no error")
	}
	w := s.recordedWaits()
	if len(w) != 3 {
		t.Fatalf("waits %v, want 3 (4 tries)", w)
	}
	for i, d := range w {
		full := 100 * time.Millisecond << i
		if d < full/2 || d > full {
			t.Errorf("wait %d is %s, want %s to %s", i+1, d, full/2, full)
		}
	}
}

func TestRetryAfterAsHTTPDate(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	if d := parseRetryAfter(now.Add(90*time.Second).Format(http.TimeFormat), now); d != 90*time.Second {
		t.Fatalf("HTTP date: %s", d)
	}
	if d := parseRetryAfter("7", now); d != 7*time.Second {
		t.Fatalf("seconds: %s", d)
	}
	for _, v := range []string{"", "soon", "-3", now.Add(-time.Minute).Format(http.TimeFormat)} {
		if d := parseRetryAfter(v, now); d != 0 {
			t.Fatalf("%q: %s", v, d)
		}
	}
}

func TestRetriesAreBounded(t *testing.T) {
	t.Parallel()
	busy := answer{status: 502, body: "<html>bad gateway</html>"}
	s := setup(t, busy, busy, busy, busy, busy, busy)
	_, err := s.client.Project.Get(context.Background())
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 502 {
		t.Fatalf("error %v", err)
	}
	if !strings.Contains(apiErr.Message, "bad gateway") {
		t.Fatalf("a proxy's page should show in the message: %q", apiErr.Message)
	}
	if n := len(s.requests()); n != 4 {
		t.Fatalf("%d requests, want MaxAttempts = 4", n)
	}
}

func TestRetryAfterBeyondMaxDelayIsNotWaited(t *testing.T) {
	t.Parallel()
	s := setup(t, answer{status: 429, header: map[string]string{"Retry-After": "3600"},
		body: `{"error":"slow down","code":"rate_limited","requestId":"r"}`})
	_, err := s.client.APIKeys.List(context.Background())
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.RetryAfter != time.Hour || apiErr.Code != CodeRateLimited {
		t.Fatalf("error %#v", err)
	}
	if n := len(s.requests()); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
}

func TestRetryStopsAtTheContextDeadline(t *testing.T) {
	t.Parallel()
	s := setup(t, answer{status: 503, header: map[string]string{"Retry-After": "2"}, body: `{"error":"x","code":"unavailable","requestId":"r"}`})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := s.client.Hooks.Get(ctx, "id")
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 {
		t.Fatalf("error %v", err)
	}
	if n := len(s.requests()); n != 1 {
		t.Fatalf("%d requests: a retry after the deadline was attempted", n)
	}
}

func TestPostWithoutIdempotencyKeyIsNotRetried(t *testing.T) {
	t.Parallel()
	s := setup(t, answer{status: 503, header: map[string]string{"Retry-After": "1"}, body: `{"error":"x","code":"unavailable","requestId":"r"}`})
	_, err := s.client.Hooks.BulkCancel(context.Background(), BulkActionRequest{HookIDs: []string{"a"}})
	if err == nil {
		t.Fatal("no error")
	}
	if n := len(s.requests()); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
}

func TestScheduleSendsOneIdempotencyKeyAcrossRetries(t *testing.T) {
	t.Parallel()
	s := setup(t, answer{status: 504, body: "timeout"}, answer{status: 201, body: hookJSON})
	h, err := s.client.Hooks.Schedule(context.Background(), ScheduleHookRequest{Path: "/x", Data: map[string]int{"a": 1}, PostIn: Delay(90 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if h.ID == "" {
		t.Fatal("no hook")
	}
	reqs := s.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	k1, k2 := reqs[0].Header.Get("Idempotency-Key"), reqs[1].Header.Get("Idempotency-Key")
	if k1 == "" || k1 != k2 {
		t.Fatalf("keys %q, %q: want one key, sent twice", k1, k2)
	}
	if got := s.body(0); got != `{"path":"/x","data":{"a":1},"postIn":"1h30m"}` {
		t.Fatalf("body %s", got)
	}
	if reqs[0].Header.Get("Content-Type") != "application/json" {
		t.Fatalf("content type %q", reqs[0].Header.Get("Content-Type"))
	}
}

func TestScheduleKeepsTheCallersKey(t *testing.T) {
	t.Parallel()
	s := setup(t, answer{status: 201, body: hookJSON})
	_, err := s.client.Hooks.Schedule(context.Background(), ScheduleHookRequest{Path: "/x", Data: struct{}{}, PostAt: time.Date(2030, 1, 1, 9, 0, 0, 0, time.FixedZone("", 3600)), IdempotencyKey: "order-42"})
	if err != nil {
		t.Fatal(err)
	}
	if k := s.requests()[0].Header.Get("Idempotency-Key"); k != "order-42" {
		t.Fatalf("key %q", k)
	}
	if got := s.body(0); got != `{"path":"/x","data":{},"postAt":"2030-01-01T09:00:00+01:00"}` {
		t.Fatalf("body %s", got)
	}
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
	if !errors.As(err, &netErr) {
		t.Fatalf("error %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	// The transport may itself retry a request on a fresh connection once,
	// so count at least one connection per attempt.
	if n < 3 {
		t.Fatalf("%d connections for 3 attempts", n)
	}
}

func TestErrorNamesTheField(t *testing.T) {
	t.Parallel()
	s := setup(t, answer{status: 400, header: map[string]string{"X-Request-Id": "req-1"},
		body: `{"error":"invalid request","code":"invalid_request","details":[{"field":"retryOverride.minRetries","message":"must be 1 to 15"}],"requestId":"req-1"}`})
	_, err := s.client.Hooks.Schedule(context.Background(), ScheduleHookRequest{Path: "/x", Data: map[string]any{}, PostIn: "1s"})
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("error %v", err)
	}
	if apiErr.StatusCode != 400 || apiErr.Code != CodeInvalidRequest || apiErr.RequestID != "req-1" {
		t.Fatalf("%+v", apiErr)
	}
	if msg, ok := apiErr.Field("retryOverride.minRetries"); !ok || msg != "must be 1 to 15" {
		t.Fatalf("field: %q %v", msg, ok)
	}
	want := "sundial: 400 invalid_request: invalid request (retryOverride.minRetries: must be 1 to 15) [request req-1]"
	if apiErr.Error() != want {
		t.Fatalf("message %q", apiErr.Error())
	}
	if n := len(s.requests()); n != 1 {
		t.Fatalf("a 400 was retried: %d requests", n)
	}
}

func TestPatchSendsOnlyWhatIsSet(t *testing.T) {
	t.Parallel()
	s := setup(t, answer{status: 200, body: `{"data":{"id":"p","maxConcurrency":null}}`})
	p, err := s.client.Project.Update(context.Background(), ProjectPatch{
		Name:                Ptr("Acme"),
		AuthorizationHeader: SetNull[string](),
		MaxConcurrency:      SetTo(8),
		Alerts:              &AlertSettingsPatch{OwnerEmails: []string{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.MaxConcurrency != nil {
		t.Fatalf("maxConcurrency %v", *p.MaxConcurrency)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s.body(0)), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"name": `"Acme"`, "authorizationHeader": "null", "maxConcurrency": "8", "alerts": `{"ownerEmails":[]}`}
	if len(got) != len(want) {
		t.Fatalf("body %s", s.body(0))
	}
	for k, v := range want {
		if string(got[k]) != v {
			t.Fatalf("%s = %s, want %s (body %s)", k, got[k], v, s.body(0))
		}
	}
	if s.requests()[0].Method != http.MethodPatch {
		t.Fatal("not a PATCH")
	}
}

func TestAsyncAnswersCarryNoAPIKey(t *testing.T) {
	t.Parallel()
	s := setup(t,
		answer{status: 503, body: "busy"},
		answer{status: 200, body: `{"data":{"status":"completed"}}`},
		answer{status: 410, body: `{"error":"the async timeout passed","code":"gone","requestId":"r"}`})
	ack := s.srv.URL + "/v1/async/0192f0c4-9b1e-7c3a-8f00-1a2b3c4d5e6f/1/secret-token/ack"
	got, err := s.client.Async.Ack(context.Background(), ack, map[string]int{"processed": 42})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "completed" {
		t.Fatalf("status %q", got.Status)
	}
	reqs := s.requests()
	if len(reqs) != 2 || reqs[1].URL.Path != "/v1/async/0192f0c4-9b1e-7c3a-8f00-1a2b3c4d5e6f/1/secret-token/ack" {
		t.Fatalf("requests %d", len(reqs))
	}
	if k := reqs[1].Header.Get("X-API-Key"); k != "" {
		t.Fatalf("the API key went to an async URL: %q", k)
	}
	if s.body(1) != `{"processed":42}` {
		t.Fatalf("body %s", s.body(1))
	}
	_, err = s.client.Async.Nack(context.Background(), strings.TrimSuffix(ack, "ack")+"nack", "out of stock")
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Code != CodeGone {
		t.Fatalf("error %v", err)
	}
	if s.body(2) != `{"reason":"out of stock"}` {
		t.Fatalf("nack body %s", s.body(2))
	}
	if strings.Contains(err.Error(), "secret-token") {
		t.Fatalf("the token shows in %q", err)
	}
}

func TestAsyncRefusesANonHTTPURL(t *testing.T) {
	t.Parallel()
	c := NewClient("")
	if _, err := c.Async.Ack(context.Background(), "file:///etc/passwd", nil); err == nil {
		t.Fatal("no error")
	}
}

func TestDelay(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		time.Second: "1s", 90 * time.Second: "1m30s", 90 * time.Minute: "1h30m",
		36 * time.Hour: "1d12h", 1500 * time.Millisecond: "2s", 0: "0s",
	} {
		if got := Delay(d); got != want {
			t.Errorf("Delay(%s) = %q, want %q", d, got, want)
		}
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
	}
	for name, call := range calls {
		err := call()
		if !errors.Is(err, ErrMissingID) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if n := len(s.requests()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}
