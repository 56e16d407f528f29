package app_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/services/notifier/app"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := app.ConfigFromEnv(envconf.Map(map[string]string{"SUNDIAL_SECRET_KEYS": secrettest.Keys}))
	require.NoError(t, err)
	require.Equal(t, app.Config{
		NATSURL:          "nats://127.0.0.1:4222",
		StreamReplicas:   1,
		DatabaseURL:      "postgres://postgres@127.0.0.1:5432/sundial?sslmode=disable",
		DatabaseMaxConns: 4,
		SchemaWait:       30 * time.Second,
		LogLevel:         "info",
		AdminAddr:        "127.0.0.1:9093",
		Concurrency:      8,
		ShutdownTimeout:  15 * time.Second,
		PollInterval:     time.Second,
		SweepAge:         10 * time.Second,
		SendLease:        60 * time.Second,
		SendTimeout:      10 * time.Second,
		RetryMin:         30 * time.Second,
		RetryMax:         time.Hour,
		GiveUp:           24 * time.Hour,
		PublicURL:        "http://127.0.0.1:8080",
		DashboardURL:     "http://127.0.0.1:8080/dashboard",
		HeaderPrefix:     "Sundial",
		SMTP:             app.SMTPConfig{Port: 587, TLS: "starttls"},
		SecretKeys:       secrettest.Keys,
	}, cfg)
}

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	cfg, err := app.ConfigFromEnv(envconf.Map(map[string]string{
		"SUNDIAL_NATS_URL":               "nats://nats:4222",
		"SUNDIAL_STREAM_REPLICAS":        "3",
		"SUNDIAL_DATABASE_URL":           "postgres://sundial@db/sundial",
		"SUNDIAL_DATABASE_MAX_CONNS":     "2",
		"SUNDIAL_SCHEMA_WAIT":            "5s",
		"SUNDIAL_LOG_LEVEL":              "debug",
		"SUNDIAL_NOTIFIER_ADMIN_ADDR":    "127.0.0.1:19093",
		"SUNDIAL_NOTIFIER_CONCURRENCY":   "3",
		"SUNDIAL_SHUTDOWN_TIMEOUT":       "2s",
		"SUNDIAL_NOTIFIER_POLL_INTERVAL": "50ms",
		"SUNDIAL_NOTIFIER_SWEEP_AGE":     "1s",
		"SUNDIAL_NOTIFIER_SEND_LEASE":    "20s",
		"SUNDIAL_NOTIFIER_SEND_TIMEOUT":  "5s",
		"SUNDIAL_NOTIFIER_RETRY_MIN":     "1s",
		"SUNDIAL_NOTIFIER_RETRY_MAX":     "10s",
		"SUNDIAL_NOTIFIER_GIVE_UP":       "1h",
		"SUNDIAL_PUBLIC_URL":             "https://sundial.example.com",
		"SUNDIAL_HEADER_PREFIX":          "Acme",
		"SUNDIAL_DELIVERY_ALLOW_PRIVATE": "true",
		"SUNDIAL_DELIVERY_ALLOW_CIDRS":   "10.0.0.0/8,192.168.1.7",
		"SUNDIAL_DELIVERY_CA_FILE":       "/etc/ca.pem",
		"SUNDIAL_NOTIFIER_SMTP_HOST":     "smtp.example.com",
		"SUNDIAL_NOTIFIER_SMTP_PORT":     "465",
		"SUNDIAL_NOTIFIER_SMTP_USERNAME": "ops",
		"SUNDIAL_NOTIFIER_SMTP_PASSWORD": "hunter2",
		"SUNDIAL_NOTIFIER_SMTP_TLS":      "tls",
		"SUNDIAL_NOTIFIER_SMTP_FROM":     "alerts@example.com",
		"SUNDIAL_SECRET_KEYS":            secrettest.Keys,
	}))
	require.NoError(t, err)
	require.Equal(t, app.Config{
		NATSURL:          "nats://nats:4222",
		StreamReplicas:   3,
		DatabaseURL:      "postgres://sundial@db/sundial",
		DatabaseMaxConns: 2,
		SchemaWait:       5 * time.Second,
		LogLevel:         "debug",
		AdminAddr:        "127.0.0.1:19093",
		Concurrency:      3,
		ShutdownTimeout:  2 * time.Second,
		PollInterval:     50 * time.Millisecond,
		SweepAge:         time.Second,
		SendLease:        20 * time.Second,
		SendTimeout:      5 * time.Second,
		RetryMin:         time.Second,
		RetryMax:         10 * time.Second,
		GiveUp:           time.Hour,
		PublicURL:        "https://sundial.example.com",
		DashboardURL:     "https://sundial.example.com/dashboard",
		HeaderPrefix:     "Acme",
		AllowPrivate:     true,
		AllowCIDRs:       []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.1.7/32")},
		CAFile:           "/etc/ca.pem",
		SMTP: app.SMTPConfig{
			Host: "smtp.example.com", Port: 465, Username: "ops", Password: "hunter2",
			TLS: "tls", From: "alerts@example.com",
		},
		SecretKeys: secrettest.Keys,
	}, cfg)
}

func TestConfigDashboardURLOverride(t *testing.T) {
	t.Parallel()
	cfg, err := app.ConfigFromEnv(envconf.Map(map[string]string{
		"SUNDIAL_PUBLIC_URL":    "https://api.example.com/",
		"SUNDIAL_DASHBOARD_URL": "https://app.example.com",
		"SUNDIAL_SECRET_KEYS":   secrettest.Keys,
	}))
	require.NoError(t, err)
	require.Equal(t, "https://app.example.com", cfg.DashboardURL)

	cfg, err = app.ConfigFromEnv(envconf.Map(map[string]string{"SUNDIAL_PUBLIC_URL": "https://api.example.com/", "SUNDIAL_SECRET_KEYS": secrettest.Keys}))
	require.NoError(t, err)
	require.Equal(t, "https://api.example.com/dashboard", cfg.DashboardURL)
}

func TestConfigReportsEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := app.ConfigFromEnv(envconf.Map(map[string]string{
		"SUNDIAL_NOTIFIER_CONCURRENCY":   "many",
		"SUNDIAL_SHUTDOWN_TIMEOUT":       "15",
		"SUNDIAL_LOG_LEVEL":              "loud",
		"SUNDIAL_DATABASE_MAX_CONNS":     "0",
		"SUNDIAL_NOTIFIER_SEND_LEASE":    "5s",
		"SUNDIAL_NOTIFIER_RETRY_MAX":     "1s",
		"SUNDIAL_NOTIFIER_POLL_INTERVAL": "1ms",
		"SUNDIAL_DELIVERY_ALLOW_CIDRS":   "not-a-cidr",
		"SUNDIAL_PUBLIC_URL":             "ftp://x",
		"SUNDIAL_NOTIFIER_SMTP_HOST":     "smtp.example.com",
		"SUNDIAL_NOTIFIER_SMTP_TLS":      "none",
		"SUNDIAL_NOTIFIER_SMTP_USERNAME": "ops",
		"SUNDIAL_NOTIFIER_SMTP_PASSWORD": "hunter2",
	}))
	require.Error(t, err)
	for _, name := range []string{
		"SUNDIAL_NOTIFIER_CONCURRENCY", "SUNDIAL_SHUTDOWN_TIMEOUT", "SUNDIAL_LOG_LEVEL",
		"SUNDIAL_DATABASE_MAX_CONNS", "SUNDIAL_NOTIFIER_SEND_LEASE", "SUNDIAL_NOTIFIER_RETRY_MAX",
		"SUNDIAL_NOTIFIER_POLL_INTERVAL", "SUNDIAL_DELIVERY_ALLOW_CIDRS", "SUNDIAL_PUBLIC_URL",
		"SUNDIAL_NOTIFIER_SMTP_TLS", "SUNDIAL_NOTIFIER_SMTP_FROM", "SUNDIAL_SECRET_KEYS",
	} {
		require.Contains(t, err.Error(), name)
	}
	require.NotContains(t, err.Error(), "hunter2", "the SMTP password is never shown")
}

func TestValidate(t *testing.T) {
	t.Parallel()
	cfg, err := app.ConfigFromEnv(envconf.Map(map[string]string{"SUNDIAL_SECRET_KEYS": secrettest.Keys}))
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())

	bad := cfg
	bad.NATSURL, bad.DatabaseURL, bad.StreamReplicas = "", "", 0
	bad.Concurrency, bad.ShutdownTimeout = 0, -time.Second
	bad.SMTP = app.SMTPConfig{Host: "smtp.example.com", Port: 0, TLS: "ssl", Username: "ops"}
	err = bad.Validate()
	require.Error(t, err)
	for _, name := range []string{
		"SUNDIAL_NATS_URL", "SUNDIAL_STREAM_REPLICAS", "SUNDIAL_DATABASE_URL", "SUNDIAL_NOTIFIER_CONCURRENCY", "SUNDIAL_SHUTDOWN_TIMEOUT",
		"SUNDIAL_NOTIFIER_SMTP_PORT", "SUNDIAL_NOTIFIER_SMTP_TLS", "SUNDIAL_NOTIFIER_SMTP_PASSWORD", "SUNDIAL_NOTIFIER_SMTP_FROM",
	} {
		require.Contains(t, err.Error(), name)
	}
}
