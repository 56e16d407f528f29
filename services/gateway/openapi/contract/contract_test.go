package contract_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/openapi/contract"
)

// recorder is a testing.TB that keeps the errors reported to it instead of
// failing the test, so that a test can check what the transport reports.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) reported() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.errors, "\n")
}

const (
	requestID = "0192f0c4-9b1e-7c3a-8f00-1a2b3c4d5e6f"
	hookID    = "0192f0c4-9b1e-7c3a-8f00-000000000001"
	validHook = `{"id":"` + hookID + `","path":"/a","domain":"example.com","data":{"k":1},` +
		`"postAt":"2030-01-01T00:00:00Z","status":"pending","attempts":0,"postDurationSeconds":0,` +
		`"createdAt":"2030-01-01T00:00:00Z","updatedAt":"2030-01-01T00:00:00Z"}`
	// validAttempts is a list of one attempt with its recorded headers.
	validAttempts = `{"data":[{"attempt":1,"startedAt":"2030-01-01T00:00:00Z","durationSeconds":0.2,` +
		`"outcome":"success","statusCode":200,"requestHeaders":{"Content-Type":["application/json"]},` +
		`"responseHeaders":{"Set-Cookie":["a=[redacted]","b=[redacted]"]},"responseHeadersOmitted":3}]}`
)

// answer is what a fake gateway sends back.
type answer struct {
	status  int
	headers map[string]string
	body    string
}

type bundle struct {
	rec    *recorder
	server *httptest.Server
	client *http.Client
}

// setup serves a fake gateway that answers every request with a, through a
// transport reporting to a recorder.
func setup(t *testing.T, a answer) bundle {
	t.Helper()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if _, ok := a.headers["X-Request-Id"]; !ok {
			w.Header().Set("X-Request-Id", requestID)
		}
		for k, v := range a.headers {
			if v == "" {
				w.Header().Del(k)
				continue
			}
			w.Header().Set(k, v)
		}
		w.WriteHeader(a.status)
		_, _ = io.WriteString(w, a.body)
	}))
	t.Cleanup(server.Close)
	rec := &recorder{TB: t}
	return bundle{rec: rec, server: server, client: contract.Client(rec)}
}

func (b bundle) send(t *testing.T, method, path, body string, key bool) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, b.server.URL+path, r)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key {
		req.Header.Set("X-API-Key", "sdk_aaaaaaaa_bbbb")
	}
	res, err := b.client.Do(req)
	require.NoError(t, err)
	got, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	require.NotEmpty(t, got, "the body is handed on after the check")
}

func TestAcceptsExchangesThatFollowTheDocument(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		method, path string
		body         string
		key          bool
		answer       answer
	}{
		{"a hook", http.MethodGet, "/v1/hooks/" + hookID, "", true,
			answer{http.StatusOK, map[string]string{"Sundial-HookQuota-Limit": "10"}, `{"data":` + validHook + `}`}},
		{"a created hook", http.MethodPost, "/v1/hooks", `{"path":"/a","data":{},"postIn":"1m"}`, true,
			answer{http.StatusCreated, nil, `{"data":` + validHook + `}`}},
		{"a refused request", http.MethodPost, "/v1/hooks", `{"path":"/a","data":{},"postIn":"1m","postAt":"x"}`, true,
			answer{http.StatusBadRequest, nil, `{"error":"no","code":"invalid_request","details":[{"field":"postAt","message":"no"}],"requestId":"` + requestID + `"}`}},
		{"no key", http.MethodGet, "/v1/hooks/" + hookID, "", false,
			answer{http.StatusUnauthorized, nil, `{"error":"no key","code":"unauthorized","requestId":"` + requestID + `"}`}},
		{"attempts with their headers", http.MethodGet, "/v1/hooks/" + hookID + "/attempts", "", true,
			answer{http.StatusOK, nil, validAttempts}},
		{"an unknown route", http.MethodGet, "/nowhere", "", true,
			answer{http.StatusNotFound, nil, `{"error":"no such route","code":"not_found","requestId":"` + requestID + `"}`}},
		{"a route outside the document", http.MethodGet, "/healthz", "", false,
			answer{http.StatusOK, nil, `{"status":"ok"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tt.answer)
			b.send(t, tt.method, tt.path, tt.body, tt.key)
			require.Empty(t, b.rec.reported())
		})
	}
}

func TestReportsExchangesThatBreakTheDocument(t *testing.T) {
	t.Parallel()
	errBody := `{"error":"no","code":"not_found","requestId":"` + requestID + `"}`
	tests := []struct {
		name         string
		method, path string
		body         string
		answer       answer
		says         string
	}{
		{"a required field missing", http.MethodGet, "/v1/hooks/" + hookID, "",
			answer{http.StatusOK, nil, `{"data":{"id":"` + hookID + `"}}`}, "doesn't match schema"},
		{"a field the document does not describe", http.MethodGet, "/v1/hooks/" + hookID, "",
			answer{http.StatusOK, nil, `{"data":` + strings.Replace(validHook, `"path"`, `"colour":"red","path"`, 1) + `}`}, "colour"},
		{"a wrong type", http.MethodGet, "/v1/hooks/" + hookID, "",
			answer{http.StatusOK, nil, `{"data":` + strings.Replace(validHook, `"attempts":0`, `"attempts":"0"`, 1) + `}`}, "attempts"},
		{"a header's values not a list", http.MethodGet, "/v1/hooks/" + hookID + "/attempts", "",
			answer{http.StatusOK, nil, strings.Replace(validAttempts, `["application/json"]`, `"application/json"`, 1)}, "requestHeaders"},
		{"an omitted count of 0", http.MethodGet, "/v1/hooks/" + hookID + "/attempts", "",
			answer{http.StatusOK, nil, strings.Replace(validAttempts, `"responseHeadersOmitted":3`, `"responseHeadersOmitted":0`, 1)}, "responseHeadersOmitted"},
		{"a status the operation does not have", http.MethodGet, "/v1/hooks/" + hookID, "",
			answer{http.StatusTeapot, nil, errBody}, "status is not supported"},
		{"no request id", http.MethodGet, "/v1/hooks/" + hookID, "",
			answer{http.StatusOK, map[string]string{"X-Request-Id": ""}, `{"data":` + validHook + `}`}, "X-Request-Id"},
		{"a malformed quota header", http.MethodGet, "/v1/hooks/" + hookID, "",
			answer{http.StatusOK, map[string]string{"Sundial-HookQuota-Limit": "lots"}, `{"data":` + validHook + `}`}, "Sundial-HookQuota-Limit"},
		{"an error code the document does not list", http.MethodGet, "/v1/hooks/" + hookID, "",
			answer{http.StatusNotFound, nil, strings.Replace(errBody, "not_found", "exploded", 1)}, "code"},
		{"a request id that differs from the header", http.MethodGet, "/v1/hooks/" + hookID, "",
			answer{http.StatusNotFound, map[string]string{"X-Request-Id": "0192f0c4-9b1e-7c3a-8f00-999999999999"}, errBody}, "requestId"},
		{"a success for a request the document refuses", http.MethodPost, "/v1/hooks", `{"path":"/a","data":{},"postIn":"1m","colour":"red"}`,
			answer{http.StatusCreated, nil, `{"data":` + validHook + `}`}, "accepted"},
		{"an unknown route answered without the error format", http.MethodGet, "/nowhere", "",
			answer{http.StatusNotFound, nil, `{"message":"not found"}`}, "Error schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tt.answer)
			b.send(t, tt.method, tt.path, tt.body, true)
			require.Contains(t, b.rec.reported(), tt.says)
		})
	}
}

func TestCoverageCountsOperations(t *testing.T) {
	t.Parallel()
	b := setup(t, answer{http.StatusOK, nil, `{"data":` + validHook + `}`})
	b.send(t, http.MethodGet, "/v1/hooks/"+hookID, "", true)
	require.Empty(t, b.rec.reported())

	unexercised, err := contract.Unexercised()
	require.NoError(t, err)
	require.NotContains(t, unexercised, "GET /hooks/{id}")
	var report strings.Builder
	require.NoError(t, contract.Report(&report))
	require.Contains(t, report.String(), "GET /hooks/{id}")
	require.Contains(t, report.String(), "getHook")
}
