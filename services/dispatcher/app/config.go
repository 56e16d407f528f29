package app

import (
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/sundial-run/sundial/pkg/adminhttp"
	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/egress"
	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/pkg/signing"
	"github.com/sundial-run/sundial/pkg/telemetry"
	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
	"github.com/sundial-run/sundial/services/dispatcher/internal/report"
)

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
	AdminAddr string `env:"SUNDIAL_DISPATCHER_ADMIN_ADDR"`
	// prefix of every Sundial-named header (the API's quota headers, the
	// delivery headers, and the signature headers of custom-webhook channels),
	// for receivers written for the hosted service's names
	HeaderPrefix string `env:"SUNDIAL_HEADER_PREFIX"`
	// the gateway's address as receivers and people reach it (no `/v1`): the
	// async ack and nack URLs sent with every delivery are built on it, and
	// the links in alerts; `make run` sets it to its gateway
	PublicURL string `env:"SUNDIAL_PUBLIC_URL"`
	// deliveries handled at once per process, whatever the `DueHooks` batches
	// (of up to 64 hooks) their hooks came in, each until its exchange is
	// over; a delivery that has waited 250 ms on its receiver (and 4 x the
	// median of the recent answered ones) gives its slot to a waiting hook and
	// moves to a slow room of 8 x this many; while hooks wait for a slot and
	// the median answered exchange stays near its least, up to this many more
	// slots open, taken from the slow room, and close again when it rises
	// ([docs/benchmarks.md](docs/benchmarks.md), "Real receivers"); a
	// project holds at most this many and the slow room less a quarter of
	// this many in flight, divided among the projects delivering, and its
	// hooks beyond are deferred; as many results again may wait for their
	// batch. Due messages in hand: this many, plus up to 8 x this many whose
	// hooks are all being delivered
	Concurrency int `env:"SUNDIAL_DISPATCHER_CONCURRENCY"`
	// ceiling on deliveries in flight per process to one destination
	// host:port, all projects together; under it each project's limit on the
	// host adapts to the receiver (starts at 16, grows while the median answer
	// is fast, halves on connection errors, 429 and 503, and on timeouts once
	// most deliveries time out, leaving out those on other paths than the
	// last answer's within 2 min of it; a slow or hanging path's requests are
	// parked off the limit), projects share a host at the ceiling fairly, and a hook
	// over its limit is deferred (due again in 50 ms to 5 s) without counting
	// an attempt
	HostConcurrency int `env:"SUNDIAL_DISPATCHER_HOST_CONCURRENCY"`
	// limit of the whole HTTP exchange (at most 15 s)
	DeliveryTimeout time.Duration `env:"SUNDIAL_DELIVERY_TIMEOUT"`
	// `true` lets deliveries and notification channels reach loopback and
	// private addresses (development, tests)
	AllowPrivate bool `env:"SUNDIAL_DELIVERY_ALLOW_PRIVATE"`
	// AllowCIDRs are networks deliveries may reach even though they are
	// internal (SUNDIAL_DELIVERY_ALLOW_CIDRS, comma-separated CIDRs; a bare
	// address means just that address; default none).
	AllowCIDRs []netip.Prefix
	// PEM file of CA certificates trusted besides the system's
	CAFile string `env:"SUNDIAL_DELIVERY_CA_FILE"`
	// how much of a response body is kept with the attempt
	ResponseExcerptBytes int `env:"SUNDIAL_RESPONSE_EXCERPT_BYTES"`
	// new connections (TLS handshakes) per second per process to one
	// destination host:port, after a first burst of
	// `SUNDIAL_DISPATCHER_HOST_CONCURRENCY`; a delivery that would wait over 1
	// s for one is deferred unsent (1 to 10,000;
	// [docs/security.md](docs/security.md), "One response, one delivery")
	HostConnectRate int `env:"SUNDIAL_DISPATCHER_HOST_CONNECT_RATE"`
	// how long a project's signing keys are cached
	KeyCacheTTL time.Duration `env:"SUNDIAL_DISPATCHER_KEY_CACHE_TTL"`
	// how long a batch of results waits for more after its first (a delivery
	// never waits for it: its slot is freed when its exchange is over; a
	// hook's status does)
	ResultLinger time.Duration `env:"SUNDIAL_DISPATCHER_RESULT_LINGER"`
	// how long in-flight work may finish after SIGTERM
	ShutdownTimeout time.Duration `env:"SUNDIAL_SHUTDOWN_TIMEOUT"`
	// the keys that seal signing keys, Authorization values, async secrets and
	// channel settings in PostgreSQL: `id:base64key[,id:base64key...]`, 32
	// random bytes each (`echo "k1:$(openssl rand -base64 32)"`); the first
	// seals, every one opens; the same list on every service; rotation in
	// [docs/security.md](docs/security.md#secrets-at-rest); `make run` makes
	// one and keeps it in `.data/secret-keys`
	SecretKeys string `env:"SUNDIAL_SECRET_KEYS"` // a secret: never logged
}

// DefaultHostConcurrency is HostConcurrency's default: a ceiling, not a
// target; the adaptive limit stays below it for a receiver that cannot
// keep up. Parked deliveries (a domain's slow and hanging paths) count
// against it: a domain taking 2,000 hooks a second with a few percent of
// its paths answering in seconds or not at all has several hundred in
// flight.
const DefaultHostConcurrency = 1024

// DefaultPublicURL is the gateway's default address (SUNDIAL_HTTP_ADDR :8080)
// as this machine reaches it.
const DefaultPublicURL = "http://127.0.0.1:8080"

// DefaultAdminAddr is AdminAddr's default.
const DefaultAdminAddr = "127.0.0.1:9092"

// ResultBatch bounds the attempt results one AttemptResults message
// carries (besides about 512 KiB of them: package report). A batch is what
// its linger (ResultLinger) gathers, so in a steady flow it holds far
// fewer; a burst fills it.
const ResultBatch = 256

// Limits checked by Validate.
const (
	maxDeliveryTimeout = 15 * time.Second
	maxExcerptBytes    = 64 << 10
	maxKeyCacheTTL     = 5 * time.Minute
	maxConcurrency     = 10000
	maxConnectRate     = 10000
)

// defaultConfig is the Config with no variable set.
func defaultConfig() Config {
	return Config{
		DatabaseURL:          postgres.DefaultURL,
		NATSURL:              bus.DefaultURL,
		StreamReplicas:       event.DefaultReplicas,
		LogLevel:             "info",
		AdminAddr:            DefaultAdminAddr,
		HeaderPrefix:         signing.DefaultHeaderPrefix,
		PublicURL:            DefaultPublicURL,
		Concurrency:          128,
		HostConcurrency:      DefaultHostConcurrency,
		DeliveryTimeout:      10 * time.Second,
		ResponseExcerptBytes: 1024,
		HostConnectRate:      delivery.DefaultConnectRate,
		KeyCacheTTL:          5 * time.Second,
		ResultLinger:         10 * time.Millisecond,
		DatabaseMaxConns:     8,
		SchemaWait:           postgres.DefaultSchemaWait,
		ShutdownTimeout:      15 * time.Second,
	}
}

// fromEnv is what ConfigFromEnv reads: the Config, and the networks of
// SUNDIAL_DELIVERY_ALLOW_CIDRS as written, which egress.ParseAllowList
// turns into its AllowCIDRs.
type fromEnv struct {
	Config
	// comma-separated CIDRs allowed although private
	AllowList []string `env:"SUNDIAL_DELIVERY_ALLOW_CIDRS"`
}

// ConfigFromEnv reads the Config from lookup (nil: the process environment)
// and validates it; the error lists every problem found.
func ConfigFromEnv(lookup envconf.Lookup) (Config, error) {
	env := fromEnv{Config: defaultConfig()}
	err := envconf.Load(lookup, &env)
	cfg := env.Config
	cidrs, cidrErr := egress.ParseAllowList(env.AllowList)
	cfg.AllowCIDRs = cidrs
	// A value that failed to parse was replaced by its default, so Validate
	// still judges the rest and the operator sees every mistake at once.
	return cfg, errors.Join(err, cidrErr, cfg.Validate())
}

// Validate reports every value out of range.
func (c Config) Validate() error {
	var v envconf.Check
	v.That(c.DatabaseURL != "", "SUNDIAL_DATABASE_URL: must not be empty")
	v.That(c.NATSURL != "", "SUNDIAL_NATS_URL: must not be empty")
	replicasErr := event.CheckReplicas(c.StreamReplicas)
	v.That(replicasErr == nil, "%v", replicasErr)
	if err := telemetry.ParseLevel(c.LogLevel); err != nil {
		v.That(false, "SUNDIAL_LOG_LEVEL: %v", err)
	}
	if err := adminhttp.CheckAddr(c.AdminAddr); err != nil {
		v.That(false, "SUNDIAL_DISPATCHER_ADMIN_ADDR=%q: %v", c.AdminAddr, err)
	}
	v.That(signing.ValidHeaderPrefix(c.HeaderPrefix), "SUNDIAL_HEADER_PREFIX=%q: want letters, digits and dashes, starting with a letter", c.HeaderPrefix)
	v.That(validPublicURL(c.PublicURL), "SUNDIAL_PUBLIC_URL=%q: want an absolute http or https URL without query or fragment, e.g. https://sundial.example.com", c.PublicURL)
	v.That(c.Concurrency >= 1 && c.Concurrency <= maxConcurrency, "SUNDIAL_DISPATCHER_CONCURRENCY=%d: want 1 to %d", c.Concurrency, maxConcurrency)
	v.That(c.HostConcurrency >= 1 && c.HostConcurrency <= maxConcurrency, "SUNDIAL_DISPATCHER_HOST_CONCURRENCY=%d: want 1 to %d", c.HostConcurrency, maxConcurrency)
	v.That(c.DeliveryTimeout > 0 && c.DeliveryTimeout <= maxDeliveryTimeout, "SUNDIAL_DELIVERY_TIMEOUT=%s: want more than 0 and at most %s", c.DeliveryTimeout, maxDeliveryTimeout)
	v.That(c.ResponseExcerptBytes >= 0 && c.ResponseExcerptBytes <= maxExcerptBytes, "SUNDIAL_RESPONSE_EXCERPT_BYTES=%d: want 0 to %d", c.ResponseExcerptBytes, maxExcerptBytes)
	v.That(c.HostConnectRate >= 1 && c.HostConnectRate <= maxConnectRate, "SUNDIAL_DISPATCHER_HOST_CONNECT_RATE=%d: want 1 to %d", c.HostConnectRate, maxConnectRate)
	v.That(c.KeyCacheTTL >= 0 && c.KeyCacheTTL <= maxKeyCacheTTL, "SUNDIAL_DISPATCHER_KEY_CACHE_TTL=%s: want 0 to %s", c.KeyCacheTTL, maxKeyCacheTTL)
	v.That(c.ResultLinger >= 0 && c.ResultLinger <= report.MaxLinger, "SUNDIAL_DISPATCHER_RESULT_LINGER=%s: want 0 to %s", c.ResultLinger, report.MaxLinger)
	schemaWaitErr := postgres.CheckSchemaWait(c.SchemaWait)
	v.That(schemaWaitErr == nil, "%v", schemaWaitErr)
	v.That(c.DatabaseMaxConns >= 1, "SUNDIAL_DATABASE_MAX_CONNS=%d: want at least 1", c.DatabaseMaxConns)
	v.That(c.ShutdownTimeout > 0, "SUNDIAL_SHUTDOWN_TIMEOUT=%s: want more than 0", c.ShutdownTimeout)
	secretsErr := secretbox.CheckEnv(c.SecretKeys)
	v.That(secretsErr == nil, "%v", secretsErr)
	for _, p := range c.AllowCIDRs {
		v.That(p.IsValid(), "SUNDIAL_DELIVERY_ALLOW_CIDRS: invalid network %s", p)
	}
	return v.Err()
}

// validPublicURL accepts the base of the ack and nack URLs: receivers POST
// to it, so it must be absolute; a query or fragment would end up in the
// middle of the URLs.
func validPublicURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" &&
		u.User == nil && u.RawQuery == "" && u.Fragment == "" && !strings.HasSuffix(u.Path, "/v1")
}
