package app_test

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/services/dispatcher/app"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := app.ConfigFromEnv(envconf.Map(map[string]string{"SUNDIAL_SECRET_KEYS": secrettest.Keys}))
	require.NoError(t, err)
	require.Equal(t, app.Config{
		DatabaseURL:          "postgres://postgres@127.0.0.1:5432/sundial?sslmode=disable",
		NATSURL:              "nats://127.0.0.1:4222",
		StreamReplicas:       1,
		LogLevel:             "info",
		AdminAddr:            "127.0.0.1:9092",
		HeaderPrefix:         "Sundial",
		PublicURL:            "http://127.0.0.1:8080",
		Concurrency:          128,
		HostConcurrency:      1024,
		DeliveryTimeout:      10 * time.Second,
		ResponseExcerptBytes: 1024,
		HostConnectRate:      50,
		KeyCacheTTL:          5 * time.Second,
		ResultLinger:         10 * time.Millisecond,
		DatabaseMaxConns:     8,
		SchemaWait:           30 * time.Second,
		ShutdownTimeout:      15 * time.Second,
		SecretKeys:           secrettest.Keys,
	}, cfg)
}

func TestConfigFromEnvironment(t *testing.T) {
	t.Parallel()
	cfg, err := app.ConfigFromEnv(envconf.Map(map[string]string{
		"SUNDIAL_DATABASE_URL":                 "postgres://db/sundial",
		"SUNDIAL_NATS_URL":                     "nats://nats:4222",
		"SUNDIAL_STREAM_REPLICAS":              "3",
		"SUNDIAL_LOG_LEVEL":                    "debug",
		"SUNDIAL_DISPATCHER_ADMIN_ADDR":        "127.0.0.1:19092",
		"SUNDIAL_HEADER_PREFIX":                "Acme",
		"SUNDIAL_PUBLIC_URL":                   "https://sundial.example.com/hooks",
		"SUNDIAL_DISPATCHER_CONCURRENCY":       "16",
		"SUNDIAL_DISPATCHER_HOST_CONCURRENCY":  "3",
		"SUNDIAL_DELIVERY_TIMEOUT":             "2500ms",
		"SUNDIAL_DELIVERY_ALLOW_PRIVATE":       "true",
		"SUNDIAL_DELIVERY_ALLOW_CIDRS":         "10.1.0.0/16, 192.168.7.9 ,fd00::/8",
		"SUNDIAL_DELIVERY_CA_FILE":             "/etc/sundial/ca.pem",
		"SUNDIAL_RESPONSE_EXCERPT_BYTES":       "0",
		"SUNDIAL_DISPATCHER_HOST_CONNECT_RATE": "7",
		"SUNDIAL_DISPATCHER_KEY_CACHE_TTL":     "1m",
		"SUNDIAL_DISPATCHER_RESULT_LINGER":     "5ms",
		"SUNDIAL_DATABASE_MAX_CONNS":           "4",
		"SUNDIAL_SCHEMA_WAIT":                  "5s",
		"SUNDIAL_SHUTDOWN_TIMEOUT":             "30s",
		"SUNDIAL_SECRET_KEYS":                  secrettest.Keys,
	}))
	require.NoError(t, err)
	require.Equal(t, app.Config{
		DatabaseURL:     "postgres://db/sundial",
		NATSURL:         "nats://nats:4222",
		StreamReplicas:  3,
		LogLevel:        "debug",
		AdminAddr:       "127.0.0.1:19092",
		HeaderPrefix:    "Acme",
		PublicURL:       "https://sundial.example.com/hooks",
		Concurrency:     16,
		HostConcurrency: 3,
		DeliveryTimeout: 2500 * time.Millisecond,
		AllowPrivate:    true,
		AllowCIDRs: []netip.Prefix{
			netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("192.168.7.9/32"), netip.MustParsePrefix("fd00::/8"),
		},
		CAFile:               "/etc/sundial/ca.pem",
		ResponseExcerptBytes: 0,
		HostConnectRate:      7,
		KeyCacheTTL:          time.Minute,
		ResultLinger:         5 * time.Millisecond,
		DatabaseMaxConns:     4,
		SchemaWait:           5 * time.Second,
		ShutdownTimeout:      30 * time.Second,
		SecretKeys:           secrettest.Keys,
	}, cfg)
}

func TestConfigReportsEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := app.ConfigFromEnv(envconf.Map(map[string]string{
		"SUNDIAL_LOG_LEVEL":                    "loud",
		"SUNDIAL_HEADER_PREFIX":                "Bad Prefix",
		"SUNDIAL_DISPATCHER_CONCURRENCY":       "many",
		"SUNDIAL_DISPATCHER_HOST_CONCURRENCY":  "0",
		"SUNDIAL_DELIVERY_TIMEOUT":             "1m",
		"SUNDIAL_DELIVERY_ALLOW_PRIVATE":       "perhaps",
		"SUNDIAL_DELIVERY_ALLOW_CIDRS":         "10.0.0.0/8,10.0.0.0/99,intranet",
		"SUNDIAL_RESPONSE_EXCERPT_BYTES":       "1000000",
		"SUNDIAL_DISPATCHER_HOST_CONNECT_RATE": "0",
		"SUNDIAL_SHUTDOWN_TIMEOUT":             "soon",
		"SUNDIAL_STREAM_REPLICAS":              "three",
	}))
	require.Error(t, err)
	for _, name := range []string{
		"SUNDIAL_LOG_LEVEL", "SUNDIAL_HEADER_PREFIX", "SUNDIAL_DISPATCHER_CONCURRENCY", "SUNDIAL_DELIVERY_TIMEOUT",
		"SUNDIAL_DISPATCHER_HOST_CONCURRENCY",
		"SUNDIAL_DELIVERY_ALLOW_PRIVATE", "SUNDIAL_DELIVERY_ALLOW_CIDRS", "SUNDIAL_RESPONSE_EXCERPT_BYTES",
		"SUNDIAL_DISPATCHER_HOST_CONNECT_RATE", "SUNDIAL_SHUTDOWN_TIMEOUT", "SUNDIAL_SECRET_KEYS", "SUNDIAL_STREAM_REPLICAS",
	} {
		require.ErrorContains(t, err, name)
	}
	require.ErrorContains(t, err, "10.0.0.0/99,intranet")
}

func TestValidate(t *testing.T) {
	t.Parallel()
	valid, err := app.ConfigFromEnv(envconf.Map(map[string]string{"SUNDIAL_SECRET_KEYS": secrettest.Keys}))
	require.NoError(t, err)
	cases := map[string]func(*app.Config){
		"SUNDIAL_DATABASE_URL":                 func(c *app.Config) { c.DatabaseURL = "" },
		"SUNDIAL_NATS_URL":                     func(c *app.Config) { c.NATSURL = "" },
		"SUNDIAL_STREAM_REPLICAS":              func(c *app.Config) { c.StreamReplicas = 6 },
		"SUNDIAL_HEADER_PREFIX":                func(c *app.Config) { c.HeaderPrefix = "X:Y" },
		"SUNDIAL_DISPATCHER_CONCURRENCY":       func(c *app.Config) { c.Concurrency = 0 },
		"SUNDIAL_DISPATCHER_HOST_CONCURRENCY":  func(c *app.Config) { c.HostConcurrency = 0 },
		"SUNDIAL_DELIVERY_TIMEOUT":             func(c *app.Config) { c.DeliveryTimeout = 0 },
		"SUNDIAL_RESPONSE_EXCERPT_BYTES":       func(c *app.Config) { c.ResponseExcerptBytes = -1 },
		"SUNDIAL_DISPATCHER_HOST_CONNECT_RATE": func(c *app.Config) { c.HostConnectRate = 0 },
		"SUNDIAL_DISPATCHER_KEY_CACHE_TTL":     func(c *app.Config) { c.KeyCacheTTL = time.Hour },
		"SUNDIAL_DISPATCHER_RESULT_LINGER":     func(c *app.Config) { c.ResultLinger = 2 * time.Second },
		"SUNDIAL_DATABASE_MAX_CONNS":           func(c *app.Config) { c.DatabaseMaxConns = 0 },
		"SUNDIAL_SHUTDOWN_TIMEOUT":             func(c *app.Config) { c.ShutdownTimeout = 0 },
		"SUNDIAL_DELIVERY_ALLOW_CIDRS":         func(c *app.Config) { c.AllowCIDRs = []netip.Prefix{{}} },
		"SUNDIAL_SECRET_KEYS":                  func(c *app.Config) { c.SecretKeys = "k1:c2hvcnQ=" },
	}
	for i, bad := range []string{"", "sundial.example.com", "ftp://sundial.example.com", "https://",
		"https://sundial.example.com/?x=1", "https://sundial.example.com/#top", "https://sundial.example.com/v1",
		"https://user:pw@sundial.example.com"} {
		cases["SUNDIAL_PUBLIC_URL "+strconv.Itoa(i)] = func(c *app.Config) { c.PublicURL = bad }
	}
	for name, breakIt := range cases {
		cfg := valid
		breakIt(&cfg)
		require.ErrorContains(t, cfg.Validate(), strings.Fields(name)[0], name)
	}
}
