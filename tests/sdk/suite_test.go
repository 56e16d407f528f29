package sdk

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/envconf"
	sundial "github.com/sundial-run/sundial/sdk"
	dispatcher "github.com/sundial-run/sundial/services/dispatcher/app"
	gateway "github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/openapi/contract"
	scheduler "github.com/sundial-run/sundial/services/scheduler/app"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
	https "github.com/sundial-run/sundial/testkit/receiver"
	"github.com/sundial-run/sundial/testkit/secrettest"
	"github.com/sundial-run/sundial/tests/internal/inproc"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// bundle is a gateway (and, with deliveries, a scheduler and a dispatcher)
// for one project, and the SDK's client of it.
type bundle struct {
	ctx   context.Context
	env   map[string]string
	creds gateway.Credentials
	// baseURL is the gateway's address.
	baseURL string
	// httpClient checks every exchange against the OpenAPI document.
	httpClient *http.Client
	client     *sundial.Client
	// receiver is the project's domain: an HTTPS server whose handler the
	// test sets (receive).
	receiver *https.Receiver
	handler  atomic.Pointer[http.Handler]

	services inproc.Group
}

// setup boots a gateway on a fresh database and NATS server, with a project
// whose domain is an HTTPS receiver, and the SDK's client of it, every
// exchange checked against the OpenAPI document. With deliveries, the
// scheduler and the dispatcher run too.
func setup(t *testing.T, deliveries bool) *bundle {
	t.Helper()
	ctx := context.Background()
	dbURL := pgtest.NewDB(t)
	ns := natstest.Start(t, natstest.Options{})
	b := &bundle{
		ctx: ctx,
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
			"SUNDIAL_DELIVERY_CA_FILE":        https.CAFile(t),
			"SUNDIAL_SCHEDULER_POLL_INTERVAL": "50ms",
			"SUNDIAL_SHUTDOWN_TIMEOUT":        "5s",
			"SUNDIAL_LOG_LEVEL":               "warn",
			// Small pools: suites share one PostgreSQL.
			"SUNDIAL_DATABASE_MAX_CONNS": "6",
		},
	}
	t.Cleanup(b.stopAll)
	b.receiver = https.StartT(t, http.HandlerFunc(b.serve), https.Options{})
	creds, err := gateway.CreateProject(ctx, gateway.Database{URL: dbURL, SecretKeys: secrettest.Keys}, "sdk", b.receiver.Addr())
	require.NoError(t, err)
	b.creds = creds
	b.baseURL = b.startGateway(t)
	b.httpClient = contract.Client(t)
	b.client = sundial.NewClient(creds.APIKey, sundial.WithBaseURL(b.baseURL), sundial.WithHTTPClient(b.httpClient))
	if deliveries {
		b.env["SUNDIAL_PUBLIC_URL"] = b.baseURL
		b.env["SUNDIAL_SCHEDULER_ASYNC_SWEEP_INTERVAL"] = "100ms"
		b.startScheduler(t)
		b.startDispatcher(t)
	}
	return b
}

func (b *bundle) serve(w http.ResponseWriter, r *http.Request) {
	h := b.handler.Load()
	if h == nil {
		http.Error(w, "no handler yet", http.StatusServiceUnavailable)
		return
	}
	(*h).ServeHTTP(w, r)
}

// receive makes h the receiver's handler.
func (b *bundle) receive(h http.Handler) { b.handler.Store(&h) }

func logger(name string) *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("service", name)
}

func (b *bundle) startGateway(t *testing.T) string {
	t.Helper()
	cfg, err := gateway.ConfigFromEnv(envconf.Map(b.env))
	require.NoError(t, err)
	a, err := gateway.New(b.ctx, cfg, logger("gateway"))
	require.NoError(t, err)
	b.keepRunning(t, "gateway", a.Run)
	return "http://" + a.Addr()
}

func (b *bundle) startScheduler(t *testing.T) {
	t.Helper()
	cfg, err := scheduler.ConfigFromEnv(envconf.Map(b.env))
	require.NoError(t, err)
	a, err := scheduler.New(b.ctx, cfg, logger("scheduler"))
	require.NoError(t, err)
	b.keepRunning(t, "scheduler", a.Run)
}

func (b *bundle) startDispatcher(t *testing.T) {
	t.Helper()
	cfg, err := dispatcher.ConfigFromEnv(envconf.Map(b.env))
	require.NoError(t, err)
	a, err := dispatcher.New(b.ctx, cfg, logger("dispatcher"))
	require.NoError(t, err)
	b.keepRunning(t, "dispatcher", a.Run)
}

// keepRunning runs a service until the suite stops, and reports an unclean
// stop.
func (b *bundle) keepRunning(t *testing.T, name string, run func(context.Context) error) {
	b.services.Go(b.ctx, t, name, run)
}

// stopAll stops the services in reverse order of their start.
func (b *bundle) stopAll() {
	b.services.Stop()
}
