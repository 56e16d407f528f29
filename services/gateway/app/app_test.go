package app_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/internal/apikey"
	"github.com/sundial-run/sundial/services/gateway/openapi/contract"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

func apiKeyRevoke(b bundle) (bool, error) {
	prefix, err := apikey.Prefix(b.creds.APIKey)
	if err != nil {
		return false, err
	}
	return apikey.Revoke(b.ctx, b.q, prefix)
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	// SUNDIAL_SECRET_KEYS has no default: it is the one required variable.
	cfg, err := app.ConfigFromEnv(envconf.Map(map[string]string{"SUNDIAL_SECRET_KEYS": secrettest.Keys}))
	require.NoError(t, err)
	require.Equal(t, app.Config{
		DatabaseURL:      "postgres://postgres@127.0.0.1:5432/sundial?sslmode=disable",
		NATSURL:          "nats://127.0.0.1:4222",
		StreamReplicas:   1,
		HTTPAddr:         ":8080",
		AdminAddr:        "127.0.0.1:9090",
		LogLevel:         "info",
		HeaderPrefix:     "Sundial",
		MaxDataBytes:     1048576,
		ShutdownTimeout:  15 * time.Second,
		DatabaseMaxConns: 16,
		SchemaWait:       30 * time.Second,
		CreateBatch:      256,
		CreateLinger:     time.Millisecond,
		CreateInFlight:   1,
		KeyCacheTTL:      time.Second,

		MaxConnections:        10_000,
		BodyBytesInFlight:     32 << 20,
		IdleTimeout:           time.Minute,
		AuthFailuresPerMinute: 20,
		SecretKeys:            secrettest.Keys,
		ListenerResumeWindow:  15 * time.Minute,

		ListenerMaxSockets:        1000,
		ListenerMaxProjectSockets: 20,
	}, cfg)
}

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	cfg, err := app.ConfigFromEnv(envconf.Map(map[string]string{
		"SUNDIAL_DATABASE_URL":             "postgres://db/x",
		"SUNDIAL_NATS_URL":                 "nats://bus:4222",
		"SUNDIAL_STREAM_REPLICAS":          "5",
		"SUNDIAL_HTTP_ADDR":                "127.0.0.1:9000",
		"SUNDIAL_GATEWAY_ADMIN_ADDR":       "127.0.0.1:9001",
		"SUNDIAL_LOG_LEVEL":                "debug",
		"SUNDIAL_HEADER_PREFIX":            "Acme",
		"SUNDIAL_MAX_DATA_BYTES":           "2048",
		"SUNDIAL_SHUTDOWN_TIMEOUT":         "3s",
		"SUNDIAL_DATABASE_MAX_CONNS":       "4",
		"SUNDIAL_SCHEMA_WAIT":              "5s",
		"SUNDIAL_GATEWAY_CREATE_BATCH":     "64",
		"SUNDIAL_GATEWAY_CREATE_LINGER":    "2ms",
		"SUNDIAL_GATEWAY_CREATE_IN_FLIGHT": "2",
		"SUNDIAL_GATEWAY_KEY_CACHE_TTL":    "250ms",

		"SUNDIAL_GATEWAY_MAX_CONNECTIONS":          "500",
		"SUNDIAL_GATEWAY_IDLE_TIMEOUT":             "5s",
		"SUNDIAL_GATEWAY_AUTH_FAILURES_PER_MINUTE": "0",
		"SUNDIAL_GATEWAY_TRUSTED_PROXIES":          "10.0.0.0/8, 192.0.2.1",
		"SUNDIAL_SECRET_KEYS":                      secrettest.Keys,
		"SUNDIAL_PUBLIC_URL":                       "https://sundial.example.com",
		"SUNDIAL_LISTENER_RESUME_WINDOW":           "2m",

		"SUNDIAL_GATEWAY_LISTENER_MAX_SOCKETS":             "200",
		"SUNDIAL_GATEWAY_BODY_BYTES_IN_FLIGHT":             "1048576",
		"SUNDIAL_GATEWAY_LISTENER_MAX_SOCKETS_PER_PROJECT": "5",
	}))
	require.NoError(t, err)
	require.Equal(t, app.Config{
		DatabaseURL: "postgres://db/x", NATSURL: "nats://bus:4222", StreamReplicas: 5, HTTPAddr: "127.0.0.1:9000", AdminAddr: "127.0.0.1:9001", LogLevel: "debug", HeaderPrefix: "Acme",
		MaxDataBytes: 2048, ShutdownTimeout: 3 * time.Second, DatabaseMaxConns: 4,
		SchemaWait:  5 * time.Second,
		CreateBatch: 64, CreateLinger: 2 * time.Millisecond, CreateInFlight: 2, KeyCacheTTL: 250 * time.Millisecond,
		MaxConnections: 500, IdleTimeout: 5 * time.Second, AuthFailuresPerMinute: 0,
		TrustedProxies: []string{"10.0.0.0/8", "192.0.2.1"},
		SecretKeys:     secrettest.Keys,
		PublicURL:      "https://sundial.example.com", ListenerResumeWindow: 2 * time.Minute,
		ListenerMaxSockets: 200, ListenerMaxProjectSockets: 5, BodyBytesInFlight: 1 << 20,
	}, cfg)
}

func TestConfigBatchingOffIgnoresInFlight(t *testing.T) {
	t.Parallel()
	cfg, err := app.ConfigFromEnv(envconf.Map(map[string]string{
		"SUNDIAL_GATEWAY_CREATE_BATCH":     "0",
		"SUNDIAL_GATEWAY_CREATE_IN_FLIGHT": "0",
		"SUNDIAL_SECRET_KEYS":              secrettest.Keys,
	}))
	require.NoError(t, err)
	require.Zero(t, cfg.CreateBatch)
}

func TestConfigReportsEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := app.ConfigFromEnv(envconf.Map(map[string]string{
		"SUNDIAL_HTTP_ADDR":                "8080",
		"SUNDIAL_LOG_LEVEL":                "loud",
		"SUNDIAL_HEADER_PREFIX":            "Bad Prefix",
		"SUNDIAL_MAX_DATA_BYTES":           "lots",
		"SUNDIAL_SHUTDOWN_TIMEOUT":         "0s",
		"SUNDIAL_DATABASE_MAX_CONNS":       "0",
		"SUNDIAL_GATEWAY_CREATE_BATCH":     "20000",
		"SUNDIAL_GATEWAY_CREATE_LINGER":    "1s",
		"SUNDIAL_GATEWAY_CREATE_IN_FLIGHT": "0",
		"SUNDIAL_GATEWAY_KEY_CACHE_TTL":    "11s",

		"SUNDIAL_GATEWAY_MAX_CONNECTIONS":          "0",
		"SUNDIAL_GATEWAY_IDLE_TIMEOUT":             "0s",
		"SUNDIAL_GATEWAY_AUTH_FAILURES_PER_MINUTE": "-1",
		"SUNDIAL_GATEWAY_TRUSTED_PROXIES":          "10.0.0.0/33",
		"SUNDIAL_PUBLIC_URL":                       "ftp://sundial.example.com/v1",
		"SUNDIAL_LISTENER_RESUME_WINDOW":           "0s",
		"SUNDIAL_STREAM_REPLICAS":                  "7",

		"SUNDIAL_GATEWAY_LISTENER_MAX_SOCKETS":             "6000",
		"SUNDIAL_GATEWAY_BODY_BYTES_IN_FLIGHT":             "1000",
		"SUNDIAL_GATEWAY_LISTENER_MAX_SOCKETS_PER_PROJECT": "0",
	}))
	require.Error(t, err)
	for _, name := range []string{"SUNDIAL_HTTP_ADDR", "SUNDIAL_LOG_LEVEL", "SUNDIAL_HEADER_PREFIX",
		"SUNDIAL_MAX_DATA_BYTES", "SUNDIAL_SHUTDOWN_TIMEOUT", "SUNDIAL_DATABASE_MAX_CONNS",
		"SUNDIAL_GATEWAY_CREATE_BATCH", "SUNDIAL_GATEWAY_CREATE_LINGER", "SUNDIAL_GATEWAY_CREATE_IN_FLIGHT",
		"SUNDIAL_GATEWAY_KEY_CACHE_TTL", "SUNDIAL_GATEWAY_MAX_CONNECTIONS", "SUNDIAL_GATEWAY_IDLE_TIMEOUT",
		"SUNDIAL_GATEWAY_AUTH_FAILURES_PER_MINUTE", "SUNDIAL_GATEWAY_TRUSTED_PROXIES", "SUNDIAL_SECRET_KEYS",
		"SUNDIAL_PUBLIC_URL", "SUNDIAL_LISTENER_RESUME_WINDOW", "SUNDIAL_STREAM_REPLICAS",
		"SUNDIAL_GATEWAY_LISTENER_MAX_SOCKETS", "SUNDIAL_GATEWAY_LISTENER_MAX_SOCKETS_PER_PROJECT",
		"SUNDIAL_GATEWAY_BODY_BYTES_IN_FLIGHT"} {
		require.ErrorContains(t, err, name)
	}
}

func TestConfigRefusesAMissingOrShortSecretKeyAndSaysHowToMakeOne(t *testing.T) {
	t.Parallel()
	short := "k1:c2l4dGVlbiBieXRlIGtleQ==" // 16 bytes
	for _, value := range []string{"", short} {
		_, err := app.ConfigFromEnv(envconf.Map(map[string]string{"SUNDIAL_SECRET_KEYS": value}))
		require.ErrorContains(t, err, "SUNDIAL_SECRET_KEYS")
		require.ErrorContains(t, err, "openssl rand -base64 32")
		require.NotContains(t, err.Error(), "c2l4dGVlbiBieXRlIGtleQ", "the key is never printed")
	}
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestAppServesAndStops(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDB(t)
	a, err := app.New(t.Context(), testConfig(t, dbURL), discard())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()

	client := contract.Client(t)
	for _, path := range []string{"/healthz", "/readyz"} {
		res, err := client.Get("http://" + a.Addr() + path)
		require.NoError(t, err)
		require.NoError(t, res.Body.Close())
		require.Equal(t, http.StatusOK, res.StatusCode, path)
		require.NotEmpty(t, res.Header.Get("X-Request-Id"))
	}

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	_, err = net.Dial("tcp", a.Addr())
	require.Error(t, err, "the listener is closed")
}

func TestNewFailsCleanly(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDB(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = busy.Close() })

	cfg := testConfig(t, dbURL)
	cfg.HTTPAddr = busy.Addr().String()
	_, err = app.New(t.Context(), cfg, discard())
	require.ErrorContains(t, err, "listen")

	cfg = testConfig(t, "postgres://postgres@127.0.0.1:1/nothing?sslmode=disable&connect_timeout=2")
	_, err = app.New(t.Context(), cfg, discard())
	require.ErrorContains(t, err, "database")

	cfg = testConfig(t, dbURL)
	cfg.NATSURL = "nats://127.0.0.1:1"
	unreachable, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	_, err = app.New(unreachable, cfg, discard())
	require.ErrorContains(t, err, "stream", "NATS does not answer")

	cfg = testConfig(t, dbURL)
	cfg.NATSURL = ""
	_, err = app.New(t.Context(), cfg, discard())
	require.ErrorContains(t, err, "SUNDIAL_NATS_URL")

	cfg = testConfig(t, dbURL)
	cfg.MaxDataBytes = 0
	_, err = app.New(t.Context(), cfg, discard())
	require.ErrorContains(t, err, "SUNDIAL_MAX_DATA_BYTES")
}

func TestCreateProjectRefusesBadInput(t *testing.T) {
	t.Parallel()
	_, err := app.CreateProject(t.Context(), app.Database{URL: "postgres://unused", SecretKeys: secrettest.Keys}, "", "example.com")
	require.ErrorIs(t, err, app.ErrInvalidProject)
	_, err = app.CreateProject(t.Context(), app.Database{URL: "postgres://unused", SecretKeys: secrettest.Keys}, "Acme", "https://example.com")
	require.ErrorIs(t, err, app.ErrInvalidProject)
}
