package e2e

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/envconf"
	dispatcher "github.com/sundial-run/sundial/services/dispatcher/app"
	gateway "github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/cli"
	scheduler "github.com/sundial-run/sundial/services/scheduler/app"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
	"github.com/sundial-run/sundial/tests/internal/apiclient"
)

// BenchmarkAckToCompleted measures how long an ack takes to complete its
// hook: from the moment a receiver POSTs the ack URL (the gateway records
// the answer and notifies) until the hook reads completed (the scheduler's
// sweeper, woken by the notification, applied it through the result
// applier). The gateway, scheduler and dispatcher run in-process on a real
// PostgreSQL and NATS; each iteration acks one hook waiting after its 202,
// and polls the API until it is completed, so the times are an upper bound
// (they include the ack's and the last poll's HTTP round trips). The async
// sweep interval is 10 s: the ack path must not depend on it. Reports p50
// and p99 in ms. Run with e.g.
//
//	.bin/withpg -- go test -run '^$' -bench AckToCompleted -benchtime 300x ./tests/e2e/
func BenchmarkAckToCompleted(b *testing.B) {
	ackURLs := make(chan string, b.N)
	rcv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ackURLs <- r.Header.Get("Sundial-Ack-URL")
		w.WriteHeader(http.StatusAccepted)
	}))
	rcv.StartTLS()
	b.Cleanup(rcv.Close)
	api := bootForBench(b, rcv)

	for range b.N {
		apiclient.Schedule[hook](b, api, map[string]any{
			"path": "/bench/ack", "postAt": time.Now().UTC().Format(time.RFC3339), "data": map[string]any{},
		})
	}
	urls := make([]string, 0, b.N)
	for range b.N {
		select {
		case u := <-ackURLs:
			urls = append(urls, u)
		case <-time.After(60 * time.Second):
			b.Fatalf("%d of %d hooks delivered", len(urls), b.N)
		}
	}
	for _, u := range urls {
		waitHook(b, api, hookOfAckURL(u), func(h hook) bool { return h.Attempts == 1 })
	}

	took, answered := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for _, u := range urls {
		start := time.Now()
		// No API key: the URL's token is the receiver's credential.
		resp, raw := apiclient.Client{HTTP: api.HTTP}.Do(b, http.MethodPost, u, map[string]any{"ok": true})
		require.Equal(b, http.StatusOK, resp.StatusCode, "ack: %s", raw)
		answered = append(answered, time.Since(start))
		waitHook(b, api, hookOfAckURL(u), func(h hook) bool { return h.Status == "completed" })
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric(quantileMS(took, 0.50), "p50_ms")
	b.ReportMetric(quantileMS(took, 0.99), "p99_ms")
	b.ReportMetric(quantileMS(took, 1), "max_ms")
	// The ack's own answer, part of the above.
	b.ReportMetric(quantileMS(answered, 0.50), "ack_answer_p50_ms")
}

// quantileMS is the q-quantile of ds in milliseconds (ds is sorted).
func quantileMS(ds []time.Duration, q float64) float64 {
	slices.Sort(ds)
	return float64(ds[int(q*float64(len(ds)-1))].Microseconds()) / 1000
}

// bootForBench runs the gateway, the scheduler and the dispatcher on a fresh
// database and NATS, with a project whose deliveries go to rcv, and returns
// the project's API client.
func bootForBench(b *testing.B, rcv *httptest.Server) apiclient.Client {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	dbURL := pgtest.NewDB(b)
	ns := natstest.Start(b, natstest.Options{})
	caFile := filepath.Join(b.TempDir(), "receiver-ca.pem")
	require.NoError(b, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rcv.Certificate().Raw}), 0o600))
	creds, err := gateway.CreateProject(ctx, gateway.Database{URL: dbURL, SecretKeys: secrettest.Keys}, "bench", rcv.Listener.Addr().String())
	require.NoError(b, err)
	env := map[string]string{
		"SUNDIAL_DATABASE_URL":                   dbURL,
		"SUNDIAL_SECRET_KEYS":                    secrettest.Keys,
		"SUNDIAL_NATS_URL":                       ns.ClientURL(),
		"SUNDIAL_GATEWAY_ADMIN_ADDR":             "127.0.0.1:0",
		"SUNDIAL_SCHEDULER_ADMIN_ADDR":           "127.0.0.1:0",
		"SUNDIAL_DISPATCHER_ADMIN_ADDR":          "127.0.0.1:0",
		"SUNDIAL_NOTIFIER_ADMIN_ADDR":            "127.0.0.1:0",
		"SUNDIAL_HTTP_ADDR":                      "127.0.0.1:0",
		"SUNDIAL_DELIVERY_ALLOW_PRIVATE":         "true",
		"SUNDIAL_DELIVERY_CA_FILE":               caFile,
		"SUNDIAL_SCHEDULER_POLL_INTERVAL":        "50ms",
		"SUNDIAL_SCHEDULER_ASYNC_SWEEP_INTERVAL": "10s",
		"SUNDIAL_SHUTDOWN_TIMEOUT":               "5s",
		"SUNDIAL_LOG_LEVEL":                      "warn",
	}
	// The benchmark polls the API without pause: lift the project's rate limit.
	require.Equal(b, cli.ExitOK, cli.Run(ctx, []string{"admin", "set-plan", "--project", creds.ProjectID,
		"--rate-limit", "100000", "--rate-burst", "1000000"},
		cli.Env{Stdout: io.Discard, Stderr: os.Stderr, Lookup: envconf.Map(env)}))
	gwCfg, err := gateway.ConfigFromEnv(envconf.Map(env))
	require.NoError(b, err)
	gw, err := gateway.New(ctx, gwCfg, discardLog())
	require.NoError(b, err)
	env["SUNDIAL_PUBLIC_URL"] = "http://" + gw.Addr()
	schCfg, err := scheduler.ConfigFromEnv(envconf.Map(env))
	require.NoError(b, err)
	sch, err := scheduler.New(ctx, schCfg, discardLog())
	require.NoError(b, err)
	dspCfg, err := dispatcher.ConfigFromEnv(envconf.Map(env))
	require.NoError(b, err)
	dsp, err := dispatcher.New(ctx, dspCfg, discardLog())
	require.NoError(b, err)
	runs := []func(context.Context) error{gw.Run, sch.Run, dsp.Run}
	done := make(chan error, len(runs))
	for _, run := range runs {
		go func() { done <- run(ctx) }()
	}
	b.Cleanup(func() {
		cancel()
		for range runs {
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				b.Errorf("service stopped with error: %v", err)
			}
		}
	})
	return apiclient.Client{BaseURL: "http://" + gw.Addr(), APIKey: creds.APIKey, HTTP: http.DefaultClient}
}

func discardLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// hookOfAckURL is the hook id in an ack URL (/v1/async/{hookId}/...).
func hookOfAckURL(u string) string {
	_, rest, _ := strings.Cut(u, "/v1/async/")
	id, _, _ := strings.Cut(rest, "/")
	return id
}

// waitHook polls the hook every millisecond (a busy loop would take the CPU
// from the services it measures) until ok or 30 s pass.
func waitHook(b *testing.B, api apiclient.Client, id string, ok func(hook) bool) {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, raw := api.Do(b, http.MethodGet, "/v1/hooks/"+id, nil)
		require.Equal(b, http.StatusOK, resp.StatusCode, "GET hook: %s", raw)
		var out struct{ Data hook }
		require.NoError(b, json.Unmarshal(raw, &out))
		if ok(out.Data) {
			return
		}
		time.Sleep(time.Millisecond)
	}
	b.Fatalf("hook %s never got there", id)
}
