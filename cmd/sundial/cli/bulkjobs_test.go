package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// bulkJobServer is a fake gateway of bulk jobs: a create answers job j1
// running, each later read of it one step further (running, then
// completed, or failed when failing is set); j0 has ended, so its cancel
// is a 409; a create with endpointKey "bad" is a 400 naming it. It
// records the create bodies.
type bulkJobServer struct {
	mu      sync.Mutex
	reads   int
	failing bool
	creates []string
}

func bulkJobJSON(id, state string, selected int, extra string) string {
	progress := float64(selected) / 2500
	if state == "completed" {
		progress = 1
	}
	return fmt.Sprintf(`{"id":%q,"action":"cancel","selection":{"startTime":"2030-01-01T00:00:00Z","endTime":"2030-01-02T00:00:00Z","tags":["spring"]},`+
		`"state":%q,"total":2500,"selected":%d,"affected":%d,"skipped":0,"batches":%d,"progress":%v,`+
		`"createdAt":"2030-01-01T00:00:00Z","updatedAt":"2030-01-01T00:00:00Z"%s}`, id, state, selected, selected, selected/1000, progress, extra)
}

func (f *bulkJobServer) start(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	write := func(w http.ResponseWriter, status int, body string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
	mux.HandleFunc("POST /v1/bulk-jobs", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.creates = append(f.creates, string(body))
		f.mu.Unlock()
		var req map[string]any
		_ = json.Unmarshal(body, &req)
		switch {
		case req["endpointKey"] == "bad":
			write(w, http.StatusBadRequest, `{"error":"invalid request","code":"invalid_request","requestId":"req-7",`+
				`"details":[{"field":"endpointKey","message":"must start with /"}]}`)
		case req["dryRun"] == true:
			write(w, http.StatusOK, `{"data":{"dryRun":true,"total":2500,"sample":[{"id":"h1","path":"/x","status":"pending","postAt":"2030-01-01T00:00:00Z"}]}}`)
		default:
			write(w, http.StatusAccepted, `{"data":`+bulkJobJSON("j1", "running", 0, "")+`}`)
		}
	})
	mux.HandleFunc("GET /v1/bulk-jobs/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		switch {
		case r.PathValue("id") == "j0":
			write(w, http.StatusOK, `{"data":`+bulkJobJSON("j0", "completed", 2500, `,"finishedAt":"2030-01-01T00:05:00Z"`)+`}`)
		case r.PathValue("id") != "j1":
			write(w, http.StatusNotFound, `{"error":"bulk job not found","code":"not_found","requestId":"req-7"}`)
		case f.reads == 0:
			f.reads++
			write(w, http.StatusOK, `{"data":`+bulkJobJSON("j1", "running", 1000, "")+`}`)
		case f.failing:
			write(w, http.StatusOK, `{"data":`+bulkJobJSON("j1", "failed", 1000,
				`,"error":{"code":"quota_exhausted","message":"the quota ran out"},"finishedAt":"2030-01-01T00:05:00Z"`)+`}`)
		default:
			write(w, http.StatusOK, `{"data":`+bulkJobJSON("j1", "completed", 2500, `,"finishedAt":"2030-01-01T00:05:00Z"`)+`}`)
		}
	})
	mux.HandleFunc("POST /v1/bulk-jobs/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") == "j0" {
			write(w, http.StatusConflict, `{"error":"the bulk job has already ended (completed); there is nothing to cancel","code":"conflict","requestId":"req-7"}`)
			return
		}
		write(w, http.StatusAccepted, `{"data":`+bulkJobJSON(r.PathValue("id"), "cancelling", 1000, "")+`}`)
	})
	mux.HandleFunc("GET /v1/bulk-jobs", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("cursor") == "" {
			write(w, http.StatusOK, `{"data":[`+bulkJobJSON("j1", "running", 1000, "")+`],"meta":{"totalItems":2,"totalItemsCapped":false,"nextCursor":"c1"}}`)
			return
		}
		write(w, http.StatusOK, `{"data":[`+bulkJobJSON("j0", "completed", 2500, "")+`],"meta":{"totalItems":2,"totalItemsCapped":false}}`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

var jobRange = []string{"--start", "2030-01-01T00:00:00Z", "--end", "2030-01-02T00:00:00Z"}

func TestBulkJobsCreateAndWait(t *testing.T) {
	t.Parallel()
	f := &bulkJobServer{}
	r := newRunner(t)
	r.env[envAPIKey], r.env[envAPIURL] = "sk_test", f.start(t)
	ctx := context.Background()

	res := r.run(ctx, append([]string{"bulk-jobs", "create", "--action", "cancel", "--tag", "spring", "--dry-run"}, jobRange...)...)
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "cancel would act on 2500 hook(s); nothing was changed.")
	require.Regexp(t, `h1\s+pending\s+2030-01-01T00:00:00Z\s+/x\n`, res.stdout)

	res = r.run(ctx, append([]string{"bulk-jobs", "create", "--action", "cancel", "--tag", "spring"}, jobRange...)...)
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Regexp(t, `ID:\s+j1\n`, res.stdout)
	require.Regexp(t, `State:\s+running\n`, res.stdout)
	require.Regexp(t, `Selection:\s+2030-01-01T00:00:00Z to 2030-01-02T00:00:00Z, tags spring\n`, res.stdout)
	require.Contains(t, res.stdout, "Follow it with `sundial bulk-jobs get j1`.")

	res = r.run(ctx, append([]string{"bulk-jobs", "create", "--action", "retry", "--wait", "--poll-interval", "1ms",
		"--path", "/v2", "--data", `{"v":2}`}, jobRange...)...)
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "running: 0% (0 of about 2500 hook(s) read, 0 acted on, 0 batch(es))\n"+
		"running: 40% (1000 of about 2500 hook(s) read, 1000 acted on, 1 batch(es))\n"+
		"completed: 100% (2500 of about 2500 hook(s) read, 2500 acted on, 2 batch(es))\n")
	require.Regexp(t, `Finished:\s+2030-01-01T00:05:00Z\n`, res.stdout)

	f.mu.Lock()
	require.Len(t, f.creates, 3)
	require.JSONEq(t, `{"action":"cancel","startTime":"2030-01-01T00:00:00Z","endTime":"2030-01-02T00:00:00Z","tags":["spring"],"dryRun":true}`, f.creates[0])
	require.JSONEq(t, `{"action":"retry","startTime":"2030-01-01T00:00:00Z","endTime":"2030-01-02T00:00:00Z","edit":{"path":"/v2","data":{"v":2}}}`, f.creates[2])
	f.mu.Unlock()
}

func TestBulkJobsWaitExitsOneUnlessTheJobCompleted(t *testing.T) {
	t.Parallel()
	f := &bulkJobServer{failing: true}
	r := newRunner(t)
	r.env[envAPIKey], r.env[envAPIURL] = "sk_test", f.start(t)
	res := r.run(context.Background(), append([]string{"bulk-jobs", "create", "--action", "replay", "--wait", "--poll-interval", "1ms", "-o", "json"}, jobRange...)...)
	require.Equal(t, ExitError, res.code, res.stderr)
	var job map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &job), "stdout is the job alone: %s", res.stdout)
	require.Equal(t, "failed", job["state"])
	require.Equal(t, "quota_exhausted", job["error"].(map[string]any)["code"])
	require.Contains(t, res.stderr, "running: 40%", "progress goes to stderr with --output json")
}

func TestBulkJobsGetListAndCancel(t *testing.T) {
	t.Parallel()
	f := &bulkJobServer{}
	r := newRunner(t)
	r.env[envAPIKey], r.env[envAPIURL] = "sk_test", f.start(t)
	ctx := context.Background()

	res := r.run(ctx, "bulk-jobs", "get", "j0")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Regexp(t, `State:\s+completed\n`, res.stdout)
	require.Regexp(t, `Progress:\s+100% \(an estimate\)\n`, res.stdout)
	require.Regexp(t, `Acted on:\s+2500\n`, res.stdout)
	require.Regexp(t, `Skipped:\s+0\n`, res.stdout)

	res = r.run(ctx, "bulk-jobs", "list")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Regexp(t, `ID\s+ACTION\s+STATE\s+PROGRESS\s+TOTAL\s+READ\s+ACTED ON\s+SKIPPED\s+CREATED\n`, res.stdout)
	require.Regexp(t, `j1\s+cancel\s+running\s+40%\s+2500\s+1000\s+1000\s+0\s+2030-01-01T00:00:00Z\n`, res.stdout)
	require.Contains(t, res.stdout, "More: --cursor c1")
	res = r.run(ctx, "bulk-jobs", "list", "--all", "-o", "json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var page struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &page))
	require.Len(t, page.Data, 2)

	res = r.run(ctx, "bulk-jobs", "cancel", "j1")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Regexp(t, `State:\s+cancelling\n`, res.stdout)
	res = r.run(ctx, "bulk-jobs", "cancel", "j0")
	require.Equal(t, ExitError, res.code)
	require.Equal(t, "sundial: bulk job j0: the bulk job has already ended (completed); there is nothing to cancel (409 conflict, request req-7)\n", res.stderr)
	res = r.run(ctx, "bulk-jobs", "get", "gone")
	require.Equal(t, ExitError, res.code)
	require.Contains(t, res.stderr, "(404 not_found, request req-7)")

	res = r.run(ctx, append([]string{"bulk-jobs", "create", "--action", "cancel", "--endpoint-key", "bad"}, jobRange...)...)
	require.Equal(t, ExitError, res.code)
	require.Contains(t, res.stderr, "--endpoint-key: must start with /")
}

func TestBulkJobsUsage(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	r.env[envAPIKey], r.env[envAPIURL] = "sk_test", "http://127.0.0.1:1"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bulk-jobs", "create", "--start", "2030-01-01T00:00:00Z", "--end", "2030-01-02T00:00:00Z"}, "--action is required"},
		{[]string{"bulk-jobs", "create", "--action", "cancel", "--end", "2030-01-02T00:00:00Z"}, "--start is required"},
		{append([]string{"bulk-jobs", "create", "--action", "cancel", "--start", "soon"}, jobRange[2:]...), `--start: "soon" is not an RFC 3339 time`},
		{append([]string{"bulk-jobs", "create", "--action", "cancel", "--dry-run", "--wait"}, jobRange...), "--wait goes with a job"},
		{append([]string{"bulk-jobs", "create", "--action", "retry", "--data", "[1]"}, jobRange...), "--data: not a JSON object"},
		{append([]string{"bulk-jobs", "create", "--action", "retry", "--wait", "--poll-interval", "0s"}, jobRange...), "--poll-interval must be positive"},
		{append([]string{"bulk-jobs", "create", "--action", "retry", "extra"}, jobRange...), `unexpected argument "extra"`},
		{[]string{"bulk-jobs", "get"}, "give one bulk job id"},
		{[]string{"bulk-jobs", "cancel", "a", "b"}, "give one bulk job id"},
		{[]string{"bulk-jobs", "list", "--limit", "many"}, "--limit"},
		{[]string{"bulk-jobs", "bogus"}, `unknown command "bogus"`},
	} {
		res := r.run(context.Background(), tc.args...)
		require.Equal(t, ExitUsage, res.code, "%v: %s", tc.args, res.stderr)
		require.Contains(t, res.stderr, tc.want, tc.args)
	}
}
