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
	// DatabaseURL locates PostgreSQL (SUNDIAL_DATABASE_URL, default
	// postgres://postgres@127.0.0.1:5432/sundial?sslmode=disable).
	DatabaseURL string `env:"SUNDIAL_DATABASE_URL"`
	// NATSURL locates NATS (SUNDIAL_NATS_URL, default nats://127.0.0.1:4222).
	NATSURL string `env:"SUNDIAL_NATS_URL"`
	// StreamReplicas is how many servers of a JetStream cluster keep each
	// stream and durable consumer (SUNDIAL_STREAM_REPLICAS, default 1, at
	// most 5; every service must be given the same value:
	// docs/operations.md, "Streams and consumers").
	StreamReplicas int `env:"SUNDIAL_STREAM_REPLICAS"`
	// LogLevel is debug, info, warn or error (SUNDIAL_LOG_LEVEL, default info).
	LogLevel string `env:"SUNDIAL_LOG_LEVEL"`
	// AdminAddr is the admin listener's address: /healthz, /readyz and
	// /metrics (docs/observability.md). SUNDIAL_DISPATCHER_ADMIN_ADDR, default
	// 127.0.0.1:9092, this machine only: an operator exposes it, e.g. :9092 in
	// a pod; port 0 picks a free one (App.AdminAddr).
	AdminAddr string `env:"SUNDIAL_DISPATCHER_ADMIN_ADDR"`
	// HeaderPrefix names the delivery headers: <Prefix>-Signature,
	// X-<Prefix>-Signature, <Prefix>-Id, ... (SUNDIAL_HEADER_PREFIX, default
	// Sundial).
	HeaderPrefix string `env:"SUNDIAL_HEADER_PREFIX"`
	// PublicURL is the deployment's public base URL: the gateway's address
	// as receivers reach it, scheme and host (and a path prefix if a proxy
	// adds one), without /v1. The ack and nack URLs sent with every delivery
	// are built on it (SUNDIAL_PUBLIC_URL, default http://127.0.0.1:8080, the
	// gateway's default address on this machine; set it in production).
	PublicURL string `env:"SUNDIAL_PUBLIC_URL"`
	// Concurrency bounds the deliveries this replica handles at once,
	// whatever the DueHooks batches their hooks came in, each from its
	// DueHook until its exchange is over or, having waited 250 ms on its
	// receiver, it moves to the slow room (4 x Concurrency) to let a
	// waiting hook have its slot; as many results again may wait for their
	// batch (ResultLinger and the publish) without a slot. It also bounds
	// the due messages in hand: Concurrency batches (of up to
	// 64 hooks) waiting for delivery slots, plus
	// up to the slow room's size of messages whose hooks are all being
	// delivered (SUNDIAL_DISPATCHER_CONCURRENCY, default 128).
	Concurrency int `env:"SUNDIAL_DISPATCHER_CONCURRENCY"`
	// HostConcurrency is the ceiling on this replica's deliveries in flight
	// to one destination host (host:port), all projects together. Under it
	// each project's deliveries to the host follow a limit that adapts to
	// the receiver (starting at 16, growing while its median answer is
	// quick, halving on connection errors, 429 and 503, and on timeouts
	// once most deliveries time out), and projects
	// contending for a host at the ceiling get fair shares of it; a hook
	// that finds no slot is deferred, not counted as an attempt
	// (SUNDIAL_DISPATCHER_HOST_CONCURRENCY, default 1024; deliveries are also
	// bounded by SUNDIAL_DISPATCHER_CONCURRENCY).
	HostConcurrency int `env:"SUNDIAL_DISPATCHER_HOST_CONCURRENCY"`
	// DeliveryTimeout bounds one delivery's whole exchange: connect, TLS,
	// request, response headers and the excerpt read
	// (SUNDIAL_DELIVERY_TIMEOUT, default 10s, at most 15s so that a delivery
	// and its result fit well inside the default 30 s lease).
	DeliveryTimeout time.Duration `env:"SUNDIAL_DELIVERY_TIMEOUT"`
	// AllowPrivate lets deliveries reach loopback, private, link-local and
	// other internal addresses: for development and tests only
	// (SUNDIAL_DELIVERY_ALLOW_PRIVATE, default false).
	AllowPrivate bool `env:"SUNDIAL_DELIVERY_ALLOW_PRIVATE"`
	// AllowCIDRs are networks deliveries may reach even though they are
	// internal (SUNDIAL_DELIVERY_ALLOW_CIDRS, comma-separated CIDRs; a bare
	// address means just that address; default none).
	AllowCIDRs []netip.Prefix
	// CAFile is a PEM file of CA certificates trusted for receivers in
	// addition to the system's (SUNDIAL_DELIVERY_CA_FILE, default none).
	CAFile string `env:"SUNDIAL_DELIVERY_CA_FILE"`
	// ResponseExcerptBytes is how much of a response body is kept with the
	// attempt (SUNDIAL_RESPONSE_EXCERPT_BYTES, default 1024, at most 65536).
	ResponseExcerptBytes int `env:"SUNDIAL_RESPONSE_EXCERPT_BYTES"`
	// HostConnectRate bounds the new connections (each a TCP connect and a
	// TLS handshake) this replica opens to one destination host per
	// second, once a first burst of HostConcurrency is spent: a receiver
	// that closes every connection costs at most this many handshakes a
	// second, and a delivery that would wait more than a second for one is
	// handed back unsent (SUNDIAL_DISPATCHER_HOST_CONNECT_RATE, default 50,
	// 1 to 10000; docs/security.md, "One response, one delivery").
	HostConnectRate int `env:"SUNDIAL_DISPATCHER_HOST_CONNECT_RATE"`
	// KeyCacheTTL is how long a project's signing keys and Authorization
	// value are cached: a rotation or revocation takes effect within it
	// (SUNDIAL_DISPATCHER_KEY_CACHE_TTL, default 5s, 0 disables the cache,
	// at most 5m).
	KeyCacheTTL time.Duration `env:"SUNDIAL_DISPATCHER_KEY_CACHE_TTL"`
	// ResultLinger is how long a batch of results waits, after its first,
	// for more (SUNDIAL_DISPATCHER_RESULT_LINGER, default 10ms, 0 to 1s). A
	// delivery frees its slot when its exchange is over, before its result
	// waits: the linger delays a hook's status by up to that, never a
	// delivery. In a steady flow of a few hundred hooks a second, a linger
	// of a couple of milliseconds sent nearly every result in a message of
	// its own (docs/benchmarks.md, "Results in batches").
	ResultLinger time.Duration `env:"SUNDIAL_DISPATCHER_RESULT_LINGER"`
	// DatabaseMaxConns bounds the PostgreSQL pool
	// (SUNDIAL_DATABASE_MAX_CONNS, default 8).
	DatabaseMaxConns int `env:"SUNDIAL_DATABASE_MAX_CONNS"`
	// ShutdownTimeout bounds how long in-flight deliveries may finish after
	// a shutdown signal before they are handed back
	// (SUNDIAL_SHUTDOWN_TIMEOUT, default 15s).
	ShutdownTimeout time.Duration `env:"SUNDIAL_SHUTDOWN_TIMEOUT"`
	// SecretKeys open the signing keys, Authorization values and async
	// secrets stored sealed in PostgreSQL (SUNDIAL_SECRET_KEYS, required,
	// the gateway's keyring: package secretbox). Never log it.
	SecretKeys string `env:"SUNDIAL_SECRET_KEYS"`
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
		ShutdownTimeout:      15 * time.Second,
	}
}

// fromEnv is what ConfigFromEnv reads: the Config, and the networks of
// SUNDIAL_DELIVERY_ALLOW_CIDRS as written, which egress.ParseAllowList
// turns into its AllowCIDRs.
type fromEnv struct {
	Config
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
