package app

import (
	"errors"
	"math"
	"time"

	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/pkg/telemetry"
	"github.com/sundial-run/sundial/services/scheduler/internal/claim"
)

// DeliveryTimeout is the time a receiver has to answer a delivery (the
// spec's limit). A lease no longer than this re-drives hooks whose delivery
// is still in progress, so production leases must exceed it with room for
// queueing and for publishing the result.
const DeliveryTimeout = 10 * time.Second

// Config is the whole configuration, read only from the environment.
type Config struct {
	// DatabaseURL is the PostgreSQL connection URL.
	// SUNDIAL_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/sundial?sslmode=disable.
	DatabaseURL string
	// NATSURL is the NATS server URL. SUNDIAL_NATS_URL, default nats://127.0.0.1:4222.
	NATSURL string
	// LogLevel is debug, info, warn or error. SUNDIAL_LOG_LEVEL, default info.
	LogLevel string
	// PollInterval is the wait between safety polls (claims of everything
	// due) when the last one did not fill its batch (a full batch is
	// followed at once by another claim). With the prefetch window on, it
	// only covers lost notifications and bursts beyond the prefetch limit;
	// with it off it bounds the lateness. SUNDIAL_SCHEDULER_POLL_INTERVAL,
	// default 1s.
	PollInterval time.Duration
	// PrefetchWindow is how far ahead the scheduler loads due hooks into
	// memory to claim each just in time; 0 turns just-in-time claiming off
	// (polling only). SUNDIAL_SCHEDULER_PREFETCH, default 5s.
	PrefetchWindow time.Duration
	// PrefetchInterval is the interval between prefetch reads; hooks that
	// become near-due between them are added by notification.
	// SUNDIAL_SCHEDULER_PREFETCH_INTERVAL, default 1s; at most the window.
	PrefetchInterval time.Duration
	// ClaimBatchSize bounds the hooks one claim takes, 1 to 10000.
	// SUNDIAL_SCHEDULER_BATCH_SIZE, default 500.
	ClaimBatchSize int
	// LeaseDuration is how long a claimed hook waits for its result before
	// it is due again and re-driven under a new lease. At least 1s; in
	// production it must exceed the 10 s delivery limit (DeliveryTimeout)
	// with room for queueing, or hooks still being delivered are delivered
	// twice. Tests may use 1-3s. SUNDIAL_LEASE_DURATION, default 30s.
	LeaseDuration time.Duration
	// ResultConcurrency bounds the attempt results applied at once (and the
	// results the consumer holds unacknowledged).
	// SUNDIAL_SCHEDULER_RESULT_CONCURRENCY, default 32.
	ResultConcurrency int
	// DatabaseMaxConns bounds the PostgreSQL pool. SUNDIAL_DATABASE_MAX_CONNS, default 16.
	DatabaseMaxConns int
	// ShutdownTimeout bounds how long Run waits, once stopped, for results
	// being applied; after it their messages are handed back to NATS.
	// SUNDIAL_SHUTDOWN_TIMEOUT, default 15s.
	ShutdownTimeout time.Duration
}

// Defaults.
const (
	DefaultDatabaseURL       = "postgres://postgres@127.0.0.1:5432/sundial?sslmode=disable"
	DefaultNATSURL           = "nats://127.0.0.1:4222"
	DefaultLogLevel          = "info"
	DefaultPollInterval      = time.Second
	DefaultPrefetchWindow    = 5 * time.Second
	DefaultPrefetchInterval  = time.Second
	DefaultClaimBatchSize    = 500
	DefaultLeaseDuration     = 30 * time.Second
	DefaultResultConcurrency = 32
	DefaultDatabaseMaxConns  = 16
	DefaultShutdownTimeout   = 15 * time.Second
)

// Bounds checked by Validate.
const (
	MinLeaseDuration     = time.Second
	MaxResultConcurrency = 10000
)

// ConfigFromEnv reads the Config from the environment (lookup; nil means
// the process environment) and returns every parse and validation error.
func ConfigFromEnv(lookup envconf.Lookup) (Config, error) {
	r := envconf.New(lookup)
	cfg := Config{
		DatabaseURL:       r.String("SUNDIAL_DATABASE_URL", DefaultDatabaseURL),
		NATSURL:           r.String("SUNDIAL_NATS_URL", DefaultNATSURL),
		LogLevel:          r.String("SUNDIAL_LOG_LEVEL", DefaultLogLevel),
		PollInterval:      r.Duration("SUNDIAL_SCHEDULER_POLL_INTERVAL", DefaultPollInterval),
		PrefetchWindow:    r.Duration("SUNDIAL_SCHEDULER_PREFETCH", DefaultPrefetchWindow),
		PrefetchInterval:  r.Duration("SUNDIAL_SCHEDULER_PREFETCH_INTERVAL", DefaultPrefetchInterval),
		ClaimBatchSize:    r.Int("SUNDIAL_SCHEDULER_BATCH_SIZE", DefaultClaimBatchSize),
		LeaseDuration:     r.Duration("SUNDIAL_LEASE_DURATION", DefaultLeaseDuration),
		ResultConcurrency: r.Int("SUNDIAL_SCHEDULER_RESULT_CONCURRENCY", DefaultResultConcurrency),
		DatabaseMaxConns:  r.Int("SUNDIAL_DATABASE_MAX_CONNS", DefaultDatabaseMaxConns),
		ShutdownTimeout:   r.Duration("SUNDIAL_SHUTDOWN_TIMEOUT", DefaultShutdownTimeout),
	}
	return cfg, errors.Join(r.Err(), cfg.Validate())
}

// Validate reports every value the scheduler cannot run with, naming the
// environment variable that sets it.
func (c Config) Validate() error {
	var ch envconf.Check
	ch.That(c.DatabaseURL != "", "SUNDIAL_DATABASE_URL: must be set")
	ch.That(c.NATSURL != "", "SUNDIAL_NATS_URL: must be set")
	if err := telemetry.ParseLevel(c.LogLevel); err != nil {
		ch.That(false, "SUNDIAL_LOG_LEVEL: %v", err)
	}
	ch.That(c.PollInterval > 0, "SUNDIAL_SCHEDULER_POLL_INTERVAL=%s: must be positive", c.PollInterval)
	ch.That(c.PrefetchWindow >= 0, "SUNDIAL_SCHEDULER_PREFETCH=%s: must be 0 (off) or positive", c.PrefetchWindow)
	ch.That(c.PrefetchWindow == 0 || (c.PrefetchInterval > 0 && c.PrefetchInterval <= c.PrefetchWindow),
		"SUNDIAL_SCHEDULER_PREFETCH_INTERVAL=%s: want above 0 and at most SUNDIAL_SCHEDULER_PREFETCH (%s)", c.PrefetchInterval, c.PrefetchWindow)
	ch.That(c.ClaimBatchSize >= 1 && c.ClaimBatchSize <= claim.MaxBatchSize,
		"SUNDIAL_SCHEDULER_BATCH_SIZE=%d: want 1 to %d", c.ClaimBatchSize, claim.MaxBatchSize)
	ch.That(c.LeaseDuration >= MinLeaseDuration,
		"SUNDIAL_LEASE_DURATION=%s: must be at least %s (and above %s in production)", c.LeaseDuration, MinLeaseDuration, DeliveryTimeout)
	ch.That(c.ResultConcurrency >= 1 && c.ResultConcurrency <= MaxResultConcurrency,
		"SUNDIAL_SCHEDULER_RESULT_CONCURRENCY=%d: want 1 to %d", c.ResultConcurrency, MaxResultConcurrency)
	ch.That(c.DatabaseMaxConns >= 1 && c.DatabaseMaxConns <= math.MaxInt32,
		"SUNDIAL_DATABASE_MAX_CONNS=%d: must be at least 1", c.DatabaseMaxConns)
	ch.That(c.ShutdownTimeout > 0, "SUNDIAL_SHUTDOWN_TIMEOUT=%s: must be positive", c.ShutdownTimeout)
	return ch.Err()
}
