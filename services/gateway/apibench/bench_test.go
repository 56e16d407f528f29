package apibench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/apibench"
	"github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/internal/hooklist/hooklisttest"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// settings are the benchmark's knobs, from the environment.
type settings struct {
	duration  time.Duration // of the POST run
	clients   int           // concurrent POST clients
	listHooks int           // hooks in each of the two list projects
	out       string        // the JSON report
}

func settingsFromEnv(b *testing.B) settings {
	r := envconf.New(nil)
	s := settings{
		duration:  r.Duration("SUNDIAL_BENCH_DURATION", 10*time.Second),
		clients:   r.Int("SUNDIAL_BENCH_CLIENTS", 64),
		listHooks: r.Int("SUNDIAL_BENCH_LIST_HOOKS", 1_000_000),
		out:       r.String("SUNDIAL_BENCH_OUT", filepath.Join(repositoryRoot(b), ".bench", "api.json")),
	}
	require.NoError(b, r.Err())
	require.Positive(b, s.duration)
	require.Positive(b, s.clients)
	require.GreaterOrEqual(b, s.listHooks, 100*51, "page 51 needs 51 full pages")
	return s
}

// repositoryRoot is the folder holding go.work, above the package's.
func repositoryRoot(b *testing.B) string {
	dir, err := os.Getwd()
	require.NoError(b, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(b, dir, parent, "no go.work above the package")
		dir = parent
	}
}

// bundle is a running gateway on a fresh database, with postProjects
// projects to create hooks in, one to list hooks of, and another whose
// hooks share the table with those.
type bundle struct {
	b        *testing.B
	ctx      context.Context
	dbURL    string
	pool     *pgxpool.Pool
	base     string
	http     *http.Client
	postKeys []string // of the projects hooks are created in
	listKey  string
	listID   uuid.UUID
	otherID  uuid.UUID
	pgServer string
}

func setup(b *testing.B, s settings) *bundle {
	b.Helper()
	ctx := b.Context()
	dbURL := pgtest.NewDB(b)
	pool, err := postgres.Connect(ctx, dbURL, 4)
	require.NoError(b, err)
	b.Cleanup(pool.Close)
	bb := &bundle{b: b, ctx: ctx, dbURL: dbURL, pool: pool}
	for i := range postProjects {
		key, _ := bb.project(fmt.Sprintf("post %d", i))
		bb.postKeys = append(bb.postKeys, key)
	}
	bb.listKey, bb.listID = bb.project("list")
	_, bb.otherID = bb.project("other")

	conn, err := pool.Acquire(ctx)
	require.NoError(b, err)
	bb.pgServer = conn.Conn().PgConn().ParameterStatus("server_version")
	conn.Release()

	transport := &http.Transport{MaxIdleConns: 2 * s.clients, MaxIdleConnsPerHost: 2 * s.clients, IdleConnTimeout: time.Minute}
	b.Cleanup(transport.CloseIdleConnections)
	bb.http = &http.Client{Transport: transport, Timeout: time.Minute}
	return bb
}

// project creates a project whose quota and rate limit a benchmark cannot
// reach: they are not what is measured.
func (bb *bundle) project(name string) (string, uuid.UUID) {
	creds, err := app.CreateProject(bb.ctx, app.Database{URL: bb.dbURL, SecretKeys: secrettest.Keys}, name, "hooks.example.com")
	require.NoError(bb.b, err)
	id := uuid.MustParse(creds.ProjectID)
	q := store.New(bb.pool)
	require.NoError(bb.b, project.SetPlan(bb.ctx, q, id, project.Plan{Quota: 1 << 40, HardCapPercent: 200}))
	require.NoError(bb.b, quota.SetRateLimit(bb.ctx, q, id, quota.RateLimit{PerSecond: 100_000, Burst: 1_000_000}))
	return creds.APIKey, id
}

// start boots the gateway, logging at info level (one line per request, as
// in production) to nowhere.
func (bb *bundle) start() {
	cfg, err := app.ConfigFromEnv(envconf.Map(map[string]string{
		"SUNDIAL_DATABASE_URL":       bb.dbURL,
		"SUNDIAL_HTTP_ADDR":          "127.0.0.1:0",
		"SUNDIAL_GATEWAY_ADMIN_ADDR": "127.0.0.1:0",
		"SUNDIAL_LOG_LEVEL":          "info",
		"SUNDIAL_SECRET_KEYS":        secrettest.Keys,
	}))
	require.NoError(bb.b, err)
	log := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	a, err := app.New(bb.ctx, cfg, log)
	require.NoError(bb.b, err)
	ctx, cancel := context.WithCancel(context.WithoutCancel(bb.ctx))
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	bb.b.Cleanup(func() {
		cancel()
		require.NoError(bb.b, <-done)
	})
	bb.base = "http://" + a.Addr()
}

// load copies hooks into the list project and as many into the other one,
// in alternating chunks over 60 days so that the two share the table's
// pages as they would in production, then vacuums as autovacuum would.
func (bb *bundle) load(n int) apibench.LoadReport {
	const chunk, span = 50_000, 60 * 24 * time.Hour
	end := time.Now().UTC().Truncate(time.Microsecond)
	chunks := max(1, n/chunk)
	start := time.Now()
	for i := range chunks {
		size := n / chunks
		if i == chunks-1 {
			size = n - size*(chunks-1)
		}
		chunkEnd := end.Add(-time.Duration(chunks-1-i) * span / time.Duration(chunks))
		for k, id := range []uuid.UUID{bb.listID, bb.otherID} {
			err := hooklisttest.LoadRealistic(bb.ctx, bb.pool, id, size, span/time.Duration(chunks), chunkEnd, uint64(2*i+k))
			require.NoError(bb.b, err)
		}
	}
	copied := time.Since(start)
	start = time.Now()
	require.NoError(bb.b, hooklisttest.Vacuum(bb.ctx, bb.pool))
	return apibench.LoadReport{
		HooksPerProject: n,
		Projects:        2,
		Seconds:         copied.Round(10 * time.Millisecond).Seconds(),
		RowsPerSecond:   float64(int(float64(2*n) / copied.Seconds())),
		VacuumSeconds:   time.Since(start).Round(10 * time.Millisecond).Seconds(),
	}
}

// createHook is one POST /v1/hooks of a client, due in an hour, in the
// project of key.
func (bb *bundle) createHook(ctx context.Context, key string, client, n int) (int, error) {
	body := fmt.Sprintf(`{"path":"/bench/%d/%d?source=apibench","postIn":"1h","data":{"client":%d,"n":%d,"event":"invoice.due","customer":{"id":"cus_%08d","plan":"pro"},"tags":["bench","load"]}}`,
		client, n, client, n, n)
	return bb.send(ctx, http.MethodPost, "/v1/hooks", key, []byte(body), nil)
}

// send makes one request and reads the whole answer, so that the
// connection is reused; into, when not nil, receives the decoded body.
func (bb *bundle) send(ctx context.Context, method, path, key string, body []byte, into any) (int, error) {
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, bb.base+path, reader)
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-API-Key", key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := bb.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, err
	}
	if into != nil && res.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, into); err != nil {
			return 0, fmt.Errorf("decode %s %s: %w", method, path, err)
		}
	}
	if res.StatusCode >= 400 {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(raw, &e)
		return res.StatusCode, &statusError{status: res.StatusCode, message: e.Error}
	}
	return res.StatusCode, nil
}

// statusError is an error answer; the status is returned beside it.
type statusError struct {
	status  int
	message string
}

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.status, e.message) }

// postProjects is how many projects the second POST run spreads its
// clients over: each hook is counted against its project's quota under
// that project's usage row lock, so one project's creations queue behind
// each other while different projects' do not.
const postProjects = 8

// post drives POST /v1/hooks closed-loop, after a short warm-up that fills
// the connection pools: all clients in one project, then the clients
// spread over postProjects projects.
func (bb *bundle) post(s settings) []apibench.PostReport {
	var reports []apibench.PostReport
	for _, projects := range []int{1, postProjects} {
		counters := make([]int, s.clients)
		send := func(ctx context.Context, client int) (int, error) {
			counters[client]++
			status, err := bb.createHook(ctx, bb.postKeys[client%projects], client, counters[client])
			if status != 0 {
				return status, nil // an error answer is an answer: counted by status
			}
			return status, err
		}
		apibench.ClosedLoop(bb.ctx, s.clients, min(time.Second, s.duration/10), send)
		run := apibench.ClosedLoop(bb.ctx, s.clients, s.duration, send)
		name := "one project"
		if projects > 1 {
			name = fmt.Sprintf("clients spread over %d projects", projects)
		}
		reports = append(reports, apibench.NewPostReport(name, projects, s.clients, run, http.StatusCreated))
	}
	return reports
}

// listPage is what GET /v1/hooks answers, as far as paging needs.
type listPage struct {
	Data []json.RawMessage `json:"data"`
	Meta struct {
		TotalItems int    `json:"totalItems"`
		NextCursor string `json:"nextCursor"`
	} `json:"meta"`
}

// listCase is one GET /v1/hooks timing: a query, and how many pages to
// follow before the page that is timed.
type listCase struct {
	name, query string
	skip        int
}

// list times each case with one client: GET /v1/hooks is being built, and
// until it answers 200 each case is reported as not available.
func (bb *bundle) list() []apibench.ListReport {
	cases := []listCase{
		{"first page, limit 100", "limit=100", 0},
		{"page 51 (50 cursors deep), limit 100", "limit=100", 50},
		{"first page, status=failed", "limit=100&status=failed", 0},
		{"first page, sortBy=postAt asc", "limit=100&sortBy=postAt&sortOrder=asc", 0},
		{"first page, limit 1000", "limit=1000", 0},
	}
	reports := make([]apibench.ListReport, 0, len(cases))
	for _, c := range cases {
		reports = append(reports, bb.listCase(c))
	}
	return reports
}

func (bb *bundle) listCase(c listCase) apibench.ListReport {
	path := "/v1/hooks?" + c.query
	for range c.skip {
		var page listPage
		if _, err := bb.send(bb.ctx, http.MethodGet, path, bb.listKey, nil, &page); err != nil {
			return unavailable(c.name, err)
		}
		if page.Meta.NextCursor == "" {
			return apibench.ListReport{Name: c.name, Note: fmt.Sprintf("no nextCursor after %d hooks", len(page.Data))}
		}
		path = "/v1/hooks?" + c.query + "&cursor=" + url.QueryEscape(page.Meta.NextCursor)
	}
	get := func(ctx context.Context) (int, error) {
		var page listPage
		status, err := bb.send(ctx, http.MethodGet, path, bb.listKey, nil, &page)
		if err == nil && len(page.Data) == 0 {
			return 0, fmt.Errorf("GET %s: an empty page", path)
		}
		return status, err
	}
	if _, _, err := apibench.Sequential(bb.ctx, 5, time.Minute, http.StatusOK, get); err != nil {
		return unavailable(c.name, err)
	}
	latencies, _, err := apibench.Sequential(bb.ctx, 500, 10*time.Second, http.StatusOK, get)
	if err != nil {
		return unavailable(c.name, err)
	}
	return apibench.NewListReport(c.name, latencies)
}

func unavailable(name string, err error) apibench.ListReport {
	r := apibench.ListReport{Name: name, Note: err.Error()}
	if se, ok := err.(*statusError); ok {
		r.Status = se.status
	}
	return r
}

// BenchmarkAPI measures the API end to end, once per run whatever b.N:
// POST /v1/hooks throughput and latency with closed-loop clients for a
// fixed duration (in one project, then spread over several), then GET
// /v1/hooks latency on a project of a million
// hooks beside another of a million (loaded by COPY, not through the API).
// It prints a table and writes the JSON report (see the package doc for
// the settings).
func BenchmarkAPI(b *testing.B) {
	s := settingsFromEnv(b)
	bb := setup(b, s)
	report := apibench.Report{Machine: apibench.ThisMachine(bb.pgServer)}
	report.Load = bb.load(s.listHooks)
	bb.start()
	report.Post = bb.post(s)
	report.List = bb.list()
	report.Machine.Finish()

	require.NoError(b, report.Print(os.Stdout))
	require.NoError(b, report.WriteJSON(s.out))
	fmt.Printf("report written to %s\n", s.out)

	b.ReportMetric(0, "ns/op") // one run whatever b.N: a time per op means nothing
	b.ReportMetric(report.Post[0].HooksPerSecond, "hooks/s")
	b.ReportMetric(report.Post[0].P50Ms, "post-p50-ms")
	b.ReportMetric(report.Post[0].P99Ms, "post-p99-ms")
	for i, name := range []string{"list-first", "list-page51"} {
		if l := report.List[i]; l.Available {
			b.ReportMetric(l.P50Ms, name+"-p50-ms")
			b.ReportMetric(l.P99Ms, name+"-p99-ms")
		}
	}
}
