package app_test

import (
	"context"
	"github.com/sundial-run/sundial/pkg/testkit/logtest"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/testkit/natstest"
	"github.com/sundial-run/sundial/pkg/testkit/pgtest"
	"github.com/sundial-run/sundial/services/notifier/app"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := app.ConfigFromEnv(envconf.Map(nil))
	require.NoError(t, err)
	require.Equal(t, app.Config{
		NATSURL:          "nats://127.0.0.1:4222",
		DatabaseURL:      "postgres://postgres@127.0.0.1:5432/sundial?sslmode=disable",
		DatabaseMaxConns: 4,
		LogLevel:         "info",
		Concurrency:      8,
		ShutdownTimeout:  15 * time.Second,
	}, cfg)
}

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	cfg, err := app.ConfigFromEnv(envconf.Map(map[string]string{
		"SUNDIAL_NATS_URL":             "nats://nats:4222",
		"SUNDIAL_DATABASE_URL":         "postgres://sundial@db/sundial",
		"SUNDIAL_DATABASE_MAX_CONNS":   "2",
		"SUNDIAL_LOG_LEVEL":            "debug",
		"SUNDIAL_NOTIFIER_CONCURRENCY": "3",
		"SUNDIAL_SHUTDOWN_TIMEOUT":     "2s",
	}))
	require.NoError(t, err)
	require.Equal(t, app.Config{
		NATSURL:          "nats://nats:4222",
		DatabaseURL:      "postgres://sundial@db/sundial",
		DatabaseMaxConns: 2,
		LogLevel:         "debug",
		Concurrency:      3,
		ShutdownTimeout:  2 * time.Second,
	}, cfg)
}

func TestConfigReportsEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := app.ConfigFromEnv(envconf.Map(map[string]string{
		"SUNDIAL_NOTIFIER_CONCURRENCY": "many",
		"SUNDIAL_SHUTDOWN_TIMEOUT":     "15",
		"SUNDIAL_LOG_LEVEL":            "loud",
		"SUNDIAL_DATABASE_MAX_CONNS":   "0",
	}))
	require.Error(t, err)
	for _, name := range []string{"SUNDIAL_NOTIFIER_CONCURRENCY", "SUNDIAL_SHUTDOWN_TIMEOUT", "SUNDIAL_LOG_LEVEL", "SUNDIAL_DATABASE_MAX_CONNS"} {
		require.Contains(t, err.Error(), name)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	cfg, err := app.ConfigFromEnv(envconf.Map(nil))
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())

	bad := cfg
	bad.NATSURL, bad.DatabaseURL = "", ""
	bad.Concurrency, bad.ShutdownTimeout = 0, -time.Second
	err = bad.Validate()
	require.Error(t, err)
	for _, name := range []string{"SUNDIAL_NATS_URL", "SUNDIAL_DATABASE_URL", "SUNDIAL_NOTIFIER_CONCURRENCY", "SUNDIAL_SHUTDOWN_TIMEOUT"} {
		require.Contains(t, err.Error(), name)
	}
}

type fixture struct {
	cfg    app.Config
	nats   *natstest.Server
	dbName string
	logs   *logtest.Buffer
	log    *slog.Logger
}

func setup(t *testing.T) fixture {
	t.Helper()
	srv := natstest.Start(t, natstest.Options{})
	dbURL := pgtest.NewDB(t)
	cfg, err := app.ConfigFromEnv(envconf.Map(map[string]string{
		"SUNDIAL_NATS_URL":         srv.ClientURL(),
		"SUNDIAL_DATABASE_URL":     dbURL,
		"SUNDIAL_SHUTDOWN_TIMEOUT": "5s",
	}))
	require.NoError(t, err)
	logs := &logtest.Buffer{}
	conn, err := pgx.ParseConfig(dbURL)
	require.NoError(t, err)
	return fixture{
		cfg:    cfg,
		nats:   srv,
		dbName: conn.Database,
		logs:   logs,
		log:    slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

// dbSessions counts the server's sessions on the fixture's database.
func (f fixture) dbSessions(t *testing.T) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.ServerURL())
	require.NoError(t, err)
	defer conn.Close(ctx)
	var n int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = $1", f.dbName).Scan(&n))
	return n
}

func TestAppSendsAlertsAndStopsOnCancel(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, js := f.nats.Connect(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	a, err := app.New(ctx, f.cfg, f.log)
	require.NoError(t, err)
	require.Positive(t, f.dbSessions(t), "New connects to the database")
	runErr := make(chan error, 1)
	go func() { runErr <- a.Run(ctx) }()

	require.NoError(t, bus.NewPublisher(js).Publish(t.Context(), bus.Message{
		Subject: event.SubjectAlert,
		MsgID:   event.MsgID(event.KindAlert, "boot-1", 0),
		Body: &eventv1.Alert{
			AlertId: "boot-1", Kind: eventv1.AlertKind_ALERT_KIND_HOOK_FAILED,
			ProjectId: "p1", HookId: "h1", Path: "/x", Error: "HTTP 500", Attempts: 6,
		},
	}))
	require.Eventually(t, func() bool {
		return strings.Contains(f.logs.String(), `"alert_id":"boot-1"`)
	}, 10*time.Second, 10*time.Millisecond, "the alert is logged; logs so far:\n%s", f.logs.String())

	cancel()
	select {
	case err := <-runErr:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return after its context was cancelled")
	}
	// Only the test's own connection is left on NATS, none on PostgreSQL.
	require.Eventually(t, func() bool { return f.nats.NumClients() == 1 }, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return f.dbSessions(t) == 0 }, 10*time.Second, 10*time.Millisecond)

	// The alert was acknowledged before the connection closed.
	s, err := js.Stream(t.Context(), event.StreamAlerts)
	require.NoError(t, err)
	info, err := s.Info(t.Context())
	require.NoError(t, err)
	require.Zero(t, info.State.Msgs)
	require.Equal(t, 1, strings.Count(f.logs.String(), `"msg":"alert"`))
}

func TestNewFailsWithoutDatabase(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cfg := f.cfg
	cfg.DatabaseURL = "postgres://postgres@127.0.0.1:1/sundial?sslmode=disable&connect_timeout=5"

	_, err := app.New(t.Context(), cfg, f.log)
	require.Error(t, err)
	require.Zero(t, f.nats.NumClients(), "nothing is left connected")
}

func TestNewFailsWithoutNATSAndClosesTheDatabase(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cfg := f.cfg
	cfg.NATSURL = "nats://127.0.0.1:1"
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()

	_, err := app.New(ctx, cfg, f.log)
	require.Error(t, err)
	require.Eventually(t, func() bool { return f.dbSessions(t) == 0 }, 10*time.Second, 10*time.Millisecond,
		"the pool New opened is closed")
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	t.Parallel()
	_, err := app.New(t.Context(), app.Config{}, slog.New(slog.DiscardHandler))
	require.Error(t, err)
}
