package app_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/services/scheduler/app"
)

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := app.ConfigFromEnv(envconf.Map(nil))
	require.NoError(t, err)
	require.Equal(t, app.Config{
		DatabaseURL:        "postgres://postgres@127.0.0.1:5432/sundial?sslmode=disable",
		NATSURL:            "nats://127.0.0.1:4222",
		StreamReplicas:     1,
		LogLevel:           "info",
		AdminAddr:          "127.0.0.1:9091",
		PollInterval:       time.Second,
		PrefetchWindow:     5 * time.Second,
		PrefetchInterval:   time.Second,
		ClaimConcurrency:   4,
		ClaimAhead:         200 * time.Millisecond,
		ClaimBatchSize:     500,
		LeaseDuration:      30 * time.Second,
		MaxRedrives:        5,
		MaxInFlight:        10000,
		ResultConcurrency:  1024,
		ResultBatch:        500,
		ResultLinger:       20 * time.Millisecond,
		AsyncSweepInterval: time.Second,
		SequenceInterval:   time.Second,
		DatabaseMaxConns:   16,
		SchemaWait:         30 * time.Second,
		ShutdownTimeout:    15 * time.Second,
		BreakerFailures:    10,
		BreakerSpan:        3 * time.Second,
		BreakerCooldown:    30 * time.Second,
		BreakerMaxCooldown: 10 * time.Minute,

		RetentionInterval:   time.Minute,
		RetentionBatch:      1000,
		RetentionMaxBatches: 10,
		RetentionPause:      100 * time.Millisecond,
	}, cfg)
}

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	cfg, err := app.ConfigFromEnv(envconf.Map(map[string]string{
		"SUNDIAL_DATABASE_URL":                   "postgres://db.internal/sundial",
		"SUNDIAL_NATS_URL":                       "nats://nats.internal:4222",
		"SUNDIAL_STREAM_REPLICAS":                "3",
		"SUNDIAL_LOG_LEVEL":                      "debug",
		"SUNDIAL_SCHEDULER_ADMIN_ADDR":           "127.0.0.1:19091",
		"SUNDIAL_SCHEDULER_POLL_INTERVAL":        "250ms",
		"SUNDIAL_SCHEDULER_PREFETCH":             "3s",
		"SUNDIAL_SCHEDULER_PREFETCH_INTERVAL":    "500ms",
		"SUNDIAL_SCHEDULER_BATCH_SIZE":           "10000",
		"SUNDIAL_SCHEDULER_CLAIM_CONCURRENCY":    "2",
		"SUNDIAL_SCHEDULER_CLAIM_AHEAD":          "50ms",
		"SUNDIAL_LEASE_DURATION":                 "45s",
		"SUNDIAL_SCHEDULER_MAX_REDRIVES":         "0",
		"SUNDIAL_SCHEDULER_MAX_IN_FLIGHT":        "0",
		"SUNDIAL_SCHEDULER_RESULT_CONCURRENCY":   "8",
		"SUNDIAL_SCHEDULER_RESULT_BATCH":         "10000",
		"SUNDIAL_SCHEDULER_RESULT_LINGER":        "0s",
		"SUNDIAL_SCHEDULER_ASYNC_SWEEP_INTERVAL": "200ms",
		"SUNDIAL_SCHEDULER_SEQUENCE_INTERVAL":    "250ms",
		"SUNDIAL_DATABASE_MAX_CONNS":             "4",
		"SUNDIAL_SCHEMA_WAIT":                    "5s",
		"SUNDIAL_SHUTDOWN_TIMEOUT":               "1m",
		"SUNDIAL_SCHEDULER_BREAKER_FAILURES":     "3",
		"SUNDIAL_SCHEDULER_BREAKER_SPAN":         "0s",
		"SUNDIAL_SCHEDULER_BREAKER_COOLDOWN":     "2s",
		"SUNDIAL_SCHEDULER_BREAKER_MAX_COOLDOWN": "1m",

		"SUNDIAL_SCHEDULER_RETENTION_INTERVAL":    "0s",
		"SUNDIAL_SCHEDULER_RETENTION_BATCH":       "10000",
		"SUNDIAL_SCHEDULER_RETENTION_MAX_BATCHES": "1",
		"SUNDIAL_SCHEDULER_RETENTION_PAUSE":       "0s",
	}))
	require.NoError(t, err)
	require.Equal(t, app.Config{
		DatabaseURL:        "postgres://db.internal/sundial",
		NATSURL:            "nats://nats.internal:4222",
		StreamReplicas:     3,
		LogLevel:           "debug",
		AdminAddr:          "127.0.0.1:19091",
		PollInterval:       250 * time.Millisecond,
		PrefetchWindow:     3 * time.Second,
		PrefetchInterval:   500 * time.Millisecond,
		ClaimConcurrency:   2,
		ClaimAhead:         50 * time.Millisecond,
		ClaimBatchSize:     10000,
		LeaseDuration:      45 * time.Second,
		ResultConcurrency:  8,
		ResultBatch:        10000,
		AsyncSweepInterval: 200 * time.Millisecond,
		SequenceInterval:   250 * time.Millisecond,
		DatabaseMaxConns:   4,
		SchemaWait:         5 * time.Second,
		ShutdownTimeout:    time.Minute,
		BreakerFailures:    3,
		BreakerCooldown:    2 * time.Second,
		BreakerMaxCooldown: time.Minute,

		RetentionBatch:      10000,
		RetentionMaxBatches: 1,
	}, cfg)
}

func TestConfigReportsEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := app.ConfigFromEnv(envconf.Map(map[string]string{
		"SUNDIAL_LOG_LEVEL":                    "loud",
		"SUNDIAL_SCHEDULER_POLL_INTERVAL":      "soon",
		"SUNDIAL_SCHEDULER_PREFETCH":           "-1s",
		"SUNDIAL_SCHEDULER_PREFETCH_INTERVAL":  "6s",
		"SUNDIAL_SCHEDULER_BATCH_SIZE":         "10001",
		"SUNDIAL_SCHEDULER_CLAIM_CONCURRENCY":  "65",
		"SUNDIAL_SCHEDULER_CLAIM_AHEAD":        "3s",
		"SUNDIAL_LEASE_DURATION":               "500ms",
		"SUNDIAL_SCHEDULER_MAX_REDRIVES":       "-1",
		"SUNDIAL_SCHEDULER_MAX_IN_FLIGHT":      "-5",
		"SUNDIAL_SCHEDULER_RESULT_CONCURRENCY": "0",
		"SUNDIAL_SCHEDULER_RESULT_BATCH":       "0",
		"SUNDIAL_SCHEDULER_RESULT_LINGER":      "2s",
		"SUNDIAL_DATABASE_MAX_CONNS":           "many",
		"SUNDIAL_SHUTDOWN_TIMEOUT":             "-1s",
		"SUNDIAL_SCHEDULER_BREAKER_FAILURES":   "0",
		"SUNDIAL_SCHEDULER_BREAKER_SPAN":       "-1s",
		"SUNDIAL_SCHEDULER_BREAKER_COOLDOWN":   "10ms",
		"SUNDIAL_SCHEDULER_SEQUENCE_INTERVAL":  "2m",
	}))
	require.Error(t, err)
	for _, name := range []string{
		"SUNDIAL_LOG_LEVEL", "SUNDIAL_SCHEDULER_POLL_INTERVAL", "SUNDIAL_SCHEDULER_BATCH_SIZE",
		"SUNDIAL_LEASE_DURATION", "SUNDIAL_SCHEDULER_RESULT_CONCURRENCY", "SUNDIAL_DATABASE_MAX_CONNS",
		"SUNDIAL_SHUTDOWN_TIMEOUT", "SUNDIAL_SCHEDULER_PREFETCH", "SUNDIAL_SCHEDULER_MAX_REDRIVES",
		"SUNDIAL_SCHEDULER_MAX_IN_FLIGHT", "SUNDIAL_SCHEDULER_RESULT_BATCH", "SUNDIAL_SCHEDULER_RESULT_LINGER",
		"SUNDIAL_SCHEDULER_CLAIM_CONCURRENCY", "SUNDIAL_SCHEDULER_CLAIM_AHEAD",
		"SUNDIAL_SCHEDULER_BREAKER_FAILURES", "SUNDIAL_SCHEDULER_BREAKER_SPAN", "SUNDIAL_SCHEDULER_BREAKER_COOLDOWN",
		"SUNDIAL_SCHEDULER_SEQUENCE_INTERVAL",
	} {
		require.ErrorContains(t, err, name)
	}
}

func TestValidateBounds(t *testing.T) {
	t.Parallel()
	valid, err := app.ConfigFromEnv(envconf.Map(nil))
	require.NoError(t, err)
	for name, mutate := range map[string]func(*app.Config){
		"empty database url":   func(c *app.Config) { c.DatabaseURL = "" },
		"empty nats url":       func(c *app.Config) { c.NATSURL = "" },
		"no stream replicas":   func(c *app.Config) { c.StreamReplicas = 0 },
		"six stream replicas":  func(c *app.Config) { c.StreamReplicas = 6 },
		"zero poll interval":   func(c *app.Config) { c.PollInterval = 0 },
		"zero batch":           func(c *app.Config) { c.ClaimBatchSize = 0 },
		"lease under 1s":       func(c *app.Config) { c.LeaseDuration = 999 * time.Millisecond },
		"too many results":     func(c *app.Config) { c.ResultConcurrency = app.MaxResultConcurrency + 1 },
		"no connections":       func(c *app.Config) { c.DatabaseMaxConns = 0 },
		"zero shutdown":        func(c *app.Config) { c.ShutdownTimeout = 0 },
		"unknown level":        func(c *app.Config) { c.LogLevel = "verbose" },
		"negative batch size":  func(c *app.Config) { c.ClaimBatchSize = -1 },
		"negative prefetch":    func(c *app.Config) { c.PrefetchWindow = -time.Second },
		"negative claim ahead": func(c *app.Config) { c.ClaimAhead = -time.Millisecond },
		"claim ahead over window": func(c *app.Config) {
			c.PrefetchWindow, c.PrefetchInterval, c.ClaimAhead = time.Second, time.Second, time.Second
		},
		"refresh over window":         func(c *app.Config) { c.PrefetchInterval = c.PrefetchWindow + 1 },
		"zero refresh":                func(c *app.Config) { c.PrefetchInterval = 0 },
		"zero async sweep":            func(c *app.Config) { c.AsyncSweepInterval = 0 },
		"zero sequence scan":          func(c *app.Config) { c.SequenceInterval = 0 },
		"sequence scan over a minute": func(c *app.Config) { c.SequenceInterval = time.Minute + 1 },
		"negative redrives":           func(c *app.Config) { c.MaxRedrives = -1 },
		"negative in flight":          func(c *app.Config) { c.MaxInFlight = -1 },
		"zero result batch":           func(c *app.Config) { c.ResultBatch = 0 },
		"huge result batch":           func(c *app.Config) { c.ResultBatch = 10001 },
		"negative linger":             func(c *app.Config) { c.ResultLinger = -time.Millisecond },
		"linger over 1s":              func(c *app.Config) { c.ResultLinger = time.Second + 1 },
	} {
		cfg := valid
		mutate(&cfg)
		require.Error(t, cfg.Validate(), name)
	}
	edge := valid
	edge.LeaseDuration, edge.ClaimBatchSize, edge.ResultConcurrency = time.Second, 1, 1
	edge.ResultBatch, edge.ResultLinger = 1, 0
	require.NoError(t, edge.Validate())
	off := valid
	off.PrefetchWindow, off.PrefetchInterval = 0, 0
	require.NoError(t, off.Validate(), "a zero window turns just-in-time claiming off")
}
