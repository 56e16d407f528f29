package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/envconf"
	dispatcher "github.com/sundial-run/sundial/services/dispatcher/app"
	gateway "github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/openapi/contract"
	notifier "github.com/sundial-run/sundial/services/notifier/app"
	scheduler "github.com/sundial-run/sundial/services/scheduler/app"
	"github.com/sundial-run/sundial/testkit/logtest"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
	https "github.com/sundial-run/sundial/testkit/receiver"
	"github.com/sundial-run/sundial/testkit/secrettest"
	"github.com/sundial-run/sundial/tests/internal/apiclient"
	"github.com/sundial-run/sundial/tests/internal/inproc"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// received is one request as the receiver saw it.
type received struct {
	Header http.Header
	Body   []byte
	At     time.Time
}

// receiver is an HTTPS endpoint that records what it gets and answers with
// the statuses it is told, in order (then 200).
type receiver struct {
	srv *https.Receiver
	// CAFile trusts the receiver's certificate (and every other test
	// receiver's: one CA signs them all), for the dispatcher.
	CAFile string

	mu       sync.Mutex
	got      []received
	statuses []int
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	t.Helper()
	r := &receiver{statuses: statuses}
	r.srv = https.StartT(t, http.HandlerFunc(r.serve), https.Options{})
	r.CAFile = https.CAFile(t)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.got = append(r.got, received{Header: req.Header.Clone(), Body: body, At: time.Now()})
	status := http.StatusOK
	if len(r.statuses) > 0 {
		status, r.statuses = r.statuses[0], r.statuses[1:]
	}
	r.mu.Unlock()
	w.WriteHeader(status)
	_, _ = io.WriteString(w, `{"ok":true}`)
}

// Domain is the receiver's host:port, the project's domain.
func (r *receiver) Domain() string { return r.srv.Addr() }

// Received returns a copy of what arrived so far.
func (r *receiver) Received() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// bundle is a running suite.
type bundle struct {
	ctx      context.Context
	env      map[string]string
	nats     *natstest.Server
	receiver *receiver
	creds    gateway.Credentials
	baseURL  string
	// client checks every exchange with the gateway against its OpenAPI
	// document.
	client *http.Client
	// logs, when set, gets every service's log lines at debug level (JSON).
	logs io.Writer
	// captured gets them at info level otherwise; a failed test logs its
	// end.
	captured *logtest.Buffer
	// services are the services running in-process.
	services inproc.Group
}

type options struct {
	statuses []int
	// without lists services not started by setup (start them with start).
	without map[string]bool
	// natsMaxPayload is the NATS server's max_payload (0: natstest's).
	natsMaxPayload int32
	// env adds to or overrides the services' environment.
	env map[string]string
	// logs, when set, gets every service's log lines at debug level (JSON)
	// instead of the bundle's buffer at info.
	logs io.Writer
}

// setup boots a suite on a fresh database and NATS server with a project
// whose domain is a fresh HTTPS receiver.
func setup(t *testing.T, opts options) *bundle {
	t.Helper()
	ctx := context.Background()
	dbURL := pgtest.NewDB(t)
	ns := natstest.Start(t, natstest.Options{MaxPayload: opts.natsMaxPayload})
	rcv := newReceiver(t, opts.statuses...)
	b := &bundle{
		ctx:      ctx,
		nats:     ns,
		receiver: rcv,
		logs:     opts.logs,
		env: map[string]string{
			"SUNDIAL_DATABASE_URL":            dbURL,
			"SUNDIAL_SECRET_KEYS":             secrettest.Keys,
			"SUNDIAL_NATS_URL":                ns.ClientURL(),
			"SUNDIAL_GATEWAY_ADMIN_ADDR":      "127.0.0.1:0",
			"SUNDIAL_SCHEDULER_ADMIN_ADDR":    "127.0.0.1:0",
			"SUNDIAL_DISPATCHER_ADMIN_ADDR":   "127.0.0.1:0",
			"SUNDIAL_NOTIFIER_ADMIN_ADDR":     "127.0.0.1:0",
			"SUNDIAL_HTTP_ADDR":               "127.0.0.1:0",
			"SUNDIAL_DELIVERY_ALLOW_PRIVATE":  "true",
			"SUNDIAL_DELIVERY_CA_FILE":        rcv.CAFile,
			"SUNDIAL_LEASE_DURATION":          "2s",
			"SUNDIAL_SCHEDULER_POLL_INTERVAL": "50ms",
			"SUNDIAL_SHUTDOWN_TIMEOUT":        "5s",
			"SUNDIAL_LOG_LEVEL":               "warn",
			// Each service's pool small: tests run side by side (and
			// beside other packages) against one PostgreSQL, whose
			// max_connections may be the default 100; the services'
			// defaults together (16+16+8+4 and two listeners) would
			// exhaust it with two suites and a second gateway.
			"SUNDIAL_DATABASE_MAX_CONNS": "6",
		},
	}
	maps.Copy(b.env, opts.env)
	b.client = contract.Client(t)
	b.captured = &logtest.Buffer{}
	t.Cleanup(func() {
		if t.Failed() && b.logs == nil {
			t.Logf("the services' log:\n%s", b.captured.Tail(logtest.FailureTail))
		}
	})
	t.Cleanup(b.stopAll)
	creds, err := gateway.CreateProject(ctx, gateway.Database{URL: dbURL, SecretKeys: secrettest.Keys}, "e2e", rcv.Domain())
	require.NoError(t, err)
	b.creds = creds
	for _, name := range []string{"gateway", "scheduler", "dispatcher", "notifier"} {
		if !opts.without[name] {
			b.start(t, name)
		}
	}
	return b
}

func (b *bundle) logger(name string) *slog.Logger {
	if b.logs != nil {
		return slog.New(slog.NewJSONHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelDebug})).With("service", name)
	}
	return slog.New(slog.NewTextHandler(b.captured, &slog.HandlerOptions{Level: slog.LevelInfo})).With("service", name)
}

// start boots one service in-process.
func (b *bundle) start(t *testing.T, name string) {
	t.Helper()
	lookup := envconf.Map(b.env)
	var run func(context.Context) error
	switch name {
	case "gateway":
		cfg, err := gateway.ConfigFromEnv(lookup)
		require.NoError(t, err)
		a, err := gateway.New(b.ctx, cfg, b.logger(name))
		require.NoError(t, err)
		b.baseURL = "http://" + a.Addr()
		run = a.Run
	case "scheduler":
		cfg, err := scheduler.ConfigFromEnv(lookup)
		require.NoError(t, err)
		a, err := scheduler.New(b.ctx, cfg, b.logger(name))
		require.NoError(t, err)
		run = a.Run
	case "dispatcher":
		cfg, err := dispatcher.ConfigFromEnv(lookup)
		require.NoError(t, err)
		a, err := dispatcher.New(b.ctx, cfg, b.logger(name))
		require.NoError(t, err)
		run = a.Run
	case "notifier":
		cfg, err := notifier.ConfigFromEnv(lookup)
		require.NoError(t, err)
		a, err := notifier.New(b.ctx, cfg, b.logger(name))
		require.NoError(t, err)
		run = a.Run
	default:
		t.Fatalf("unknown service %q", name)
	}
	b.keepRunning(t, name, run)
}

// keepRunning runs a service's Run until the suite stops, and reports an
// unclean stop.
func (b *bundle) keepRunning(t *testing.T, name string, run func(context.Context) error) {
	b.services.Go(b.ctx, t, name, run)
}

// stopAll stops the services in reverse order of their start.
func (b *bundle) stopAll() {
	b.services.Stop()
}

// hook is the API's view of a hook, as far as these tests look at it.
type hook struct {
	ID                  string          `json:"id"`
	Path                string          `json:"path"`
	Domain              string          `json:"domain"`
	Data                json.RawMessage `json:"data"`
	PostAt              time.Time       `json:"postAt"`
	Status              string          `json:"status"`
	Attempts            int             `json:"attempts"`
	PostDurationSeconds float64         `json:"postDurationSeconds"`
	FailureError        string          `json:"failureError"`
	CreatedAt           time.Time       `json:"createdAt"`
	UpdatedAt           time.Time       `json:"updatedAt"`
}

// api is the suite's client of the gateway, as its project.
func (b *bundle) api() apiclient.Client {
	return apiclient.Client{BaseURL: b.baseURL, APIKey: b.creds.APIKey, HTTP: b.client}
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

func (b *bundle) get(t *testing.T, id string) hook {
	t.Helper()
	resp, raw := b.do(t, http.MethodGet, "/v1/hooks/"+id, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET /v1/hooks/%s: %s", id, raw)
	var out struct{ Data hook }
	require.NoError(t, json.Unmarshal(raw, &out))
	return out.Data
}

// waitStatus waits until the hook has the status, and returns it.
func (b *bundle) waitStatus(t *testing.T, id, status string, within time.Duration) hook {
	t.Helper()
	var last hook
	require.Eventually(t, func() bool {
		last = b.get(t, id)
		return last.Status == status
	}, within, 50*time.Millisecond, "hook %s never became %s", id, status)
	return last
}

func (b *bundle) String() string { return fmt.Sprintf("suite at %s", b.baseURL) }
