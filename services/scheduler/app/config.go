package app

import (
	"errors"
	"math"
	"time"

	"github.com/sundial-run/sundial/pkg/adminhttp"
	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/calendar"
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
	// PostgreSQL; with a standby, name both servers and add
	// `target_session_attrs=read-write`
	// (`postgres://...@db1:5432,db2:5432/sundial?target_session_attrs=read-write`):
	// failover, backups and restore in
	// [docs/operations.md](docs/operations.md)
	DatabaseURL string `env:"SUNDIAL_DATABASE_URL"`
	// NATS with JetStream, `max_payload` at least 1 MiB (nats-server's
	// default; every service refuses to start below it); the gateway publishes
	// quota and channel-test alerts on it; several servers of a cluster
	// comma-separated
	NATSURL string `env:"SUNDIAL_NATS_URL"`
	// replicas of every stream and durable consumer, 1 to 5 (3 or 5 on a
	// JetStream cluster); the same on every service; see
	// [docs/operations.md](docs/operations.md)
	StreamReplicas int `env:"SUNDIAL_STREAM_REPLICAS"`
	// `debug`, `info`, `warn`, `error` (JSON logs on stderr, written in
	// batches of up to 50 ms, warnings and errors at once:
	// [docs/observability.md](docs/observability.md))
	LogLevel string `env:"SUNDIAL_LOG_LEVEL"`
	// a zip archive of a newer release of the IANA tz database than the
	// one built in, as Go's `lib/time/zoneinfo.zip`: wall times are then
	// resolved with it, and pending ones move to where its rules put them
	// ([docs/product.md](docs/product.md), "Local times and the tz
	// database"); set the same on the gateways and the schedulers
	TZDataFile string `env:"SUNDIAL_TZDATA_FILE"`
	// the release name of `SUNDIAL_TZDATA_FILE` (`2026a`), required with it
	TZDataVersion string `env:"SUNDIAL_TZDATA_VERSION"`
	// connection pool size
	DatabaseMaxConns int `env:"SUNDIAL_DATABASE_MAX_CONNS"`
	// how long the service waits at startup for the database's schema to
	// reach the migrations it needs (another pod's `gateway migrate` still
	// running) before it exits naming both versions; `0` checks once
	SchemaWait time.Duration `env:"SUNDIAL_SCHEMA_WAIT"`
	// admin listener, unauthenticated, on loopback unless set (the Kubernetes
	// manifests set `:9090`): `/healthz`, `/readyz`, `/metrics` (Prometheus)
	// ([docs/observability.md](docs/observability.md#metrics-health-and-readiness));
	// port 0 picks a free one
	AdminAddr string `env:"SUNDIAL_SCHEDULER_ADMIN_ADDR"`
	// how far ahead due hooks are loaded into memory and claimed just in time;
	// `0` turns that off (polling only, lateness up to the poll interval)
	PrefetchWindow time.Duration `env:"SUNDIAL_SCHEDULER_PREFETCH"`
	// interval between prefetch reads; above 0 and at most
	// `SUNDIAL_SCHEDULER_PREFETCH`
	PrefetchInterval time.Duration `env:"SUNDIAL_SCHEDULER_PREFETCH_INTERVAL"`
	// safety poll: wait after a claim of everything due that did not fill its
	// batch
	PollInterval time.Duration `env:"SUNDIAL_SCHEDULER_POLL_INTERVAL"`
	// hooks per claim, 1 to 10000
	ClaimBatchSize int `env:"SUNDIAL_SCHEDULER_BATCH_SIZE"`
	// how long before a hook is due its just-in-time claim may run, 0 to 2s
	// and below `SUNDIAL_SCHEDULER_PREFETCH`; the claim's hooks are published
	// at once, each DueHook carrying the hold a dispatcher waits out before
	// sending it (until the hook is due by the database clock), so neither the
	// claim's commit nor NATS adds to the delivery's lateness, and a hook
	// cancelled within this time of its due instant may still be delivered. A
	// claim starts when its first hook is within three quarters of this and
	// takes every hook within all of it, so claims gather hooks due close
	// together
	ClaimAhead time.Duration `env:"SUNDIAL_SCHEDULER_CLAIM_AHEAD"`
	// just-in-time claims running at once, 1 to 64: a hook that falls due
	// while another claim is slow (a busy database) does not wait for it; each
	// claim is one short transaction, so more claims in flight cost PostgreSQL
	// more commits; claims of hooks with an ordering key take all but one of
	// them at most, leaving one to the other hooks
	ClaimConcurrency int `env:"SUNDIAL_SCHEDULER_CLAIM_CONCURRENCY"`
	// at least 1s; **in production it must exceed the 10 s delivery limit**
	// (with room for queueing), or hooks still being delivered are re-driven
	// and delivered twice
	LeaseDuration time.Duration `env:"SUNDIAL_LEASE_DURATION"`
	// backpressure: while this many claimed hooks wait (all schedulers
	// together), in due messages no dispatcher has taken yet and in results
	// not yet applied, claiming pauses, so that under overload hooks wait
	// unclaimed in PostgreSQL instead of letting their leases expire in a
	// queue (which would deliver them twice); keep it below what the
	// deployment delivers within one lease; 0 turns the bound off
	MaxInFlight int `env:"SUNDIAL_SCHEDULER_MAX_IN_FLIGHT"`
	// how often one attempt is handed out again after its lease expired with
	// no result; the claim after that records the attempt as failed ("no
	// result after N deliveries") and the retry policy takes over, so a hook
	// whose delivery crashes dispatchers cannot loop forever
	MaxRedrives int `env:"SUNDIAL_SCHEDULER_MAX_REDRIVES"`
	// result messages being applied at once (and held unacknowledged by the
	// consumer), 1 to 10000; a dispatcher's `AttemptResults` batch is one
	// message
	ResultConcurrency int `env:"SUNDIAL_SCHEDULER_RESULT_CONCURRENCY"`
	// results applied in one transaction, 1 to 10000 (at most
	// `SUNDIAL_SCHEDULER_RESULT_CONCURRENCY` takes effect; 1: each on its own)
	ResultBatch int `env:"SUNDIAL_SCHEDULER_RESULT_BATCH"`
	// how long a batch of results waits after its first result for more, 0 to
	// 1s (0: apply what is waiting at once); no delivery waits for it, only a
	// hook's status, its alerts and a sequence's next steps
	ResultLinger time.Duration `env:"SUNDIAL_SCHEDULER_RESULT_LINGER"`
	// how often async waits that timed out are applied as failed attempts, a
	// batch (`SUNDIAL_SCHEDULER_BATCH_SIZE`) at a time; acks and nacks wake
	// the sweeper at once (`NOTIFY sundial_async`), so for them this is only
	// the fallback for a lost notification
	AsyncSweepInterval time.Duration `env:"SUNDIAL_SCHEDULER_ASYNC_SWEEP_INTERVAL"`
	// how often sequences with a due slot, trigger requests and step hooks
	// cancelled through the API are looked for, 10ms to 1m; a pass that finds
	// more than its batches take goes on at once. It bounds how late a slot's
	// run starts
	SequenceInterval time.Duration `env:"SUNDIAL_SCHEDULER_SEQUENCE_INTERVAL"`
	// how long in-flight work may finish after SIGTERM
	ShutdownTimeout time.Duration `env:"SUNDIAL_SHUTDOWN_TIMEOUT"`
	// failures in a row (no answer, 429, 5xx) to one project's domain that
	// open its circuit breaker, at least 1; while it is open the domain's due
	// hooks are moved to the pause's end without being leased (no attempt
	// spent)
	BreakerFailures int `env:"SUNDIAL_SCHEDULER_BREAKER_FAILURES"`
	// how long the run of failures must last before it opens the breaker, so
	// that one instant's burst of failures (a network blip under many
	// deliveries) does not
	BreakerSpan time.Duration `env:"SUNDIAL_SCHEDULER_BREAKER_SPAN"`
	// first pause of an opened breaker (at least 1s); then one probe delivery
	// decides
	BreakerCooldown time.Duration `env:"SUNDIAL_SCHEDULER_BREAKER_COOLDOWN"`
	// each failed probe of one pause doubles it, up to this
	BreakerMaxCooldown time.Duration `env:"SUNDIAL_SCHEDULER_BREAKER_MAX_COOLDOWN"`
	// wait between passes of the retention cleaner
	// ([docs/operations.md](docs/operations.md), "Retention"); `0` turns it
	// off
	RetentionInterval time.Duration `env:"SUNDIAL_SCHEDULER_RETENTION_INTERVAL"`
	// hooks one delete (one transaction) takes, with their attempts, 1 to
	// 10000
	RetentionBatch int `env:"SUNDIAL_SCHEDULER_RETENTION_BATCH"`
	// deletes per pass, 1 to 1000; a pass that reached it is followed by the
	// next after the pause
	RetentionMaxBatches int `env:"SUNDIAL_SCHEDULER_RETENTION_MAX_BATCHES"`
	// wait between two deletes, 0 to 10s: what leaves the database to
	// deliveries while a backlog drains
	RetentionPause time.Duration `env:"SUNDIAL_SCHEDULER_RETENTION_PAUSE"`
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
		SchemaWait:         postgres.DefaultSchemaWait,
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
	tzErr := calendar.CheckSetting(c.TZDataFile, c.TZDataVersion)
	ch.That(tzErr == nil, "%v", tzErr)
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
	schemaWaitErr := postgres.CheckSchemaWait(c.SchemaWait)
	ch.That(schemaWaitErr == nil, "%v", schemaWaitErr)
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
