// Package app assembles the gateway, Sundial's REST API: its configuration,
// the HTTP server and its dependencies, and the administrative operations
// (creating a project) that the command line and end-to-end tests use.
package app

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/sundial-run/sundial/pkg/adminhttp"
	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/calendar"
	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/pkg/signing"
	"github.com/sundial-run/sundial/pkg/telemetry"
	"github.com/sundial-run/sundial/services/gateway/internal/account"
	"github.com/sundial-run/sundial/services/gateway/internal/auththrottle"
	"github.com/sundial-run/sundial/services/gateway/internal/hook"
	"github.com/sundial-run/sundial/services/gateway/internal/keycache"
	"github.com/sundial-run/sundial/services/gateway/internal/listen"
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
	// listen address of the REST API
	HTTPAddr string `env:"SUNDIAL_HTTP_ADDR"`
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
	// admin listener, unauthenticated, on loopback unless set (the Kubernetes
	// manifests set `:9090`): `/healthz`, `/readyz`, `/metrics` (Prometheus)
	// ([docs/observability.md](docs/observability.md#metrics-health-and-readiness));
	// port 0 picks a free one
	AdminAddr string `env:"SUNDIAL_GATEWAY_ADMIN_ADDR"`
	// connection pool size
	DatabaseMaxConns int `env:"SUNDIAL_DATABASE_MAX_CONNS"`
	// how long the service waits at startup for the database's schema to
	// reach the migrations it needs (another pod's `gateway migrate` still
	// running) before it exits naming both versions; `0` checks once
	SchemaWait time.Duration `env:"SUNDIAL_SCHEMA_WAIT"`
	// prefix of every Sundial-named header (the API's quota headers, the
	// delivery headers, and the signature headers of custom-webhook channels),
	// for receivers written for the hosted service's names
	HeaderPrefix string `env:"SUNDIAL_HEADER_PREFIX"`
	// largest `data` payload as stored and sent (compacted JSON as PostgreSQL
	// gives it back: a space after each comma and colon, numbers written out);
	// larger is 413 naming `data`. Lowered at start-up to NATS `max_payload`
	// minus 16 KiB when that is less (1,032,192 with nats-server's default),
	// and logged ([docs/security.md](docs/security.md), "Sizes agree end to
	// end")
	MaxDataBytes int `env:"SUNDIAL_MAX_DATA_BYTES"`
	// how long in-flight work may finish after SIGTERM
	ShutdownTimeout time.Duration `env:"SUNDIAL_SHUTDOWN_TIMEOUT"`
	// most hook creates committed in one transaction (group commit of
	// concurrent `POST /v1/hooks`; 0: each on its own)
	CreateBatch int `env:"SUNDIAL_GATEWAY_CREATE_BATCH"`
	// how long a batch of creates waits for more, only while other creates are
	// in flight
	CreateLinger time.Duration `env:"SUNDIAL_GATEWAY_CREATE_LINGER"`
	// create batches committing at once (at most `SUNDIAL_DATABASE_MAX_CONNS`)
	CreateInFlight int `env:"SUNDIAL_GATEWAY_CREATE_IN_FLIGHT"`
	// how long a valid API key is remembered, so that its requests skip the
	// key's look-up (0 turns the cache off; at most `10s`). A key revoked
	// through this gateway is refused at once; one revoked through another
	// replica or in the database, and a change of the project's rate limit,
	// take up to this long to reach it
	KeyCacheTTL time.Duration `env:"SUNDIAL_GATEWAY_KEY_CACHE_TTL"`
	// client connections open at once, at most three quarters of the open file
	// limit; at the cap a new connection closes the one idle the longest
	MaxConnections int `env:"SUNDIAL_GATEWAY_MAX_CONNECTIONS"`
	// bytes of request bodies and hook list pages held at once (32 MiB: two
	// maximum batches); a body that does not fit is refused unread with 503
	// and `Retry-After` (one alone is always admitted), a page ends sooner,
	// its cursor continuing it (1 MiB to 64 GiB)
	BodyBytesInFlight int `env:"SUNDIAL_GATEWAY_BODY_BYTES_IN_FLIGHT"`
	// how long a keep-alive connection may wait for its next request (1s to
	// 10m)
	IdleTimeout time.Duration `env:"SUNDIAL_GATEWAY_IDLE_TIMEOUT"`
	// `true` runs no bulk jobs on this gateway, leaving them to the other
	// gateways (a job waits while none runs them); unset or `false`, it runs
	// them
	NoBulkJobs bool `env:"SUNDIAL_GATEWAY_NO_BULK_JOBS"`
	// failed authentications a client address may have in a minute before it
	// gets 429 until the minute ends (0 turns the throttle off)
	AuthFailuresPerMinute int `env:"SUNDIAL_GATEWAY_AUTH_FAILURES_PER_MINUTE"`
	// comma-separated CIDRs of reverse proxies whose `X-Forwarded-For` names
	// the client (for the throttle above); unset, the connection's peer is the
	// client
	TrustedProxies []string `env:"SUNDIAL_GATEWAY_TRUSTED_PROXIES"`
	// the keys that seal signing keys, Authorization values, async secrets and
	// channel settings in PostgreSQL: `id:base64key[,id:base64key...]`, 32
	// random bytes each (`echo "k1:$(openssl rand -base64 32)"`); the first
	// seals, every one opens; the same list on every service; rotation in
	// [docs/security.md](docs/security.md#secrets-at-rest); `make run` makes
	// one and keeps it in `.data/secret-keys`
	SecretKeys string `env:"SUNDIAL_SECRET_KEYS"` // a secret: never logged
	// the gateway's address as clients reach it (no `/v1`), as the
	// dispatcher's: the WebSocket address of a listener ticket (`POST
	// /v1/ws/ticket`) is built on it, `ws` for `http` and `wss` for `https`;
	// unset, the address the ticket request was sent to. Also the base of the
	// set-password links `gateway admin create-user` prints (relative when
	// unset), and `https` marks the dashboard's session cookie `Secure`
	PublicURL string `env:"SUNDIAL_PUBLIC_URL"`
	// how long a project's hooks are held, not attempted, after its last
	// listener (`sundial listen`) disconnected, to be delivered to it when it
	// reconnects (1s to 24h; [docs/listener.md](docs/listener.md))
	ListenerResumeWindow time.Duration `env:"SUNDIAL_LISTENER_RESUME_WINDOW"`
	// listener sockets (`sundial listen`) one gateway holds, of every project;
	// counted among its connections and at most half of
	// `SUNDIAL_GATEWAY_MAX_CONNECTIONS`; a socket over it is closed at once
	// with 1013
	ListenerMaxSockets int `env:"SUNDIAL_GATEWAY_LISTENER_MAX_SOCKETS"`
	// listener sockets one project may hold on one gateway (1 to
	// `SUNDIAL_GATEWAY_LISTENER_MAX_SOCKETS`); a socket over it is closed at
	// once with 1013
	ListenerMaxProjectSockets int `env:"SUNDIAL_GATEWAY_LISTENER_MAX_SOCKETS_PER_PROJECT"`

	// ListenerIntervals are the listener protocol's timings (pings,
	// silence, key checks, presence heartbeat, ack timeout); zero fields
	// take the documented defaults. Not read from the environment: for
	// tests and embedders that need them short.
	ListenerIntervals listen.Intervals

	// Dashboard are the dashboard's session, link and sign-in throttle
	// timings (docs/dashboard.md); zero fields take the documented
	// defaults. Not read from the environment: for tests that need them
	// short.
	Dashboard account.Config
}

// Defaults.
const (
	DefaultDatabaseURL      = postgres.DefaultURL
	DefaultNATSURL          = bus.DefaultURL
	DefaultHTTPAddr         = ":8080"
	DefaultLogLevel         = "info"
	DefaultAdminAddr        = "127.0.0.1:9090"
	DefaultHeaderPrefix     = signing.DefaultHeaderPrefix
	DefaultMaxDataBytes     = 1 << 20
	DefaultShutdownTimeout  = 15 * time.Second
	DefaultDatabaseMaxConns = 16
	DefaultCreateBatch      = 256
	DefaultCreateLinger     = time.Millisecond
	DefaultCreateInFlight   = 1
	DefaultKeyCacheTTL      = time.Second
	DefaultMaxConnections   = 10_000
	// Two maximum batches: a body costs the gateway several times its
	// size while it is decoded and stored.
	DefaultBodyBytesInFlight = 32 << 20
	DefaultIdleTimeout       = 60 * time.Second
	DefaultAuthFailures      = auththrottle.DefaultFailures
	DefaultResumeWindow      = 15 * time.Minute
	// An open socket costs the gateway tens of KiB: 1,000 fit in the
	// memory limit the Helm chart gives it (docs/operations.md, "Scaling each
	// service").
	DefaultListenerMaxSockets        = 1_000
	DefaultListenerMaxProjectSockets = 20
)

// Upper bounds that catch a misplaced digit.
const (
	maxDataBytesLimit     = 64 << 20
	maxShutdownTimeout    = 10 * time.Minute
	maxDatabaseMaxConns   = 1000
	maxHeaderPrefixLength = 64
	maxMaxConnections     = 1_000_000
	minBodyBytesInFlight  = 1 << 20
	maxBodyBytesInFlight  = 64 << 30
	maxIdleTimeout        = 10 * time.Minute
	maxAuthFailures       = 100_000
	maxResumeWindow       = 24 * time.Hour
)

// headerToken is what an HTTP header name may be made of (RFC 9110 tchar).
var headerToken = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// defaultConfig is the Config with no variable set.
func defaultConfig() Config {
	return Config{
		DatabaseURL:               DefaultDatabaseURL,
		NATSURL:                   DefaultNATSURL,
		StreamReplicas:            event.DefaultReplicas,
		HTTPAddr:                  DefaultHTTPAddr,
		LogLevel:                  DefaultLogLevel,
		AdminAddr:                 DefaultAdminAddr,
		HeaderPrefix:              DefaultHeaderPrefix,
		MaxDataBytes:              DefaultMaxDataBytes,
		ShutdownTimeout:           DefaultShutdownTimeout,
		DatabaseMaxConns:          DefaultDatabaseMaxConns,
		SchemaWait:                postgres.DefaultSchemaWait,
		CreateBatch:               DefaultCreateBatch,
		CreateLinger:              DefaultCreateLinger,
		CreateInFlight:            DefaultCreateInFlight,
		KeyCacheTTL:               DefaultKeyCacheTTL,
		BodyBytesInFlight:         DefaultBodyBytesInFlight,
		MaxConnections:            DefaultMaxConnections,
		IdleTimeout:               DefaultIdleTimeout,
		AuthFailuresPerMinute:     DefaultAuthFailures,
		ListenerResumeWindow:      DefaultResumeWindow,
		ListenerMaxSockets:        DefaultListenerMaxSockets,
		ListenerMaxProjectSockets: DefaultListenerMaxProjectSockets,
	}
}

// MigrateConfig is what `gateway migrate` reads: the database alone, so
// that it runs where none of the gateway's other settings are, as the
// init container of every service's pod (charts/sundial).
type MigrateConfig struct {
	DatabaseURL string `env:"SUNDIAL_DATABASE_URL"`
}

// MigrateConfigFromEnv reads MigrateConfig from lookup (the process
// environment when nil).
func MigrateConfigFromEnv(lookup envconf.Lookup) (MigrateConfig, error) {
	cfg := MigrateConfig{DatabaseURL: DefaultDatabaseURL}
	err := envconf.Load(lookup, &cfg)
	if err == nil && cfg.DatabaseURL == "" {
		err = errors.New("SUNDIAL_DATABASE_URL: must not be empty")
	}
	return cfg, err
}

// ConfigFromEnv reads the configuration from lookup (the process
// environment when nil) and validates it, reporting every problem at once.
func ConfigFromEnv(lookup envconf.Lookup) (Config, error) {
	cfg := defaultConfig()
	err := envconf.Load(lookup, &cfg)
	// A variable that failed to parse keeps its default, so Validate reports
	// only the other problems, and the two lists do not overlap.
	return cfg, errors.Join(err, cfg.Validate())
}

// Validate reports every invalid field.
func (c Config) Validate() error {
	var check envconf.Check
	check.That(c.DatabaseURL != "", "SUNDIAL_DATABASE_URL: must not be empty")
	tzErr := calendar.CheckSetting(c.TZDataFile, c.TZDataVersion)
	check.That(tzErr == nil, "%v", tzErr)
	check.That(c.NATSURL != "", "SUNDIAL_NATS_URL: must not be empty")
	replicasErr := event.CheckReplicas(c.StreamReplicas)
	check.That(replicasErr == nil, "%v", replicasErr)
	_, _, err := net.SplitHostPort(c.HTTPAddr)
	check.That(err == nil, "SUNDIAL_HTTP_ADDR=%q: want host:port, e.g. :8080", c.HTTPAddr)
	adminErr := adminhttp.CheckAddr(c.AdminAddr)
	check.That(adminErr == nil, "SUNDIAL_GATEWAY_ADMIN_ADDR=%q: %v", c.AdminAddr, adminErr)
	check.That(telemetry.ParseLevel(c.LogLevel) == nil, "SUNDIAL_LOG_LEVEL=%q: want debug, info, warn or error", c.LogLevel)
	check.That(len(c.HeaderPrefix) <= maxHeaderPrefixLength && headerToken.MatchString(c.HeaderPrefix),
		"SUNDIAL_HEADER_PREFIX=%q: want letters, digits and hyphens (a header name), at most %d characters", c.HeaderPrefix, maxHeaderPrefixLength)
	check.That(c.MaxDataBytes >= 1 && c.MaxDataBytes <= maxDataBytesLimit,
		"SUNDIAL_MAX_DATA_BYTES=%d: want 1 to %d", c.MaxDataBytes, maxDataBytesLimit)
	check.That(c.ShutdownTimeout > 0 && c.ShutdownTimeout <= maxShutdownTimeout,
		"SUNDIAL_SHUTDOWN_TIMEOUT=%s: want more than 0 and at most %s", c.ShutdownTimeout, maxShutdownTimeout)
	schemaWaitErr := postgres.CheckSchemaWait(c.SchemaWait)
	check.That(schemaWaitErr == nil, "%v", schemaWaitErr)
	check.That(c.DatabaseMaxConns >= 1 && c.DatabaseMaxConns <= maxDatabaseMaxConns,
		"SUNDIAL_DATABASE_MAX_CONNS=%d: want 1 to %d", c.DatabaseMaxConns, maxDatabaseMaxConns)
	check.That(c.CreateBatch >= 0 && c.CreateBatch <= hook.MaxBatchSize,
		"SUNDIAL_GATEWAY_CREATE_BATCH=%d: want 0 (no batching) to %d", c.CreateBatch, hook.MaxBatchSize)
	check.That(c.CreateLinger >= 0 && c.CreateLinger <= hook.MaxLinger,
		"SUNDIAL_GATEWAY_CREATE_LINGER=%s: want 0 to %s", c.CreateLinger, hook.MaxLinger)
	check.That(c.KeyCacheTTL >= 0 && c.KeyCacheTTL <= keycache.MaxTTL,
		"SUNDIAL_GATEWAY_KEY_CACHE_TTL=%s: want 0 (no cache) to %s", c.KeyCacheTTL, keycache.MaxTTL)
	check.That(c.BodyBytesInFlight >= minBodyBytesInFlight && c.BodyBytesInFlight <= maxBodyBytesInFlight,
		"SUNDIAL_GATEWAY_BODY_BYTES_IN_FLIGHT=%d: want %d to %d", c.BodyBytesInFlight, minBodyBytesInFlight, maxBodyBytesInFlight)
	check.That(c.MaxConnections >= 1 && c.MaxConnections <= maxMaxConnections,
		"SUNDIAL_GATEWAY_MAX_CONNECTIONS=%d: want 1 to %d", c.MaxConnections, maxMaxConnections)
	check.That(c.IdleTimeout >= time.Second && c.IdleTimeout <= maxIdleTimeout,
		"SUNDIAL_GATEWAY_IDLE_TIMEOUT=%s: want 1s to %s", c.IdleTimeout, maxIdleTimeout)
	check.That(c.AuthFailuresPerMinute >= 0 && c.AuthFailuresPerMinute <= maxAuthFailures,
		"SUNDIAL_GATEWAY_AUTH_FAILURES_PER_MINUTE=%d: want 0 (no throttle) to %d", c.AuthFailuresPerMinute, maxAuthFailures)
	_, err = c.trustedProxies()
	check.That(err == nil, "SUNDIAL_GATEWAY_TRUSTED_PROXIES: %v", err)
	check.That(c.PublicURL == "" || validPublicURL(c.PublicURL),
		"SUNDIAL_PUBLIC_URL=%q: want an absolute http or https URL without query or fragment, e.g. https://sundial.example.com", c.PublicURL)
	check.That(c.ListenerResumeWindow >= time.Second && c.ListenerResumeWindow <= maxResumeWindow,
		"SUNDIAL_LISTENER_RESUME_WINDOW=%s: want 1s to %s", c.ListenerResumeWindow, maxResumeWindow)
	check.That(c.ListenerMaxSockets >= 1 && c.ListenerMaxSockets <= c.MaxConnections/2,
		"SUNDIAL_GATEWAY_LISTENER_MAX_SOCKETS=%d: want 1 to half SUNDIAL_GATEWAY_MAX_CONNECTIONS (%d)", c.ListenerMaxSockets, c.MaxConnections/2)
	check.That(c.ListenerMaxProjectSockets >= 1 && c.ListenerMaxProjectSockets <= c.ListenerMaxSockets,
		"SUNDIAL_GATEWAY_LISTENER_MAX_SOCKETS_PER_PROJECT=%d: want 1 to SUNDIAL_GATEWAY_LISTENER_MAX_SOCKETS (%d)",
		c.ListenerMaxProjectSockets, c.ListenerMaxSockets)
	secretsErr := secretbox.CheckEnv(c.SecretKeys)
	check.That(secretsErr == nil, "%v", secretsErr)
	if c.CreateBatch > 0 {
		check.That(c.CreateInFlight >= 1 && c.CreateInFlight <= c.DatabaseMaxConns,
			"SUNDIAL_GATEWAY_CREATE_IN_FLIGHT=%d: want 1 to SUNDIAL_DATABASE_MAX_CONNS (%d) while creates are batched",
			c.CreateInFlight, c.DatabaseMaxConns)
	}
	return check.Err()
}

// validPublicURL accepts the gateway's public address: http or https,
// a host, no credentials, query or fragment, and not the API's root.
func validPublicURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" &&
		u.User == nil && u.RawQuery == "" && u.Fragment == "" && !strings.HasSuffix(u.Path, "/v1")
}

// trustedProxies parses TrustedProxies; a bare address is its own /32 or
// /128.
func (c Config) trustedProxies() ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(c.TrustedProxies))
	for _, s := range c.TrustedProxies {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, fmt.Errorf("%q: want a CIDR such as 10.0.0.0/8, or an address", s)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
