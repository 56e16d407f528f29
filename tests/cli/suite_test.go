package cli

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/cmd/sundial/cli"
	"github.com/sundial-run/sundial/pkg/envconf"
	gateway "github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/openapi/contract"
	scheduler "github.com/sundial-run/sundial/services/scheduler/app"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
	"github.com/sundial-run/sundial/tests/internal/inproc"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// bundle is a gateway for one project, and the tool's environment: its
// variables and a config directory of its own.
type bundle struct {
	t       *testing.T
	baseURL string
	creds   gateway.Credentials
	// env is what the tool's Getenv sees (empty: nothing is set).
	env       map[string]string
	configDir string
	// dbURL and svcEnv are the services' database and environment.
	dbURL    string
	svcEnv   map[string]string
	services inproc.Group
}

// setup boots a gateway on a fresh database and NATS server with one
// project.
func setup(t *testing.T) *bundle {
	t.Helper()
	ctx := context.Background()
	dbURL := pgtest.NewDB(t)
	ns := natstest.Start(t, natstest.Options{})
	b := &bundle{t: t, env: map[string]string{}, configDir: t.TempDir(), dbURL: dbURL}
	t.Cleanup(b.services.Stop)
	creds, err := gateway.CreateProject(ctx, gateway.Database{URL: dbURL, SecretKeys: secrettest.Keys}, "cli", "receiver.example:443")
	require.NoError(t, err)
	b.creds = creds
	b.svcEnv = map[string]string{
		"SUNDIAL_DATABASE_URL":            dbURL,
		"SUNDIAL_SECRET_KEYS":             secrettest.Keys,
		"SUNDIAL_NATS_URL":                ns.ClientURL(),
		"SUNDIAL_GATEWAY_ADMIN_ADDR":      "127.0.0.1:0",
		"SUNDIAL_SCHEDULER_ADMIN_ADDR":    "127.0.0.1:0",
		"SUNDIAL_DISPATCHER_ADMIN_ADDR":   "127.0.0.1:0",
		"SUNDIAL_NOTIFIER_ADMIN_ADDR":     "127.0.0.1:0",
		"SUNDIAL_HTTP_ADDR":               "127.0.0.1:0",
		"SUNDIAL_SCHEDULER_POLL_INTERVAL": "50ms",
		"SUNDIAL_SHUTDOWN_TIMEOUT":        "5s",
		"SUNDIAL_LOG_LEVEL":               "warn",
		"SUNDIAL_DATABASE_MAX_CONNS":      "4",
	}
	cfg, err := gateway.ConfigFromEnv(envconf.Map(b.svcEnv))
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	a, err := gateway.New(ctx, cfg, log)
	require.NoError(t, err)
	b.services.Go(ctx, t, "gateway", a.Run)
	b.baseURL = "http://" + a.Addr()
	return b
}

// startScheduler runs the scheduler too: it turns sequences' slots and
// triggers into runs.
func (b *bundle) startScheduler() {
	b.t.Helper()
	cfg, err := scheduler.ConfigFromEnv(envconf.Map(b.svcEnv))
	require.NoError(b.t, err)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	a, err := scheduler.New(context.Background(), cfg, log)
	require.NoError(b.t, err)
	b.services.Go(context.Background(), b.t, "scheduler", a.Run)
}

// result is a finished run of the tool.
type result struct {
	code           int
	stdout, stderr string
}

// run runs the tool with args and stdin, every exchange with the API
// checked against the OpenAPI document.
func (b *bundle) run(stdin string, args ...string) result {
	return b.runOn(false, stdin, args...)
}

// runOn runs the tool as if stdin were a terminal (a user who answers) or
// not (a script).
func (b *bundle) runOn(terminal bool, stdin string, args ...string) result {
	var stdout, stderr bytes.Buffer
	code := cli.Run(context.Background(), args, cli.Env{
		Stdin: strings.NewReader(stdin), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(k string) string { return b.env[k] }, ConfigDir: b.configDir,
		HTTPClient: contract.Client(b.t), Version: "test", Terminal: terminal,
	})
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// ok runs the tool and requires exit 0.
func (b *bundle) ok(args ...string) string {
	b.t.Helper()
	res := b.run("", args...)
	require.Equal(b.t, cli.ExitOK, res.code, "sundial %s: %s", strings.Join(args, " "), res.stderr)
	return res.stdout
}

// login logs the tool in with the project's key.
func (b *bundle) login() {
	b.t.Helper()
	b.ok("login", "--api-url", b.baseURL, "--api-key", b.creds.APIKey)
}
