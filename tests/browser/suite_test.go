package browser

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/envconf"
	dispatcher "github.com/sundial-run/sundial/services/dispatcher/app"
	gateway "github.com/sundial-run/sundial/services/gateway/app"
	notifier "github.com/sundial-run/sundial/services/notifier/app"
	scheduler "github.com/sundial-run/sundial/services/scheduler/app"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
	https "github.com/sundial-run/sundial/testkit/receiver"
	"github.com/sundial-run/sundial/testkit/secrettest"
	"github.com/sundial-run/sundial/tests/internal/apiclient"
	"github.com/sundial-run/sundial/tests/internal/inproc"
)

func TestMain(m *testing.M) {
	fmt.Fprintln(os.Stderr, "browser tests: screenshots in", screenshotDir())
	code := pgtest.Run(m)
	closeBrowser()
	os.Exit(code)
}

// receiver is an HTTPS endpoint that answers 200, or the status it is told
// for the first request to a path, and counts the requests per path.
type receiver struct {
	srv    *https.Receiver
	CAFile string

	mu    sync.Mutex
	got   map[string]int
	first map[string]int
}

func newReceiver(t *testing.T, first map[string]int) *receiver {
	t.Helper()
	r := &receiver{got: map[string]int{}, first: first}
	r.srv = https.StartT(t, http.HandlerFunc(r.serve), https.Options{})
	r.CAFile = https.CAFile(t)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	_, _ = io.Copy(io.Discard, req.Body)
	r.mu.Lock()
	r.got[req.URL.Path]++
	status := http.StatusOK
	if s, ok := r.first[req.URL.Path]; ok && r.got[req.URL.Path] == 1 {
		status = s
	}
	r.mu.Unlock()
	w.WriteHeader(status)
	_, _ = io.WriteString(w, `{"ok":true}`)
}

// Received is how many requests to path arrived so far.
func (r *receiver) Received(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[path]
}

// bundle is a running gateway (and, for deliveries, scheduler and
// dispatcher) with a project and its owner.
type bundle struct {
	ctx      context.Context
	base     string
	db       gateway.Database
	creds    gateway.Credentials
	receiver *receiver
	// email and password sign the project's owner in.
	email, password string
	services        inproc.Group
}

type options struct {
	// delivery starts the scheduler and the dispatcher too.
	delivery bool
	// firstStatus is the receiver's answer to the first request to a path
	// (then 200).
	firstStatus map[string]int
	// notifier starts the notifier too (a channel's send test).
	notifier bool
	// noBulkJobs runs the gateway without its bulk job runner: jobs stay
	// running until cancelled.
	noBulkJobs bool
}

// projectName is the name of every test's project.
const projectName = "browser"

// setup boots the services on a fresh database and NATS server, with a
// project whose domain is a fresh HTTPS receiver and an owner with a
// password.
func setup(t *testing.T, opts options) *bundle {
	t.Helper()
	ctx := context.Background()
	dbURL := pgtest.NewDB(t)
	ns := natstest.Start(t, natstest.Options{})
	rcv := newReceiver(t, opts.firstStatus)
	env := envconf.Map(map[string]string{
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
		"SUNDIAL_NOTIFIER_POLL_INTERVAL":  "100ms",
		"SUNDIAL_SHUTDOWN_TIMEOUT":        "5s",
		"SUNDIAL_LOG_LEVEL":               "warn",
		// Small pools: the tests run side by side against one PostgreSQL.
		"SUNDIAL_DATABASE_MAX_CONNS": "6",
	})
	b := &bundle{ctx: ctx, receiver: rcv, email: "owner@example.com", password: "correct horse battery"}
	t.Cleanup(b.services.Stop)
	db := gateway.Database{URL: dbURL, SecretKeys: secrettest.Keys}
	b.db = db
	creds, err := gateway.CreateProject(ctx, db, projectName, rcv.srv.Addr())
	require.NoError(t, err)
	b.creds = creds
	// As `make run` makes its demo user: a password at once, no link.
	_, err = gateway.CreateUser(ctx, db, gateway.NewUser{
		Email: b.email, ProjectID: creds.ProjectID, Role: "owner", Password: b.password,
	})
	require.NoError(t, err)

	gcfg, err := gateway.ConfigFromEnv(env)
	require.NoError(t, err)
	gcfg.NoBulkJobs = opts.noBulkJobs
	gw, err := gateway.New(ctx, gcfg, logger("gateway"))
	require.NoError(t, err)
	b.base = "http://" + gw.Addr()
	b.services.Go(ctx, t, "gateway", gw.Run)
	if opts.notifier {
		ncfg, err := notifier.ConfigFromEnv(env)
		require.NoError(t, err)
		ntf, err := notifier.New(ctx, ncfg, logger("notifier"))
		require.NoError(t, err)
		b.services.Go(ctx, t, "notifier", ntf.Run)
	}
	if !opts.delivery {
		return b
	}
	scfg, err := scheduler.ConfigFromEnv(env)
	require.NoError(t, err)
	sch, err := scheduler.New(ctx, scfg, logger("scheduler"))
	require.NoError(t, err)
	b.services.Go(ctx, t, "scheduler", sch.Run)
	dcfg, err := dispatcher.ConfigFromEnv(env)
	require.NoError(t, err)
	dsp, err := dispatcher.New(ctx, dcfg, logger("dispatcher"))
	require.NoError(t, err)
	b.services.Go(ctx, t, "dispatcher", dsp.Run)
	return b
}

func logger(service string) *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("service", service)
}

// api is the project's client of the REST API, to make hooks.
func (b *bundle) api() apiclient.Client {
	return apiclient.Client{BaseURL: b.base, APIKey: b.creds.APIKey, HTTP: http.DefaultClient}
}

// overviewPath is the project's overview, the link of a project alert.
func (b *bundle) overviewPath() string { return "/dashboard/p/" + b.creds.ProjectID }
