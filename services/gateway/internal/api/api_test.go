package api_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sundial-run/sundial/testkit/logtest"
	"github.com/sundial-run/sundial/testkit/secrettest"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sundial-run/sundial/services/gateway/internal/api"
	"github.com/sundial-run/sundial/services/gateway/internal/apikey"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
	"github.com/sundial-run/sundial/services/gateway/openapi/contract"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

func TestMain(m *testing.M) {
	// What telemetry.Setup installs in the service.
	otel.SetTextMapPropagator(propagation.TraceContext{})
	pgtest.Main(m)
}

type bundle struct {
	server  *httptest.Server
	logs    *logtest.Buffer
	spans   *tracetest.SpanRecorder
	project project.Created
}

// setup serves the API with real key verification but no hook store (a
// handler that reaches it panics) and no database behind readiness: the
// faults these tests need.
func setup(t *testing.T) bundle {
	t.Helper()
	pool, _ := pgtest.NewPool(t)
	created, err := project.Create(t.Context(), pool, secrettest.Keyring(), "Acme", "example.com")
	require.NoError(t, err)

	logs := &logtest.Buffer{}
	spans := tracetest.NewSpanRecorder()
	handler := api.New(api.Deps{
		Tracing: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)),
		Config:  api.Config{HeaderPrefix: "Sundial", MaxDataBytes: 1024},
		Log:     slog.New(slog.NewJSONHandler(logs, nil)),
		Keys:    apikey.NewVerifier(store.New(pool)),
	})
	server := httptest.NewServer(handler)
	t.Cleanup(server.Close)
	return bundle{server: server, logs: logs, spans: spans, project: created}
}

type errorBody struct {
	Error     string `json:"error"`
	Code      string `json:"code"`
	RequestID string `json:"requestId"`
}

func get(t *testing.T, url, key string) (*http.Response, errorBody) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	res, err := contract.Client(t).Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var body errorBody
	require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
	return res, body
}

func TestPanicBecomesA500AndIsLogged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res, body := get(t, b.server.URL+"/v1/hooks/"+uuid.NewString(), b.project.APIKey)
	require.Equal(t, http.StatusInternalServerError, res.StatusCode)
	require.Equal(t, "internal_error", body.Code)
	require.Equal(t, "internal server error", body.Error, "the fault is not shown to the client")
	require.Equal(t, res.Header.Get("X-Request-Id"), body.RequestID)

	logs := b.logs.String()
	require.Contains(t, logs, `"request_id":"`+body.RequestID+`"`)
	require.Contains(t, logs, `"level":"ERROR"`)
	require.Contains(t, logs, "panic")
	require.Contains(t, logs, "stack")
	require.NotContains(t, logs, b.project.APIKey)

	res, _ = get(t, b.server.URL+"/healthz", "")
	require.Equal(t, http.StatusOK, res.StatusCode, "the server keeps serving")
}

// TestHealthAndReadinessDoNotDependOnTheDatabase: the API has no database
// here, and both probes answer 200 (health.go says why).
func TestHealthAndReadinessDoNotDependOnTheDatabase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, path := range []string{"/healthz", "/readyz"} {
		res, _ := get(t, b.server.URL+path, "")
		require.Equal(t, http.StatusOK, res.StatusCode, path)
		require.NotEmpty(t, res.Header.Get("X-Request-Id"), path)
		require.True(t, strings.HasPrefix(res.Header.Get("Content-Type"), "application/json"), path)
	}
}

func TestEachRequestHasAServerSpanContinuingTheCallersTrace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, b.server.URL+"/v1/hooks/"+uuid.NewString(), nil)
	require.NoError(t, err)
	req.Header.Set("X-API-Key", b.project.APIKey)
	req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	res, err := contract.Client(t).Do(req)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())

	ended := b.spans.Ended()
	require.Len(t, ended, 1)
	span := ended[0]
	require.Equal(t, "GET /v1/hooks/:id", span.Name())
	require.Equal(t, trace.SpanKindServer, span.SpanKind())
	require.Equal(t, traceID, span.SpanContext().TraceID().String())
	require.True(t, span.Parent().IsRemote())
	require.Contains(t, span.Attributes(), attribute.Int("http.response.status_code", http.StatusInternalServerError))
	require.Contains(t, span.Attributes(), attribute.String("sundial.request_id", res.Header.Get("X-Request-Id")))
	require.Equal(t, codes.Error, span.Status().Code)
}

func TestAMalformedParameterIsA400NamingIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res, body := get(t, b.server.URL+"/v1/hooks?limit=ten", b.project.APIKey)
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	require.Equal(t, "invalid_request", body.Code)
	require.Contains(t, body.Error, "limit: must be a number")
}
