package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// orderingKeyServer is a fake gateway of ordering keys: key "held/1" is
// held behind hook h1, "free" is free; a resume of "held/1" frees it, of
// any other key is a 409. It records the schedule requests' bodies.
type orderingKeyServer struct {
	mu       sync.Mutex
	resumed  bool
	schedule []string
}

func (f *orderingKeyServer) start(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	write := func(w http.ResponseWriter, status int, body string) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req-9")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
	mux.HandleFunc("GET /v1/ordering-keys/{key}", func(w http.ResponseWriter, r *http.Request) {
		switch r.PathValue("key") {
		case "held/1":
			write(w, http.StatusOK, `{"data":{"key":"held/1","headHookId":"h1","held":true,"unfinished":3}}`)
		case "free":
			write(w, http.StatusOK, `{"data":{"key":"free","headHookId":null,"held":false,"unfinished":0}}`)
		default:
			write(w, http.StatusNotFound, `{"error":"no such ordering key in this project","code":"not_found","requestId":"req-9"}`)
		}
	})
	mux.HandleFunc("POST /v1/ordering-keys/{key}/resume", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if r.PathValue("key") != "held/1" || f.resumed {
			write(w, http.StatusConflict, `{"error":"ordering key is not held","code":"conflict","requestId":"req-9"}`)
			return
		}
		f.resumed = true
		write(w, http.StatusOK, `{"data":{"key":"held/1","headHookId":null,"held":false,"unfinished":3}}`)
	})
	mux.HandleFunc("GET /v1/ordering-keys", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("held") != "true" {
			write(w, http.StatusBadRequest, `{"error":"held must be true","code":"invalid_request","requestId":"req-9"}`)
			return
		}
		write(w, http.StatusOK, `{"data":[{"key":"held/1","headHookId":"h1","held":true,"unfinished":3},
			{"key":"a b","headHookId":"h2","held":true,"unfinished":0}],"meta":{"totalItems":2,"totalItemsCapped":false}}`)
	})
	mux.HandleFunc("POST /v1/hooks", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.schedule = append(f.schedule, string(body))
		f.mu.Unlock()
		write(w, http.StatusCreated, `{"data":{"id":"h9","status":"pending","domain":"shop.example","path":"/x",
			"postAt":"2030-01-02T09:00:00Z","attempts":0,"createdAt":"2030-01-01T09:00:00Z","data":{},"orderingKey":"account:42"}}`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestOrderingKeysGetHeldAndResume(t *testing.T) {
	t.Parallel()
	f := &orderingKeyServer{}
	r := newRunner(t)
	r.env[envAPIKey], r.env[envAPIURL] = "sk_test", f.start(t)
	ctx := context.Background()

	res := r.run(ctx, "ordering-keys", "get", "held/1")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Regexp(t, `Key:\s+held/1\n`, res.stdout)
	require.Regexp(t, `State:\s+held \(resume it with `+"`sundial ordering-keys resume`"+`\)\n`, res.stdout)
	require.Regexp(t, `Head hook:\s+h1\n`, res.stdout)
	require.Regexp(t, `Unfinished:\s+3\n`, res.stdout)

	res = r.run(ctx, "ordering-keys", "get", "free", "-o", "json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.JSONEq(t, `{"key":"free","headHookId":null,"held":false,"unfinished":0}`, res.stdout)

	res = r.run(ctx, "ordering-keys", "held")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Regexp(t, `KEY\s+FAILED HOOK\s+UNFINISHED\n`, res.stdout)
	require.Regexp(t, `held/1\s+h1\s+3\n`, res.stdout)
	require.Regexp(t, `"a b"\s+h2\s+0\n`, res.stdout)

	res = r.run(ctx, "ordering-keys", "resume", "held/1")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Regexp(t, `State:\s+free\n`, res.stdout)

	res = r.run(ctx, "ordering-keys", "resume", "held/1")
	require.Equal(t, ExitError, res.code)
	require.Equal(t, "sundial: ordering key \"held/1\": ordering key is not held (409 conflict, request req-9)\n", res.stderr)

	res = r.run(ctx, "ordering-keys", "get", "gone")
	require.Equal(t, ExitError, res.code)
	require.Contains(t, res.stderr, "(404 not_found, request req-9)")
}

func TestScheduleWithAnOrderingKey(t *testing.T) {
	t.Parallel()
	f := &orderingKeyServer{}
	r := newRunner(t)
	r.env[envAPIKey], r.env[envAPIURL] = "sk_test", f.start(t)

	res := r.run(context.Background(), "hooks", "schedule", "--path", "/x", "--post-in", "1h", "--ordering-key", "account:42")
	require.Equal(t, ExitOK, res.code, res.stderr)
	f.mu.Lock()
	defer f.mu.Unlock()
	require.Len(t, f.schedule, 1)
	var body map[string]any
	require.NoError(t, json.Unmarshal([]byte(f.schedule[0]), &body))
	require.Equal(t, "account:42", body["orderingKey"])
}

func TestOrderingKeysUsage(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	r.env[envAPIKey], r.env[envAPIURL] = "sk_test", "http://127.0.0.1:1"
	for _, args := range [][]string{
		{"ordering-keys", "get"}, {"ordering-keys", "resume"}, {"ordering-keys", "get", "a", "b"}, {"ordering-keys", "resume", ""},
	} {
		res := r.run(context.Background(), args...)
		require.Equal(t, ExitUsage, res.code, "%v: %s", args, res.stderr)
		require.Contains(t, res.stderr, "give one ordering key", args)
	}
	res := r.run(context.Background(), "ordering-keys", "bogus")
	require.Equal(t, ExitUsage, res.code, res.stderr)
	res = r.run(context.Background(), "ordering-keys", "held", "extra")
	require.Equal(t, ExitUsage, res.code, res.stderr)
}
