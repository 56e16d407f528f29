package app_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/apibench"
	"github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

// benchClients is how many clients send POST /v1/hooks at once, as in the
// end-to-end benchmark's schedule scenario.
const benchClients = 64

// BenchmarkCreateHook drives POST /v1/hooks through the whole HTTP stack of
// an in-process gateway (authentication, limits, strict decoding, the
// create batcher, PostgreSQL) with benchClients closed-loop clients in one
// project, logging at info (a line per request) to nowhere, as in
// production. SUNDIAL_DATABASE_MAX_CONNS, SUNDIAL_GATEWAY_CREATE_LINGER and
// SUNDIAL_GATEWAY_CREATE_IN_FLIGHT change the gateway's settings (the
// defaults otherwise). Each op is one create; it reports hooks/s and the latency
// percentiles. The sub-benchmarks compare batched creates with one
// transaction per create.
func BenchmarkCreateHook(b *testing.B) {
	for _, c := range []struct {
		name  string
		batch int
	}{{"batched", app.DefaultCreateBatch}, {"one-by-one", 0}} {
		b.Run(c.name, func(b *testing.B) {
			base, key := startBenchGateway(b, func(cfg *app.Config) { cfg.CreateBatch = c.batch })
			benchCreates(b, base, key)
		})
	}
}

// startBenchGateway boots a gateway on a fresh database with the default
// pool and batching (changed by configure) and one project whose quota and
// rate limit the benchmark cannot reach; it returns the base URL and the
// project's API key.
func startBenchGateway(b *testing.B, configure func(*app.Config)) (string, string) {
	b.Helper()
	dbURL := pgtest.NewDB(b)
	cfg := testConfig(b, dbURL)
	cfg.LogLevel = "info"
	cfg.DatabaseMaxConns = app.DefaultDatabaseMaxConns
	// The gateway's own variables tune the run, e.g. to compare batch
	// shapes.
	r := envconf.New(nil)
	cfg.DatabaseMaxConns = r.Int("SUNDIAL_DATABASE_MAX_CONNS", cfg.DatabaseMaxConns)
	cfg.CreateLinger = r.Duration("SUNDIAL_GATEWAY_CREATE_LINGER", cfg.CreateLinger)
	cfg.CreateInFlight = r.Int("SUNDIAL_GATEWAY_CREATE_IN_FLIGHT", cfg.CreateInFlight)
	require.NoError(b, r.Err())
	configure(&cfg)
	a, err := app.New(b.Context(), cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	b.Cleanup(func() {
		cancel()
		require.NoError(b, <-done)
	})

	creds, err := app.CreateProject(b.Context(), app.Database{URL: dbURL, SecretKeys: secrettest.Keys}, "Bench", "hooks.example.com")
	require.NoError(b, err)
	pool, err := postgres.Connect(b.Context(), dbURL, 1)
	require.NoError(b, err)
	defer pool.Close()
	id := uuid.MustParse(creds.ProjectID)
	q := store.New(pool)
	require.NoError(b, project.SetPlan(b.Context(), q, id, project.Plan{Quota: 1 << 40, HardCapPercent: 200}))
	require.NoError(b, quota.SetRateLimit(b.Context(), q, id, quota.RateLimit{PerSecond: 100_000, Burst: 1_000_000}))
	return "http://" + a.Addr(), creds.APIKey
}

// benchCreates runs b.N creates spread over benchClients goroutines and
// reports their rate and latency.
func benchCreates(b *testing.B, base, key string) {
	transport := &http.Transport{MaxIdleConns: benchClients, MaxIdleConnsPerHost: benchClients}
	b.Cleanup(transport.CloseIdleConnections)
	client := &http.Client{Transport: transport, Timeout: time.Minute}
	var (
		mu        sync.Mutex
		latencies []time.Duration
		failures  atomic.Int64
		seq       atomic.Int64
	)
	b.SetParallelism((benchClients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			n := seq.Add(1)
			t0 := time.Now()
			if err := postHook(client, base, key, n); err != nil {
				failures.Add(1)
				continue
			}
			mine = append(mine, time.Since(t0))
		}
		mu.Lock()
		latencies = append(latencies, mine...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	require.Zero(b, failures.Load(), "failed creates")
	l := apibench.Summarize(latencies)
	b.ReportMetric(float64(len(latencies))/elapsed.Seconds(), "hooks/s")
	b.ReportMetric(float64(l.P50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(l.P99.Microseconds())/1000, "p99-ms")
}

// benchHook is the body of one create due in an hour, the one apibench
// sends.
func benchHook(n int64) string {
	return fmt.Sprintf(`{"path":"/bench/%d?source=gateway","postIn":"1h","data":{"n":%d,"event":"invoice.due","customer":{"id":"cus_%08d","plan":"pro"},"tags":["bench","load"]}}`,
		n, n, n)
}

// postHook creates one hook due in an hour.
func postHook(client *http.Client, base, key string, n int64) error {
	return post(client, base+"/v1/hooks", key, benchHook(n))
}

// BenchmarkCreateBatch sends POST /v1/hooks/batch of batchBenchHooks hooks
// (benchHook's), one request at a time, through the whole HTTP stack of an
// in-process gateway. Each op is one request; it reports hooks/s.
func BenchmarkCreateBatch(b *testing.B) {
	const batchBenchHooks = 1000
	base, key := startBenchGateway(b, func(*app.Config) {})
	client := &http.Client{Timeout: time.Minute}
	var n int64
	start := time.Now()
	for b.Loop() {
		var body bytes.Buffer
		body.WriteString(`{"hooks":[`)
		for i := range batchBenchHooks {
			if i > 0 {
				body.WriteByte(',')
			}
			n++
			body.WriteString(benchHook(n))
		}
		body.WriteString(`]}`)
		require.NoError(b, post(client, base+"/v1/hooks/batch", key, body.String()))
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "hooks/s")
}

// post sends a create's body to url and expects 201.
func post(client *http.Client, url, key, body string) error {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(body)))
	if err != nil {
		return err
	}
	req.Header.Set("X-API-Key", key)
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		return err
	}
	if res.StatusCode != http.StatusCreated {
		return fmt.Errorf("POST %s: HTTP %d", url, res.StatusCode)
	}
	return nil
}
