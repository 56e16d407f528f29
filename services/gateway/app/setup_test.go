package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sundial-run/sundial/testkit/logtest"
	"github.com/sundial-run/sundial/testkit/secrettest"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
	"github.com/sundial-run/sundial/services/gateway/openapi/contract"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type bundle struct {
	t     *testing.T
	ctx   context.Context
	app   *app.App
	base  string
	dbURL string
	q     *store.Queries
	tq    *storetest.Queries
	creds app.Credentials
	logs  *logtest.Buffer
	// client checks every exchange against the OpenAPI document; raw does
	// not, for requests the document has no answer for (a 501).
	client *http.Client
	raw    *http.Client
	// prefix is the configured SUNDIAL_HEADER_PREFIX.
	prefix string
	// stop shuts the gateway down (as SIGTERM does); the test's cleanup
	// waits for it to stop.
	stop context.CancelFunc
}

// testConfig is a configuration on dbURL and a NATS server of the test's own.
func testConfig(t testing.TB, dbURL string) app.Config {
	t.Helper()
	return app.Config{
		DatabaseURL:       dbURL,
		NATSURL:           natstest.Start(t, natstest.Options{}).ClientURL(),
		StreamReplicas:    event.DefaultReplicas,
		HTTPAddr:          "127.0.0.1:0",
		AdminAddr:         "127.0.0.1:0",
		LogLevel:          "debug",
		HeaderPrefix:      "Sundial",
		MaxDataBytes:      app.DefaultMaxDataBytes,
		ShutdownTimeout:   5 * time.Second,
		DatabaseMaxConns:  8,
		CreateBatch:       app.DefaultCreateBatch,
		CreateLinger:      app.DefaultCreateLinger,
		CreateInFlight:    app.DefaultCreateInFlight,
		KeyCacheTTL:       app.DefaultKeyCacheTTL,
		MaxConnections:    app.DefaultMaxConnections,
		BodyBytesInFlight: app.DefaultBodyBytesInFlight,
		IdleTimeout:       app.DefaultIdleTimeout,
		// Tests send bad keys on purpose, many from the one address.
		AuthFailuresPerMinute: 0,
		SecretKeys:            secrettest.Keys,
		ListenerResumeWindow:  app.DefaultResumeWindow,

		ListenerMaxSockets:        app.DefaultListenerMaxSockets,
		ListenerMaxProjectSockets: app.DefaultListenerMaxProjectSockets,
	}
}

// setup boots the gateway on a fresh database with one project, and stops
// it when the test ends, checking that it stopped cleanly and never logged
// the project's API key.
func setup(t *testing.T, configure ...func(*app.Config)) bundle {
	t.Helper()
	dbURL := pgtest.NewDB(t)
	cfg := testConfig(t, dbURL)
	for _, f := range configure {
		f(&cfg)
	}
	logs := &logtest.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a, err := app.New(t.Context(), cfg, log)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()

	creds, err := app.CreateProject(t.Context(), app.Database{URL: dbURL, SecretKeys: secrettest.Keys}, "Acme", "hooks.example.com")
	require.NoError(t, err)
	pool, err := postgres.Connect(t.Context(), dbURL, 2)
	require.NoError(t, err)
	t.Cleanup(func() {
		pool.Close()
		cancel()
		require.NoError(t, <-done)
		require.NotContains(t, logs.String(), creds.APIKey)
		require.NotContains(t, logs.String(), creds.SigningKey)
	})
	// The test's own connections, closed before the server stops (cleanups
	// run last-registered first): a connection the transport dialled but
	// never used would otherwise hold up the server's shutdown for 5 s.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(transport.CloseIdleConnections)
	return bundle{
		t: t, ctx: t.Context(), app: a, base: "http://" + a.Addr(), dbURL: dbURL,
		q: store.New(pool), tq: storetest.New(pool), creds: creds, logs: logs,
		client: &http.Client{Transport: contract.Transport(t, transport, contract.WithHeaderPrefix(cfg.HeaderPrefix))},
		raw:    &http.Client{Transport: transport},
		prefix: cfg.HeaderPrefix, stop: cancel,
	}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// errorBody is the error format, decoded strictly so that a stray field
// fails the test.
type errorBody struct {
	Error     string `json:"error"`
	Code      string `json:"code"`
	RequestID string `json:"requestId"`
	Details   []struct {
		Field   string `json:"field"`
		Message string `json:"message"`
	} `json:"details"`
}

// hookJSON is the Hook resource.
type hookJSON struct {
	ID                  string          `json:"id"`
	Path                string          `json:"path"`
	Domain              string          `json:"domain"`
	Data                json.RawMessage `json:"data"`
	PostAt              string          `json:"postAt"`
	PostAtLocal         string          `json:"postAtLocal"`
	Timezone            string          `json:"timezone"`
	Tzdata              string          `json:"tzdata"`
	Status              string          `json:"status"`
	Attempts            int             `json:"attempts"`
	PostDurationSeconds float64         `json:"postDurationSeconds"`
	CreatedAt           string          `json:"createdAt"`
	UpdatedAt           string          `json:"updatedAt"`
	RetryOverride       json.RawMessage `json:"retryOverride"`
	Key                 string          `json:"key"`
	Tags                []string        `json:"tags"`
	OrderingKey         string          `json:"orderingKey"`
}

// header sets (or with an empty value removes) a request header.
func header(name, value string) func(*http.Request) {
	return func(r *http.Request) {
		if value == "" {
			r.Header.Del(name)
			return
		}
		r.Header.Set(name, value)
	}
}

// do sends a request with the project's key (and a JSON Content-Type when
// there is a body) and checks what every response must have: a request id,
// and on errors the error format with that same id.
func (b bundle) do(method, path string, body io.Reader, mods ...func(*http.Request)) response {
	b.t.Helper()
	req, err := http.NewRequestWithContext(b.ctx, method, b.base+path, body)
	require.NoError(b.t, err)
	req.Header.Set("X-API-Key", b.creds.APIKey)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, m := range mods {
		m(req)
	}
	res, err := b.client.Do(req)
	require.NoError(b.t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(b.t, err)

	id := res.Header.Get("X-Request-Id")
	_, err = uuid.Parse(id)
	require.NoError(b.t, err, "X-Request-Id %q on %s %s", id, method, path)
	if res.StatusCode != http.StatusNoContent {
		require.Equal(b.t, "application/json", strings.Split(res.Header.Get("Content-Type"), ";")[0])
	}
	var e errorBody
	if res.StatusCode >= 400 {
		e = decodeStrict[errorBody](b.t, raw)
		require.Equal(b.t, id, e.RequestID)
		require.NotEmpty(b.t, e.Error)
		require.NotEmpty(b.t, e.Code)
	}
	if authenticated(req, res.StatusCode, e) {
		// Every authenticated response reports the quota and the rate limit.
		for _, h := range []string{b.prefix + "-HookQuota-Limit", b.prefix + "-HookQuota-Usage", b.prefix + "-HookQuota-Remaining",
			b.prefix + "-HookQuota-Resets-At", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} {
			require.NotEmpty(b.t, res.Header.Get(h), "%s on %s %s -> %d", h, method, path, res.StatusCode)
		}
	}
	return response{status: res.StatusCode, header: res.Header, body: raw}
}

// authenticated reports whether a request reached the API as an
// authenticated one: it carried a key that was accepted (not a 401), on a
// route and method of the API (not a router 404 or 405), other than the
// public OpenAPI document.
func authenticated(req *http.Request, status int, e errorBody) bool {
	switch {
	case req.Header.Get("X-API-Key") == "" || req.URL.Path == "/v1/openapi.json":
		return false
	case status == http.StatusUnauthorized || status == http.StatusMethodNotAllowed:
		return false
	case status == http.StatusServiceUnavailable:
		return false // the database is down: the key could not be looked up
	case status == http.StatusNotFound && e.Error == "no such route":
		return false
	}
	return strings.HasPrefix(req.URL.Path, "/v1/")
}

func (b bundle) post(body string, mods ...func(*http.Request)) response {
	b.t.Helper()
	return b.do(http.MethodPost, "/v1/hooks", strings.NewReader(body), mods...)
}

func decodeStrict[T any](t *testing.T, raw []byte) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&v), string(raw))
	return v
}

func (r response) errorBody(t *testing.T) errorBody {
	t.Helper()
	return decodeStrict[errorBody](t, r.body)
}

func (r response) hook(t *testing.T) hookJSON {
	t.Helper()
	return decodeStrict[struct {
		Data hookJSON `json:"data"`
	}](t, r.body).Data
}

// requireError checks an error response's status, code and fields at fault.
func (r response) requireError(t *testing.T, status int, code string, fields ...string) errorBody {
	t.Helper()
	require.Equal(t, status, r.status, string(r.body))
	e := r.errorBody(t)
	require.Equal(t, code, e.Code)
	var got []string
	for _, d := range e.Details {
		require.NotEmpty(t, d.Message)
		got = append(got, d.Field)
	}
	require.ElementsMatch(t, fields, got, string(r.body))
	return e
}

func (b bundle) dbNow() time.Time {
	b.t.Helper()
	now, err := b.q.DatabaseNow(b.ctx)
	require.NoError(b.t, err)
	return now
}

func (b bundle) storedHook(id string) store.Hook {
	b.t.Helper()
	h, err := b.q.GetHook(b.ctx, store.GetHookParams{ProjectID: uuid.MustParse(b.creds.ProjectID), ID: uuid.MustParse(id)})
	require.NoError(b.t, err)
	return h
}
