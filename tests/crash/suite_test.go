package crash

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	gateway "github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/cli"
	notifier "github.com/sundial-run/sundial/services/notifier/app"
	"github.com/sundial-run/sundial/testkit/logtest"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
	"github.com/sundial-run/sundial/tests/internal/apiclient"
	"github.com/sundial-run/sundial/tests/internal/checker"
	"github.com/sundial-run/sundial/tests/internal/inproc"
	"github.com/sundial-run/sundial/tests/internal/proc"
	"github.com/sundial-run/sundial/tests/internal/recorder"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// options shape a suite.
type options struct {
	// hold is how many deliveries the receiver holds until released.
	hold int
	// lease is SUNDIAL_LEASE_DURATION; default 15s: short, so that lost
	// work is re-driven within the test, yet long enough that queueing, a
	// delivery and its result fit in it on a loaded 2-core machine (at 3 s
	// and even 10 s, parallel tests pushed healthy deliveries past their
	// lease and re-drove them: a duplicate that no fault caused).
	lease string
	// dbURL is a migrated database; default a fresh pgtest one.
	dbURL string
	// projects is how many projects deliver to the receiver (default 1);
	// their rate limits are raised so that the limiter never refuses.
	projects int
	// gatewayProcess runs the gateway as a process (built without the race
	// detector, for speed) instead of in-process.
	gatewayProcess bool
	// quota is the projects' monthly hook quota (0: the default 100,000).
	quota int
}

// bundle is a Sundial suite on a fresh database and NATS server whose
// projects deliver to one recording receiver. The gateway (unless
// gatewayProcess) and the notifier run in-process; schedulers and
// dispatchers are processes that tests start and kill.
type bundle struct {
	env      map[string]string
	nats     *natstest.Server
	receiver *recorder.Receiver
	projects []gateway.Credentials
	baseURL  string
	// gateway is the gateway's process (gatewayProcess only).
	gateway *proc.Process
	http    *http.Client
	// notifierLog holds the in-process notifier's log, at info level: its
	// one line per alert shows what it received.
	notifierLog *logtest.Buffer

	services inproc.Group
	mu       sync.Mutex
	accepted map[string]time.Time
	// procs are the processes started, for explainDuplicates.
	procs []*proc.Process
}

func setup(t *testing.T, opts options) *bundle {
	t.Helper()
	ctx := context.Background()
	if opts.lease == "" {
		opts.lease = "15s"
	}
	if opts.dbURL == "" {
		opts.dbURL = pgtest.NewDB(t)
	}
	if opts.projects == 0 {
		opts.projects = 1
	}
	ns := natstest.Start(t, natstest.Options{})
	rcv := recorder.Start(t, opts.hold)
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 64
	t.Cleanup(transport.CloseIdleConnections)
	b := &bundle{
		nats:     ns,
		receiver: rcv,
		http:     &http.Client{Transport: transport, Timeout: 30 * time.Second},
		accepted: map[string]time.Time{},
		env: map[string]string{
			"SUNDIAL_DATABASE_URL":            opts.dbURL,
			"SUNDIAL_SECRET_KEYS":             secrettest.Keys,
			"SUNDIAL_NATS_URL":                ns.ClientURL(),
			"SUNDIAL_GATEWAY_ADMIN_ADDR":      "127.0.0.1:0",
			"SUNDIAL_SCHEDULER_ADMIN_ADDR":    "127.0.0.1:0",
			"SUNDIAL_DISPATCHER_ADMIN_ADDR":   "127.0.0.1:0",
			"SUNDIAL_NOTIFIER_ADMIN_ADDR":     "127.0.0.1:0",
			"SUNDIAL_HTTP_ADDR":               "127.0.0.1:0",
			"SUNDIAL_DELIVERY_ALLOW_PRIVATE":  "true",
			"SUNDIAL_DELIVERY_CA_FILE":        rcv.CAFile,
			"SUNDIAL_LEASE_DURATION":          opts.lease,
			"SUNDIAL_SCHEDULER_POLL_INTERVAL": "50ms",
			// The shared test server allows 100 connections for every
			// package and engineer using it; small pools leave room.
			"SUNDIAL_DATABASE_MAX_CONNS": "4",
			"SUNDIAL_SHUTDOWN_TIMEOUT":   "5s",
			"SUNDIAL_LOG_LEVEL":          "warn",
		},
	}
	t.Cleanup(b.stopAll)
	for i := range opts.projects {
		creds, err := gateway.CreateProject(ctx, gateway.Database{URL: opts.dbURL, SecretKeys: secrettest.Keys}, fmt.Sprintf("crash-%d", i), rcv.Domain())
		require.NoError(t, err)
		b.setPlan(t, creds.ProjectID, opts.quota)
		b.projects = append(b.projects, creds)
	}
	if opts.gatewayProcess {
		b.startGatewayProcess(t)
	} else {
		b.startGateway(t)
	}
	b.startNotifier(t)
	return b
}

// setPlan lifts the project's per-key rate limit (default 100/s) so that
// the suites can create hooks as fast as the gateway takes them, and sets
// its quota unless 0.
func (b *bundle) setPlan(t *testing.T, projectID string, quota int) {
	t.Helper()
	var out strings.Builder
	env := cli.Env{Stdout: &out, Stderr: &out, Lookup: envconf.Map(b.env)}
	args := []string{"admin", "set-plan", "--project", projectID, "--rate-limit", "100000", "--rate-burst", "100000"}
	if quota > 0 {
		args = append(args, "--quota", fmt.Sprint(quota))
	}
	code := cli.Run(context.Background(), args, env)
	require.Equal(t, cli.ExitOK, code, "set-plan: %s", out.String())
}

func logger(name string) *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("service", name)
}

func (b *bundle) startGateway(t *testing.T) {
	t.Helper()
	cfg, err := gateway.ConfigFromEnv(envconf.Map(b.env))
	require.NoError(t, err)
	a, err := gateway.New(context.Background(), cfg, logger("gateway"))
	require.NoError(t, err)
	b.baseURL = "http://" + a.Addr()
	b.keepRunning(t, "gateway", a.Run)
}

// startGatewayProcess runs `gateway serve` on a free port and waits until
// it answers.
func (b *bundle) startGatewayProcess(t *testing.T) {
	t.Helper()
	addr := freeAddr(t)
	b.gateway = b.start(t, "gateway", map[string]string{"SUNDIAL_HTTP_ADDR": addr, "SUNDIAL_DATABASE_MAX_CONNS": "12"}, "serve")
	b.baseURL = "http://" + addr
	require.Eventually(t, func() bool {
		resp, err := b.http.Get(b.baseURL + "/v1/openapi.json")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 20*time.Millisecond, "the gateway process never answered on %s", addr)
}

func (b *bundle) startNotifier(t *testing.T) {
	t.Helper()
	cfg, err := notifier.ConfigFromEnv(envconf.Map(b.env))
	require.NoError(t, err)
	b.notifierLog = &logtest.Buffer{}
	log := slog.New(slog.NewTextHandler(b.notifierLog, &slog.HandlerOptions{Level: slog.LevelInfo}))
	a, err := notifier.New(context.Background(), cfg, log)
	require.NoError(t, err)
	b.keepRunning(t, "notifier", a.Run)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("notifier output:\n%s", b.notifierLog.String())
		}
	})
}

// keepRunning runs an in-process service until the suite stops, and
// reports an unclean stop.
func (b *bundle) keepRunning(t *testing.T, name string, run func(context.Context) error) {
	b.services.Go(context.Background(), t, name, run)
}

// stopAll stops the in-process services in reverse order of their start.
func (b *bundle) stopAll() {
	b.services.Stop()
}

// restartNATS replaces the NATS server with a new one on the same port,
// its store wiped when asked; the services must find it by themselves.
func (b *bundle) restartNATS(t *testing.T, wipe bool) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nats = b.nats.Restart(t, wipe)
}

func (b *bundle) natsServer() *natstest.Server {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.nats
}

// start runs a service's binary on the suite's environment plus extra; it
// is killed at cleanup if still running, and its output logged if the test
// failed.
func (b *bundle) start(t *testing.T, name string, extra map[string]string, args ...string) *proc.Process {
	t.Helper()
	p := proc.Start(t, name, binaries.Path(t, name), []map[string]string{b.env, extra}, args...)
	b.mu.Lock()
	b.procs = append(b.procs, p)
	b.mu.Unlock()
	return p
}

// startScheduler starts a scheduler process; extra overrides the suite's
// environment (a proxied NATS URL, say).
func (b *bundle) startScheduler(t *testing.T, extra map[string]string) *proc.Process {
	t.Helper()
	return b.start(t, "scheduler", extra)
}

// startDispatcher starts a dispatcher process with the given delivery
// concurrency.
func (b *bundle) startDispatcher(t *testing.T, concurrency int) *proc.Process {
	t.Helper()
	return b.start(t, "dispatcher", map[string]string{"SUNDIAL_DISPATCHER_CONCURRENCY": fmt.Sprint(concurrency)})
}

// binaries are the services that the tests run as processes, built once
// for all the tests of the run.
var binaries = proc.Binaries{Packages: []string{
	"github.com/sundial-run/sundial/services/gateway/cmd/gateway",
	"github.com/sundial-run/sundial/services/scheduler/cmd/scheduler",
	"github.com/sundial-run/sundial/services/dispatcher/cmd/dispatcher",
	"github.com/sundial-run/sundial/services/notifier/cmd/notifier",
}}

// useBinaries registers the test as a user of the binaries; call it before
// t.Parallel.
func useBinaries(t *testing.T) { binaries.Use(t) }

// hook is the API's view of a hook, as far as these tests look at it.
type hook struct {
	ID       string    `json:"id"`
	Status   string    `json:"status"`
	Attempts int       `json:"attempts"`
	PostAt   time.Time `json:"postAt"`
}

// api is a client of the gateway as project i.
func (b *bundle) api(i int) apiclient.Client {
	return apiclient.Client{BaseURL: b.baseURL, APIKey: b.projects[i].APIKey, HTTP: b.http}
}

// accept records a hook the API answered 201 for: the checker expects it.
func (b *bundle) accept(h hook) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.accepted[h.ID] = h.PostAt
}

func (b *bundle) acceptedCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.accepted)
}

// schedule creates a hook as the first project and records it as accepted.
func (b *bundle) schedule(t *testing.T, req map[string]any) hook {
	t.Helper()
	h := apiclient.Schedule[hook](t, b.api(0), req)
	require.NotEmpty(t, h.ID)
	b.accept(h)
	return h
}

// create sends one POST /v1/hooks from any goroutine. It returns the
// status and, on 201, records the hook as accepted.
func (b *bundle) create(project int, req map[string]any) (int, error) {
	resp, raw, err := b.api(project).Send(http.MethodPost, "/v1/hooks", req)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusCreated {
		return resp.StatusCode, nil
	}
	var out struct{ Data hook }
	if err := json.Unmarshal(raw, &out); err != nil || out.Data.ID == "" {
		return resp.StatusCode, fmt.Errorf("201 without a hook: %s", raw)
	}
	b.accept(out.Data)
	return resp.StatusCode, nil
}

// createMany creates n hooks through `workers` concurrent clients spread
// over the projects; req(i) is the i-th request. Every answer must be 201.
func (b *bundle) createMany(t *testing.T, n, workers int, req func(i int) map[string]any) {
	t.Helper()
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range next {
				status, err := b.create(w%len(b.projects), req(i))
				if err == nil && status != http.StatusCreated {
					err = fmt.Errorf("hook %d: POST /v1/hooks answered %d", i, status)
				}
				if err != nil {
					errs <- err
					// Drain so the feeder never blocks; later errors
					// repeat the first.
					for range next {
					}
					return
				}
			}
		})
	}
	for i := range n {
		select {
		case next <- i:
		case err := <-errs:
			close(next)
			wg.Wait()
			t.Fatalf("creating hooks: %v", err)
		}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatalf("creating hooks: %v", err)
	default:
	}
}

// completed counts the completed hooks of all projects.
func (b *bundle) completed(t *testing.T) int {
	t.Helper()
	return b.count(t, "?status=completed&limit=1")
}

// count sums the totalItems of a listing over all projects.
func (b *bundle) count(t *testing.T, query string) int {
	t.Helper()
	total := 0
	for i := range b.projects {
		resp, raw := b.api(i).Do(t, http.MethodGet, "/v1/hooks"+query, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, "GET /v1/hooks: %s", raw)
		var out struct {
			Meta struct {
				TotalItems int `json:"totalItems"`
			}
		}
		require.NoError(t, json.Unmarshal(raw, &out))
		total += out.Meta.TotalItems
	}
	return total
}

// completedHooks lists the first project's completed hooks (up to 1000).
func (b *bundle) completedHooks(t *testing.T) []hook {
	t.Helper()
	resp, raw := b.api(0).Do(t, http.MethodGet, "/v1/hooks?status=completed&limit=1000", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET /v1/hooks: %s", raw)
	var out struct{ Data []hook }
	require.NoError(t, json.Unmarshal(raw, &out))
	return out.Data
}

// settle waits until every accepted hook is completed and no DueHook that a
// dispatcher could still deliver is left in NATS (those left carry expired
// leases, which dispatchers skip): from then on no arrival can come, so
// the receiver's record is final. It returns the checker's report.
func (b *bundle) settle(t *testing.T, within time.Duration) checker.Report {
	t.Helper()
	want := b.acceptedCount()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		completed := b.completed(t)
		require.GreaterOrEqual(c, completed, want, "hooks completed (%d distinct ids arrived)", b.receiver.Distinct())
		live, err := b.liveDueHooks()
		require.NoError(c, err)
		require.Zero(c, live, "deliverable DueHooks left in NATS")
	}, within, 100*time.Millisecond, "the suite never settled")
	// A request the API refused must have created nothing.
	require.Equal(t, want, b.count(t, "?limit=1"), "the projects hold hooks that the API never answered 201 for")
	b.mu.Lock()
	accepted := make(map[string]time.Time, len(b.accepted))
	for id, at := range b.accepted {
		accepted[id] = at
	}
	b.mu.Unlock()
	r := checker.Check(accepted, b.receiver.Arrivals())
	t.Log(r.String())
	return r
}

// requireClean fails the test on every problem the checker found. Before
// failing on duplicates it logs what explains them (explainDuplicates).
func (b *bundle) requireClean(t *testing.T, r checker.Report, maxDuplicates int) {
	t.Helper()
	if r.TotalDuplicates() > maxDuplicates {
		b.explainDuplicates(t, r)
	}
	require.Empty(t, r.Problems(maxDuplicates), "checker: %s", r)
}

// explainDuplicates logs, for a few of the hooks that arrived more than
// once, each arrival, the attempts the hook recorded and the lines of the
// processes' logs that name it: whether the second arrival was a retry of
// a failed attempt, a re-drive after the lease, or a message delivered
// twice shows there (at info level, as in the load test, the dispatcher
// logs each delivery with its attempt and lease).
func (b *bundle) explainDuplicates(t *testing.T, r checker.Report) {
	t.Helper()
	ids := slices.Sorted(maps.Keys(r.Duplicates))
	arrivals := b.receiver.Arrivals()
	b.mu.Lock()
	procs := slices.Clone(b.procs)
	b.mu.Unlock()
	for _, id := range ids[:min(len(ids), 5)] {
		var why strings.Builder
		fmt.Fprintf(&why, "hook %s arrived %d times:\n", id, r.Duplicates[id]+1)
		for _, a := range arrivals {
			if a.ID == id {
				fmt.Fprintf(&why, "  arrival at %s, signed at %d\n", a.At.Format(time.RFC3339Nano), a.Timestamp)
			}
		}
		fmt.Fprintf(&why, "  attempts: %s\n", b.attempts(t, id))
		for _, p := range procs {
			for _, line := range p.Lines(id, 20) {
				fmt.Fprintf(&why, "  %s pid %d: %s\n", p.Name, p.Cmd.Process.Pid, line)
			}
		}
		t.Log(why.String())
	}
}

// attempts is the body of GET /v1/hooks/{id}/attempts from the project
// that holds the hook.
func (b *bundle) attempts(t *testing.T, id string) string {
	t.Helper()
	for i := range b.projects {
		resp, raw := b.api(i).Do(t, http.MethodGet, "/v1/hooks/"+id+"/attempts", nil)
		if resp.StatusCode == http.StatusOK {
			return string(raw)
		}
	}
	return "(no project holds the hook)"
}

// liveDueHooks counts the DueHooks in NATS whose lease has not expired:
// messages a dispatcher would still deliver.
func (b *bundle) liveDueHooks() (int, error) {
	live := 0
	err := b.eachDueHook(func(due *eventv1.DueHook) {
		if time.Now().Before(due.GetLeaseExpiresAt().AsTime()) {
			live++
		}
	})
	return live, err
}

// dueHookIDs returns the ids of the hooks that have a DueHook in NATS.
func (b *bundle) dueHookIDs() (map[string]bool, error) {
	ids := map[string]bool{}
	err := b.eachDueHook(func(due *eventv1.DueHook) { ids[due.GetHookId()] = true })
	return ids, err
}

// eachDueHook calls fn on every DueHook in the DUE stream, alone or in a
// batch, without consuming it.
func (b *bundle) eachDueHook(fn func(*eventv1.DueHook)) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	nc, err := natsConnect(b.natsServer().ClientURL())
	if err != nil {
		return err
	}
	defer nc.close()
	st, err := nc.js.Stream(ctx, event.StreamDue)
	if err != nil {
		return err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return err
	}
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		msg, err := st.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // acknowledged and removed
		}
		if err != nil {
			return err
		}
		hooks, err := event.DecodeDue(msg.Header.Get(event.TypeHeader), msg.Data)
		if err != nil {
			return err
		}
		for _, due := range hooks {
			fn(due)
		}
	}
	return nil
}
