package api_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/api"
	"github.com/sundial-run/sundial/services/gateway/internal/apikey"
	"github.com/sundial-run/sundial/services/gateway/internal/hook"
	"github.com/sundial-run/sundial/services/gateway/internal/keycache"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
	"github.com/sundial-run/sundial/services/gateway/internal/ratelimit"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

// manualClock is the rate limiter's clock in these tests: they move it
// instead of sleeping.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type limitsBundle struct {
	t       *testing.T
	server  *httptest.Server
	pool    *pgxpool.Pool
	q       *store.Queries
	clock   *manualClock
	project project.Created
}

// setupLimits serves the hook routes with real keys, quota and rate
// limiting, the limiter on a manual clock; configure changes the API's
// dependencies (a key cache).
func setupLimits(t *testing.T, configure ...func(*api.Deps)) limitsBundle {
	t.Helper()
	pool, _ := pgtest.NewPool(t)
	created, err := project.Create(t.Context(), pool, secrettest.Keyring(), "Acme", "example.com")
	require.NoError(t, err)
	q := store.New(pool)
	clock := &manualClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	deps := api.Deps{
		Config: api.Config{HeaderPrefix: "Sundial", MaxDataBytes: 1024},
		Log:    slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Keys:   apikey.NewVerifier(q),
		Hooks:  hook.NewService(pool),
		Limits: api.LimitsDeps{
			Reader: quota.NewReader(q),
			Rate:   ratelimit.New(ratelimit.Options{Now: clock.Now}),
		},
	}
	for _, f := range configure {
		f(&deps)
	}
	handler := api.New(deps)
	server := httptest.NewServer(handler)
	t.Cleanup(server.Close)
	return limitsBundle{t: t, server: server, pool: pool, q: q, clock: clock, project: created}
}

type limitsResponse struct {
	status int
	header http.Header
	code   string
}

func (b limitsBundle) send(method, path, key, body string) limitsResponse {
	b.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(b.t.Context(), method, b.server.URL+path, r)
	require.NoError(b.t, err)
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(b.t, err)
	defer res.Body.Close()
	var e struct {
		Code string `json:"code"`
	}
	raw, err := io.ReadAll(res.Body)
	require.NoError(b.t, err)
	if res.StatusCode >= 400 {
		require.NoError(b.t, json.Unmarshal(raw, &e), string(raw))
	}
	return limitsResponse{status: res.StatusCode, header: res.Header, code: e.Code}
}

func (b limitsBundle) setRate(perSecond, burst int) {
	b.t.Helper()
	require.NoError(b.t, quota.SetRateLimit(b.t.Context(), b.q, b.project.ID, quota.RateLimit{PerSecond: perSecond, Burst: burst}))
}

const hookBody = `{"path":"/a","data":{},"postIn":"1m"}`

func TestEveryAuthenticatedResponseCarriesTheLimits(t *testing.T) {
	t.Parallel()
	t.Run("keys read each time", func(t *testing.T) {
		t.Parallel()
		everyResponseCarriesTheLimits(t, setupLimits(t))
	})
	// The quota standing is then read only for the answers that do not
	// report a create's count.
	t.Run("keys cached", func(t *testing.T) {
		t.Parallel()
		everyResponseCarriesTheLimits(t, setupLimits(t, func(d *api.Deps) { d.KeyCache = keycache.New(time.Hour, 10) }))
	})
}

func everyResponseCarriesTheLimits(t *testing.T, b limitsBundle) {
	missing := "/v1/hooks/" + uuid.NewString()
	tests := []struct {
		name, method, path, body string
		status                   int
		used                     string
	}{
		{"a create", http.MethodPost, "/v1/hooks", hookBody, http.StatusCreated, "1"},
		{"a read", http.MethodGet, missing, "", http.StatusNotFound, "1"},
		{"a refused request", http.MethodPost, "/v1/hooks", `{"path":"/a"}`, http.StatusBadRequest, "1"},
		{"another create", http.MethodPost, "/v1/hooks", hookBody, http.StatusCreated, "2"},
		{"a delete", http.MethodDelete, missing, "", http.StatusNotFound, "2"},
	}
	remaining := 200
	for _, tt := range tests {
		res := b.send(tt.method, tt.path, b.project.APIKey, tt.body)
		require.Equal(t, tt.status, res.status, tt.name)
		require.Equal(t, "100000", res.header.Get("Sundial-HookQuota-Limit"), tt.name)
		require.Equal(t, tt.used, res.header.Get("Sundial-HookQuota-Usage"), tt.name)
		require.NotEmpty(t, res.header.Get("Sundial-HookQuota-Remaining"), tt.name)
		_, err := time.Parse(time.RFC3339, res.header.Get("Sundial-HookQuota-Resets-At"))
		require.NoError(t, err, tt.name)
		remaining--
		require.Equal(t, "200", res.header.Get("RateLimit-Limit"), tt.name)
		require.Equal(t, strconv.Itoa(remaining), res.header.Get("RateLimit-Remaining"), tt.name)
		require.Equal(t, "1", res.header.Get("RateLimit-Reset"), tt.name, "a token comes back within a second at 100/s")
		require.Empty(t, res.header.Get("Retry-After"), tt.name)
	}
	// Each header once, spelled as documented.
	res := b.send(http.MethodGet, missing, b.project.APIKey, "")
	for _, name := range []string{"Sundial-HookQuota-Usage", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} {
		require.Len(t, res.header.Values(name), 1, name)
	}
}

func TestUnauthenticatedResponsesCarryNoLimits(t *testing.T) {
	t.Parallel()
	b := setupLimits(t)
	for _, key := range []string{"", "sdk_aaaaaaaa_" + strings.Repeat("A", 43)} {
		res := b.send(http.MethodGet, "/v1/hooks/"+uuid.NewString(), key, "")
		require.Equal(t, http.StatusUnauthorized, res.status)
		require.Empty(t, res.header.Get("RateLimit-Limit"))
		require.Empty(t, res.header.Get("Sundial-HookQuota-Limit"))
	}
}

func TestTheRateLimitRefusesWithRetryAfter(t *testing.T) {
	t.Parallel()
	b := setupLimits(t)
	b.setRate(2, 3)
	for i := range 3 {
		res := b.send(http.MethodPost, "/v1/hooks", b.project.APIKey, hookBody)
		require.Equal(t, http.StatusCreated, res.status, "request %d of the burst", i+1)
		require.Equal(t, strconv.Itoa(2-i), res.header.Get("RateLimit-Remaining"))
	}
	res := b.send(http.MethodPost, "/v1/hooks", b.project.APIKey, hookBody)
	require.Equal(t, http.StatusTooManyRequests, res.status)
	require.Equal(t, "rate_limited", res.code)
	require.Equal(t, "1", res.header.Get("Retry-After"), "half a second, rounded up")
	require.Equal(t, "3", res.header.Get("RateLimit-Limit"))
	require.Equal(t, "0", res.header.Get("RateLimit-Remaining"))
	require.Equal(t, "2", res.header.Get("RateLimit-Reset"), "1.5 s to refill three tokens at 2/s")
	require.Equal(t, "3", res.header.Get("Sundial-HookQuota-Usage"), "the refused request counted nothing")

	res = b.send(http.MethodGet, "/v1/hooks/"+uuid.NewString(), b.project.APIKey, "")
	require.Equal(t, http.StatusTooManyRequests, res.status, "every route of the key is limited")

	b.clock.Advance(500 * time.Millisecond)
	res = b.send(http.MethodPost, "/v1/hooks", b.project.APIKey, hookBody)
	require.Equal(t, http.StatusCreated, res.status, "a token came back")
	require.Equal(t, "4", res.header.Get("Sundial-HookQuota-Usage"))
}

func TestEachAPIKeyHasItsOwnBucket(t *testing.T) {
	t.Parallel()
	b := setupLimits(t)
	b.setRate(1, 1)
	other, err := apikey.NewService(b.pool).Create(t.Context(), b.project.ID, "second")
	require.NoError(t, err)

	require.Equal(t, http.StatusCreated, b.send(http.MethodPost, "/v1/hooks", b.project.APIKey, hookBody).status)
	require.Equal(t, http.StatusTooManyRequests, b.send(http.MethodPost, "/v1/hooks", b.project.APIKey, hookBody).status)
	require.Equal(t, http.StatusCreated, b.send(http.MethodPost, "/v1/hooks", other.Plain, hookBody).status,
		"the project's other key has its own bucket")
}

func TestTheQuotaIsExhaustedWithRetryAfterToTheReset(t *testing.T) {
	t.Parallel()
	b := setupLimits(t)
	require.NoError(t, project.SetPlan(t.Context(), b.q, b.project.ID, project.Plan{Quota: 1, HardCapPercent: 100}))
	require.Equal(t, http.StatusCreated, b.send(http.MethodPost, "/v1/hooks", b.project.APIKey, hookBody).status)
	res := b.send(http.MethodPost, "/v1/hooks", b.project.APIKey, hookBody)
	require.Equal(t, http.StatusTooManyRequests, res.status)
	require.Equal(t, "quota_exhausted", res.code)
	resetsAt, err := time.Parse(time.RFC3339, res.header.Get("Sundial-HookQuota-Resets-At"))
	require.NoError(t, err)
	retryAfter, err := strconv.Atoi(res.header.Get("Retry-After"))
	require.NoError(t, err)
	require.Positive(t, retryAfter)
	require.LessOrEqual(t, time.Duration(retryAfter)*time.Second, time.Until(resetsAt)+time.Minute,
		"the wait ends when the period does (a minute of leeway between the clocks)")
	require.Equal(t, "1", res.header.Get("Sundial-HookQuota-Usage"))
	require.Equal(t, "0", res.header.Get("Sundial-HookQuota-Remaining"))
	require.Equal(t, "198", res.header.Get("RateLimit-Remaining"), "the rate limit headers are there too")
}
