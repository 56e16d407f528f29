package crash

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/sundial-run/sundial/pkg/testkit/logtest"
	"github.com/sundial-run/sundial/tests/internal/apiclient"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/pkg/testkit/natstest"
	"github.com/sundial-run/sundial/pkg/testkit/pgtest"
	gateway "github.com/sundial-run/sundial/services/gateway/app"
	notifier "github.com/sundial-run/sundial/services/notifier/app"
	scheduler "github.com/sundial-run/sundial/services/scheduler/app"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// bundle is gateway, scheduler and notifier running in-process on a fresh
// database and NATS server, with a project whose domain is the receiver;
// the dispatcher runs as separate processes started by startDispatcher.
type bundle struct {
	env      map[string]string
	receiver *blockingReceiver
	creds    gateway.Credentials
	baseURL  string
	binary   string

	mu    sync.Mutex
	stops []func()
}

func setup(t *testing.T, hold int) *bundle {
	t.Helper()
	ctx := context.Background()
	dbURL := pgtest.NewDB(t)
	ns := natstest.Start(t, natstest.Options{})
	rcv := newBlockingReceiver(t, hold)
	b := &bundle{
		receiver: rcv,
		binary:   buildDispatcher(t),
		env: map[string]string{
			"SUNDIAL_DATABASE_URL":            dbURL,
			"SUNDIAL_NATS_URL":                ns.ClientURL(),
			"SUNDIAL_HTTP_ADDR":               "127.0.0.1:0",
			"SUNDIAL_DELIVERY_ALLOW_PRIVATE":  "true",
			"SUNDIAL_DELIVERY_CA_FILE":        rcv.CAFile,
			"SUNDIAL_LEASE_DURATION":          "3s",
			"SUNDIAL_SCHEDULER_POLL_INTERVAL": "50ms",
			"SUNDIAL_SHUTDOWN_TIMEOUT":        "5s",
			"SUNDIAL_LOG_LEVEL":               "warn",
		},
	}
	t.Cleanup(b.stopAll)
	creds, err := gateway.CreateProject(ctx, dbURL, "crash", rcv.Domain())
	require.NoError(t, err)
	b.creds = creds
	b.startGateway(t)
	b.startScheduler(t)
	b.startNotifier(t)
	return b
}

// buildDispatcher builds the dispatcher binary once per test; the workspace
// resolves it and the build cache makes a rebuild cheap. It goes to the
// test's temporary directory because pgtest.Main exits without a hook to
// remove a directory made in TestMain.
func buildDispatcher(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "dispatcher")
	cmd := exec.Command("go", "build", "-o", out, "github.com/sundial-run/sundial/services/dispatcher/cmd/dispatcher")
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build dispatcher: %s", msg)
	return out
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

func (b *bundle) startScheduler(t *testing.T) {
	t.Helper()
	cfg, err := scheduler.ConfigFromEnv(envconf.Map(b.env))
	require.NoError(t, err)
	a, err := scheduler.New(context.Background(), cfg, logger("scheduler"))
	require.NoError(t, err)
	b.keepRunning(t, "scheduler", a.Run)
}

func (b *bundle) startNotifier(t *testing.T) {
	t.Helper()
	cfg, err := notifier.ConfigFromEnv(envconf.Map(b.env))
	require.NoError(t, err)
	a, err := notifier.New(context.Background(), cfg, logger("notifier"))
	require.NoError(t, err)
	b.keepRunning(t, "notifier", a.Run)
}

// keepRunning runs a service until the suite stops, and reports an unclean
// stop.
func (b *bundle) keepRunning(t *testing.T, name string, run func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stops = append(b.stops, func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("%s stopped with error: %v", name, err)
		}
	})
}

// stopAll stops the services in reverse order of their start.
func (b *bundle) stopAll() {
	b.mu.Lock()
	stops := b.stops
	b.stops = nil
	b.mu.Unlock()
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i]()
	}
}

// process is a running dispatcher process.
type process struct {
	cmd    *exec.Cmd
	done   chan struct{}
	output *logtest.Buffer
}

// startDispatcher starts a dispatcher process on the suite's environment;
// it is killed at cleanup if still running, and its output logged then.
func (b *bundle) startDispatcher(t *testing.T, concurrency string) *process {
	t.Helper()
	cmd := exec.Command(b.binary)
	cmd.Env = os.Environ()
	for _, k := range []string{"SUNDIAL_DATABASE_URL", "SUNDIAL_NATS_URL", "SUNDIAL_DELIVERY_ALLOW_PRIVATE", "SUNDIAL_DELIVERY_CA_FILE"} {
		cmd.Env = append(cmd.Env, k+"="+b.env[k])
	}
	cmd.Env = append(cmd.Env, "SUNDIAL_LOG_LEVEL=warn", "SUNDIAL_DISPATCHER_CONCURRENCY="+concurrency)
	p := &process{cmd: cmd, done: make(chan struct{}), output: &logtest.Buffer{}}
	cmd.Stdout = p.output
	cmd.Stderr = p.output
	require.NoError(t, cmd.Start())
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		t.Logf("dispatcher pid %d output:\n%s", cmd.Process.Pid, p.output.String())
	})
	return p
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// hook is the API's view of a hook, as far as this test looks at it.
type hook struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
}

// api is the suite's client of the gateway, as its project.
func (b *bundle) api() apiclient.Client {
	return apiclient.Client{BaseURL: b.baseURL, APIKey: b.creds.APIKey, HTTP: http.DefaultClient}
}

func (b *bundle) do(t *testing.T, method, path string, body any) (*http.Response, []byte) {
	t.Helper()
	return b.api().Do(t, method, path, body)
}

// schedule creates a hook and returns it.
func (b *bundle) schedule(t *testing.T, req map[string]any) hook {
	t.Helper()
	h := apiclient.Schedule[hook](t, b.api(), req)
	require.NotEmpty(t, h.ID)
	return h
}

// completed lists the project's completed hooks (one page of up to 1000).
func (b *bundle) completed(t *testing.T) (hooks []hook, total int) {
	t.Helper()
	resp, raw := b.do(t, http.MethodGet, "/v1/hooks?status=completed&limit=1000", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET /v1/hooks: %s", raw)
	var out struct {
		Data []hook
		Meta struct {
			TotalItems int `json:"totalItems"`
		}
	}
	require.NoError(t, json.Unmarshal(raw, &out))
	return out.Data, out.Meta.TotalItems
}
