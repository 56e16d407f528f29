package app

import (
	"errors"
	"math"
	"time"

	"github.com/sundial-run/sundial/pkg/adminhttp"
	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/pkg/telemetry"
	"github.com/sundial-run/sundial/services/scheduler/internal/breaker"
	"github.com/sundial-run/sundial/services/scheduler/internal/claim"
	"github.com/sundial-run/sundial/services/scheduler/internal/result"
	"github.com/sundial-run/sundial/services/scheduler/internal/retention"
	"github.com/sundial-run/sundial/services/scheduler/internal/sequencer"
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
	DatabaseURL string `env:"SUNDIAL_DATABASE_URL"`
	// NATSURL is the NATS server URL. SUNDIAL_NATS_URL, default nats://127.0.0.1:4222.
	NATSURL string `env:"SUNDIAL_NATS_URL"`
	// StreamReplicas is how many servers of a JetStream cluster keep each
	// stream and durable consumer (SUNDIAL_STREAM_REPLICAS, default 1, at
	// most 5; every service must be given the same value:
	// docs/operations.md, "Streams and consumers").
	StreamReplicas int `env:"SUNDIAL_STREAM_REPLICAS"`
	// LogLevel is debug, info, warn or error. SUNDIAL_LOG_LEVEL, default info.
	LogLevel string `env:"SUNDIAL_LOG_LEVEL"`
	// AdminAddr is the admin listener's address: /healthz, /readyz and
	// /metrics (docs/observability.md). SUNDIAL_SCHEDULER_ADMIN_ADDR, default
	// 127.0.0.1:9091, this machine only: an operator exposes it, e.g. :9091 in
	// a pod; port 0 picks a free one (App.AdminAddr).
	AdminAddr string `env:"SUNDIAL_SCHEDULER_ADMIN_ADDR"`
	// PollInterval is the wait between safety polls (claims of everything
	// due) when the last one did not fill its batch (a full batch is
	// followed at once by another claim). With the prefetch window on, it
	// only covers lost notifications and bursts beyond the prefetch limit;
	// with it off it bounds the lateness. SUNDIAL_SCHEDULER_POLL_INTERVAL,
	// default 1s.
	PollInterval time.Duration `env:"SUNDIAL_SCHEDULER_POLL_INTERVAL"`
	// PrefetchWindow is how far ahead the scheduler loads due hooks into
	// memory to claim each just in time; 0 turns just-in-time claiming off
	// (polling only). SUNDIAL_SCHEDULER_PREFETCH, default 5s.
	PrefetchWindow time.Duration `env:"SUNDIAL_SCHEDULER_PREFETCH"`
	// PrefetchInterval is the interval between prefetch reads; hooks that
	// become near-due between them are added by notification.
	// SUNDIAL_SCHEDULER_PREFETCH_INTERVAL, default 1s; at most the window.
	PrefetchInterval time.Duration `env:"SUNDIAL_SCHEDULER_PREFETCH_INTERVAL"`
	// ClaimConcurrency bounds the just-in-time claims in flight at once
	// (each on its own pool connection), 1 to 64, so that a hook due while a
	// claim runs does not wait for it. SUNDIAL_SCHEDULER_CLAIM_CONCURRENCY,
	// default 4.
	ClaimConcurrency int `env:"SUNDIAL_SCHEDULER_CLAIM_CONCURRENCY"`
	// ClaimAhead is how long before a hook is due its just-in-time claim
	// may run; the DueHook is held in the scheduler and published once the
	// hook is due by the database clock, so the claim's commit is not part
	// of the delivery's lateness. A hook cancelled within this time of its
	// due instant may be delivered all the same. 0 to 2s, and below
	// SUNDIAL_SCHEDULER_PREFETCH. SUNDIAL_SCHEDULER_CLAIM_AHEAD, default
	// 200ms.
	ClaimAhead time.Duration `env:"SUNDIAL_SCHEDULER_CLAIM_AHEAD"`
	// ClaimBatchSize bounds the hooks one claim takes, 1 to 10000.
	// SUNDIAL_SCHEDULER_BATCH_SIZE, default 500.
	ClaimBatchSize int `env:"SUNDIAL_SCHEDULER_BATCH_SIZE"`
	// LeaseDuration is how long a claimed hook waits for its result before
	// it is due again and re-driven under a new lease. At least 1s; in
	// production it must exceed the 10 s delivery limit (DeliveryTimeout)
	// with room for queueing, or hooks still being delivered are delivered
	// twice. Tests may use 1-3s. SUNDIAL_LEASE_DURATION, default 30s.
	LeaseDuration time.Duration `env:"SUNDIAL_LEASE_DURATION"`
	// MaxRedrives is how many times one attempt is handed out again after
	// its lease expired with no result (a lost message, a crashed
	// dispatcher). The claim after that records the attempt as failed, so a
	// hook whose delivery crashes every dispatcher ends under its retry
	// policy instead of looping. SUNDIAL_SCHEDULER_MAX_REDRIVES, default 5.
	MaxRedrives int `env:"SUNDIAL_SCHEDULER_MAX_REDRIVES"`
	// MaxInFlight bounds the hooks claimed and not yet settled (messages
	// waiting in the due and results queues, across all schedulers): at the
	// bound, claiming pauses until dispatchers and result application catch
	// up, so no lease expires while its hook waits in a queue (which would
	// deliver it twice). Keep it below what the deployment delivers in a
	// lease. 0 means no bound. SUNDIAL_SCHEDULER_MAX_IN_FLIGHT, default 10000.
	MaxInFlight int `env:"SUNDIAL_SCHEDULER_MAX_IN_FLIGHT"`
	// ResultConcurrency bounds the attempt results being applied at once
	// (and the results the consumer holds unacknowledged, its
	// MaxAckPending). Results are applied in batches, so it must leave room
	// for several batches to fill. SUNDIAL_SCHEDULER_RESULT_CONCURRENCY,
	// default 1024, 1 to 10000.
	ResultConcurrency int `env:"SUNDIAL_SCHEDULER_RESULT_CONCURRENCY"`
	// ResultBatch bounds the attempt results applied in one transaction;
	// at most ResultConcurrency takes effect (no more results are held at
	// once). 1 applies each result on its own.
	// SUNDIAL_SCHEDULER_RESULT_BATCH, default 500, 1 to 10000.
	ResultBatch int `env:"SUNDIAL_SCHEDULER_RESULT_BATCH"`
	// ResultLinger is how long a batch of results waits, after its first
	// result, for more before it is applied; 0 applies what is waiting at
	// once. Under load batches fill before it passes; it adds at most this
	// much to the time a result takes when results are few (a hook's
	// delivery is not waiting for it: only its status, its alerts and a
	// sequence's next steps are). A batch's four statements cost
	// PostgreSQL about the same for a few results as for many, so a
	// linger too short to gather more than a handful in a steady flow
	// made them a large share of its processor time per hook
	// (docs/benchmarks.md, "Results in batches").
	// SUNDIAL_SCHEDULER_RESULT_LINGER, default 20ms, 0 to 1s.
	ResultLinger time.Duration `env:"SUNDIAL_SCHEDULER_RESULT_LINGER"`
	// AsyncSweepInterval is how often the scheduler looks for async waits
	// that have ended (a 202 answer neither acked nor nacked within its
	// timeout) to apply them as failed attempts. Acks and nacks wake the
	// scheduler at once (NOTIFY sundial_async); this is the fallback for a
	// notification that was lost. SUNDIAL_SCHEDULER_ASYNC_SWEEP_INTERVAL,
	// default 1s.
	AsyncSweepInterval time.Duration `env:"SUNDIAL_SCHEDULER_ASYNC_SWEEP_INTERVAL"`
	// SequenceInterval is how often the scheduler looks for sequences
	// whose next slot is due, trigger requests to run, and sequence steps
	// whose hook was cancelled (package sequencer); a scan that finds more
	// than a few batches' worth goes on at once. It is how late a slot's
	// run can start. SUNDIAL_SCHEDULER_SEQUENCE_INTERVAL, default 1s, 10ms
	// to 1m.
	SequenceInterval time.Duration `env:"SUNDIAL_SCHEDULER_SEQUENCE_INTERVAL"`
	// DatabaseMaxConns bounds the PostgreSQL pool. SUNDIAL_DATABASE_MAX_CONNS, default 16.
	DatabaseMaxConns int `env:"SUNDIAL_DATABASE_MAX_CONNS"`
	// ShutdownTimeout bounds how long Run waits, once stopped, for results
	// being applied; after it their messages are handed back to NATS.
	// SUNDIAL_SHUTDOWN_TIMEOUT, default 15s.
	ShutdownTimeout time.Duration `env:"SUNDIAL_SHUTDOWN_TIMEOUT"`
	// BreakerFailures is how many failures in a row (no answer, 429, 5xx)
	// open an endpoint's circuit breaker, once they span BreakerSpan
	// (docs/security.md, "Circuit breaker and Retry-After").
	// SUNDIAL_SCHEDULER_BREAKER_FAILURES, default 10.
	BreakerFailures int `env:"SUNDIAL_SCHEDULER_BREAKER_FAILURES"`
	// BreakerSpan is how long a run of failures must last to open the
	// breaker. SUNDIAL_SCHEDULER_BREAKER_SPAN, default 3s.
	BreakerSpan time.Duration `env:"SUNDIAL_SCHEDULER_BREAKER_SPAN"`
	// BreakerCooldown is the first pause of an opened breaker; each failed
	// probe doubles it up to BreakerMaxCooldown.
	// SUNDIAL_SCHEDULER_BREAKER_COOLDOWN, default 30s;
	// SUNDIAL_SCHEDULER_BREAKER_MAX_COOLDOWN, default 10m.
	BreakerCooldown    time.Duration `env:"SUNDIAL_SCHEDULER_BREAKER_COOLDOWN"`
	BreakerMaxCooldown time.Duration `env:"SUNDIAL_SCHEDULER_BREAKER_MAX_COOLDOWN"`
	// RetentionInterval is the wait between the retention cleaner's passes
	// (package retention; docs/operations.md, "Retention"); 0 turns the
	// cleaner off. SUNDIAL_SCHEDULER_RETENTION_INTERVAL, default 1m.
	RetentionInterval time.Duration `env:"SUNDIAL_SCHEDULER_RETENTION_INTERVAL"`
	// RetentionBatch bounds the hooks one delete (one transaction) takes,
	// 1 to 10000, and RetentionMaxBatches the deletes of one pass, 1 to
	// 1000; RetentionPause, 0 to 10s, separates two deletes, and a pass
	// that reached its cap from the next.
	// SUNDIAL_SCHEDULER_RETENTION_BATCH, default 1000;
	// SUNDIAL_SCHEDULER_RETENTION_MAX_BATCHES, default 10;
	// SUNDIAL_SCHEDULER_RETENTION_PAUSE, default 100ms.
	RetentionBatch      int           `env:"SUNDIAL_SCHEDULER_RETENTION_BATCH"`
	RetentionMaxBatches int           `env:"SUNDIAL_SCHEDULER_RETENTION_MAX_BATCHES"`
	RetentionPause      time.Duration `env:"SUNDIAL_SCHEDULER_RETENTION_PAUSE"`
}

// Defaults.
const (
	DefaultDatabaseURL        = postgres.DefaultURL
	DefaultNATSURL            = bus.DefaultURL
	DefaultLogLevel           = "info"
	DefaultAdminAddr          = "127.0.0.1:9091"
	DefaultPollInterval       = time.Second
	DefaultPrefetchWindow     = 5 * time.Second
	DefaultPrefetchInterval   = time.Second
	DefaultClaimBatchSize     = 500
	DefaultClaimConcurrency   = claim.DefaultClaims
	DefaultClaimAhead         = claim.DefaultClaimAhead
	DefaultLeaseDuration      = 30 * time.Second
	DefaultMaxRedrives        = 5
	DefaultMaxInFlight        = 10000
	DefaultResultConcurrency  = 1024
	DefaultResultBatch        = 500
	DefaultResultLinger       = 20 * time.Millisecond
	DefaultAsyncSweepInterval = time.Second
	DefaultSequenceInterval   = sequencer.DefaultInterval
	DefaultDatabaseMaxConns   = 16
	DefaultShutdownTimeout    = 15 * time.Second
	DefaultBreakerFailures    = breaker.DefaultFailures
	DefaultBreakerSpan        = breaker.DefaultMinSpan
	DefaultBreakerCooldown    = breaker.DefaultCooldown
	DefaultBreakerMaxCooldown = breaker.DefaultMaxCooldown

	DefaultRetentionInterval   = retention.DefaultInterval
	DefaultRetentionBatch      = retention.DefaultBatchSize
	DefaultRetentionMaxBatches = retention.DefaultMaxBatches
	DefaultRetentionPause      = retention.DefaultPause
)

// Bounds checked by Validate.
const (
	MinLeaseDuration     = time.Second
	MaxResultConcurrency = 10000
	MinSequenceInterval  = 10 * time.Millisecond
	MaxSequenceInterval  = time.Minute
)

// defaultConfig is the Config with no variable set.
func defaultConfig() Config {
	return Config{
		DatabaseURL:        DefaultDatabaseURL,
		NATSURL:            DefaultNATSURL,
		StreamReplicas:     event.DefaultReplicas,
		LogLevel:           DefaultLogLevel,
		AdminAddr:          DefaultAdminAddr,
		PollInterval:       DefaultPollInterval,
		PrefetchWindow:     DefaultPrefetchWindow,
		PrefetchInterval:   DefaultPrefetchInterval,
		ClaimBatchSize:     DefaultClaimBatchSize,
		ClaimConcurrency:   DefaultClaimConcurrency,
		ClaimAhead:         DefaultClaimAhead,
		LeaseDuration:      DefaultLeaseDuration,
		MaxRedrives:        DefaultMaxRedrives,
		MaxInFlight:        DefaultMaxInFlight,
		ResultConcurrency:  DefaultResultConcurrency,
		ResultBatch:        DefaultResultBatch,
		ResultLinger:       DefaultResultLinger,
		AsyncSweepInterval: DefaultAsyncSweepInterval,
		SequenceInterval:   DefaultSequenceInterval,
		DatabaseMaxConns:   DefaultDatabaseMaxConns,
		ShutdownTimeout:    DefaultShutdownTimeout,
		BreakerFailures:    DefaultBreakerFailures,
		BreakerSpan:        DefaultBreakerSpan,
		BreakerCooldown:    DefaultBreakerCooldown,
		BreakerMaxCooldown: DefaultBreakerMaxCooldown,

		RetentionInterval:   DefaultRetentionInterval,
		RetentionBatch:      DefaultRetentionBatch,
		RetentionMaxBatches: DefaultRetentionMaxBatches,
		RetentionPause:      DefaultRetentionPause,
	}
}

// ConfigFromEnv reads the Config from the environment (lookup; nil means
// the process environment) and returns every parse and validation error.
func ConfigFromEnv(lookup envconf.Lookup) (Config, error) {
	cfg := defaultConfig()
	err := envconf.Load(lookup, &cfg)
	return cfg, errors.Join(err, cfg.Validate())
}

// Validate reports every value the scheduler cannot run with, naming the
// environment variable that sets it.
func (c Config) Validate() error {
	var ch envconf.Check
	ch.That(c.DatabaseURL != "", "SUNDIAL_DATABASE_URL: must be set")
	ch.That(c.NATSURL != "", "SUNDIAL_NATS_URL: must be set")
	replicasErr := event.CheckReplicas(c.StreamReplicas)
	ch.That(replicasErr == nil, "%v", replicasErr)
	if err := telemetry.ParseLevel(c.LogLevel); err != nil {
		ch.That(false, "SUNDIAL_LOG_LEVEL: %v", err)
	}
	if err := adminhttp.CheckAddr(c.AdminAddr); err != nil {
		ch.That(false, "SUNDIAL_SCHEDULER_ADMIN_ADDR=%q: %v", c.AdminAddr, err)
	}
	ch.That(c.PollInterval > 0, "SUNDIAL_SCHEDULER_POLL_INTERVAL=%s: must be positive", c.PollInterval)
	ch.That(c.PrefetchWindow >= 0, "SUNDIAL_SCHEDULER_PREFETCH=%s: must be 0 (off) or positive", c.PrefetchWindow)
	ch.That(c.PrefetchWindow == 0 || (c.PrefetchInterval > 0 && c.PrefetchInterval <= c.PrefetchWindow),
		"SUNDIAL_SCHEDULER_PREFETCH_INTERVAL=%s: want above 0 and at most SUNDIAL_SCHEDULER_PREFETCH (%s)", c.PrefetchInterval, c.PrefetchWindow)
	ch.That(c.ClaimBatchSize >= 1 && c.ClaimBatchSize <= claim.MaxBatchSize,
		"SUNDIAL_SCHEDULER_BATCH_SIZE=%d: want 1 to %d", c.ClaimBatchSize, claim.MaxBatchSize)
	ch.That(c.ClaimConcurrency >= 1 && c.ClaimConcurrency <= claim.MaxClaims,
		"SUNDIAL_SCHEDULER_CLAIM_CONCURRENCY=%d: want 1 to %d", c.ClaimConcurrency, claim.MaxClaims)
	ch.That(c.ClaimAhead >= 0 && c.ClaimAhead <= claim.MaxClaimAhead && (c.PrefetchWindow == 0 || c.ClaimAhead < c.PrefetchWindow),
		"SUNDIAL_SCHEDULER_CLAIM_AHEAD=%s: want 0 to %s, and below SUNDIAL_SCHEDULER_PREFETCH (%s)",
		c.ClaimAhead, claim.MaxClaimAhead, c.PrefetchWindow)
	ch.That(c.LeaseDuration >= MinLeaseDuration,
		"SUNDIAL_LEASE_DURATION=%s: must be at least %s (and above %s in production)", c.LeaseDuration, MinLeaseDuration, DeliveryTimeout)
	ch.That(c.MaxInFlight >= 0, "SUNDIAL_SCHEDULER_MAX_IN_FLIGHT=%d: must not be negative (0: no bound)", c.MaxInFlight)
	ch.That(c.MaxRedrives >= 0, "SUNDIAL_SCHEDULER_MAX_REDRIVES=%d: must not be negative", c.MaxRedrives)
	ch.That(c.ResultConcurrency >= 1 && c.ResultConcurrency <= MaxResultConcurrency,
		"SUNDIAL_SCHEDULER_RESULT_CONCURRENCY=%d: want 1 to %d", c.ResultConcurrency, MaxResultConcurrency)
	ch.That(c.ResultBatch >= 1 && c.ResultBatch <= result.MaxBatchSize,
		"SUNDIAL_SCHEDULER_RESULT_BATCH=%d: want 1 to %d", c.ResultBatch, result.MaxBatchSize)
	ch.That(c.ResultLinger >= 0 && c.ResultLinger <= result.MaxLinger,
		"SUNDIAL_SCHEDULER_RESULT_LINGER=%s: want 0 to %s", c.ResultLinger, result.MaxLinger)
	ch.That(c.AsyncSweepInterval > 0, "SUNDIAL_SCHEDULER_ASYNC_SWEEP_INTERVAL=%s: must be positive", c.AsyncSweepInterval)
	ch.That(c.SequenceInterval >= MinSequenceInterval && c.SequenceInterval <= MaxSequenceInterval,
		"SUNDIAL_SCHEDULER_SEQUENCE_INTERVAL=%s: want %s to %s", c.SequenceInterval, MinSequenceInterval, MaxSequenceInterval)
	ch.That(c.DatabaseMaxConns >= 1 && c.DatabaseMaxConns <= math.MaxInt32,
		"SUNDIAL_DATABASE_MAX_CONNS=%d: must be at least 1", c.DatabaseMaxConns)
	ch.That(c.ShutdownTimeout > 0, "SUNDIAL_SHUTDOWN_TIMEOUT=%s: must be positive", c.ShutdownTimeout)
	ch.That(c.BreakerFailures >= 1, "SUNDIAL_SCHEDULER_BREAKER_FAILURES=%d: must be at least 1", c.BreakerFailures)
	ch.That(c.BreakerSpan >= 0, "SUNDIAL_SCHEDULER_BREAKER_SPAN=%s: must not be negative", c.BreakerSpan)
	ch.That(c.BreakerCooldown >= time.Second, "SUNDIAL_SCHEDULER_BREAKER_COOLDOWN=%s: must be at least 1s", c.BreakerCooldown)
	ch.That(c.BreakerMaxCooldown >= c.BreakerCooldown,
		"SUNDIAL_SCHEDULER_BREAKER_MAX_COOLDOWN=%s: must be at least SUNDIAL_SCHEDULER_BREAKER_COOLDOWN (%s)", c.BreakerMaxCooldown, c.BreakerCooldown)
	c.validateRetention(&ch)
	return ch.Err()
}

func (c Config) validateRetention(ch *envconf.Check) {
	ch.That(c.RetentionInterval >= 0, "SUNDIAL_SCHEDULER_RETENTION_INTERVAL=%s: must be 0 (off) or positive", c.RetentionInterval)
	ch.That(c.RetentionBatch >= 1 && c.RetentionBatch <= retention.MaxBatchSize,
		"SUNDIAL_SCHEDULER_RETENTION_BATCH=%d: want 1 to %d", c.RetentionBatch, retention.MaxBatchSize)
	ch.That(c.RetentionMaxBatches >= 1 && c.RetentionMaxBatches <= retention.MaxMaxBatches,
		"SUNDIAL_SCHEDULER_RETENTION_MAX_BATCHES=%d: want 1 to %d", c.RetentionMaxBatches, retention.MaxMaxBatches)
	ch.That(c.RetentionPause >= 0 && c.RetentionPause <= retention.MaxPause,
		"SUNDIAL_SCHEDULER_RETENTION_PAUSE=%s: want 0 to %s", c.RetentionPause, retention.MaxPause)
}

// breakerPolicy is the circuit breakers' policy of the configuration.
func (c Config) breakerPolicy() breaker.Policy {
	p := breaker.DefaultPolicy
	p.Failures, p.MinSpan, p.Cooldown, p.MaxCooldown = c.BreakerFailures, c.BreakerSpan, c.BreakerCooldown, c.BreakerMaxCooldown
	return p
}
