package app

import (
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/sundial-run/sundial/pkg/adminhttp"
	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/channelconfig"
	"github.com/sundial-run/sundial/pkg/egress"
	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/pkg/signing"
	"github.com/sundial-run/sundial/pkg/telemetry"
)

// Config is the whole configuration, read only from the environment.
type Config struct {
	// NATS with JetStream, `max_payload` at least 1 MiB (nats-server's
	// default; every service refuses to start below it); the gateway publishes
	// quota and channel-test alerts on it; several servers of a cluster
	// comma-separated
	NATSURL string `env:"SUNDIAL_NATS_URL"`
	// replicas of every stream and durable consumer, 1 to 5 (3 or 5 on a
	// JetStream cluster); the same on every service; see
	// [docs/operations.md](docs/operations.md)
	StreamReplicas int `env:"SUNDIAL_STREAM_REPLICAS"`
	// PostgreSQL; with a standby, name both servers and add
	// `target_session_attrs=read-write`
	// (`postgres://...@db1:5432,db2:5432/sundial?target_session_attrs=read-write`):
	// failover, backups and restore in
	// [docs/operations.md](docs/operations.md)
	DatabaseURL string `env:"SUNDIAL_DATABASE_URL"`
	// connection pool size
	DatabaseMaxConns int `env:"SUNDIAL_DATABASE_MAX_CONNS"`
	// how long the service waits at startup for the database's schema to
	// reach the migrations it needs (another pod's `gateway migrate` still
	// running) before it exits naming both versions; `0` checks once
	SchemaWait time.Duration `env:"SUNDIAL_SCHEMA_WAIT"`
	// `debug`, `info`, `warn`, `error` (JSON logs on stderr, written in
	// batches of up to 50 ms, warnings and errors at once:
	// [docs/observability.md](docs/observability.md))
	LogLevel string `env:"SUNDIAL_LOG_LEVEL"`
	// admin listener, unauthenticated, on loopback unless set (the Kubernetes
	// manifests set `:9090`): `/healthz`, `/readyz`, `/metrics` (Prometheus)
	// ([docs/observability.md](docs/observability.md#metrics-health-and-readiness));
	// port 0 picks a free one
	AdminAddr string `env:"SUNDIAL_NOTIFIER_ADMIN_ADDR"`
	// alert sends in flight at once (and alerts taken in at once), 1 to 1024
	Concurrency int `env:"SUNDIAL_NOTIFIER_CONCURRENCY"`
	// how long in-flight work may finish after SIGTERM
	ShutdownTimeout time.Duration `env:"SUNDIAL_SHUTDOWN_TIMEOUT"`

	// how often the notifier looks for alerts to take in, groups to close and
	// sends to try (an alert due at once wakes it), 10ms to 1m
	PollInterval time.Duration `env:"SUNDIAL_NOTIFIER_POLL_INTERVAL"`
	// age at which an alert whose NATS event never came is taken in from
	// PostgreSQL, 0 to 1h
	SweepAge time.Duration `env:"SUNDIAL_NOTIFIER_SWEEP_AGE"`
	// how long a claimed send belongs to one notifier (a notifier killed
	// mid-send leaves it to another after this); more than the send timeout
	SendLease time.Duration `env:"SUNDIAL_NOTIFIER_SEND_LEASE"`
	// limit of one send, connection to last byte, at most 1m
	SendTimeout time.Duration `env:"SUNDIAL_NOTIFIER_SEND_TIMEOUT"`
	// wait after a send's first failed try; it doubles at each try
	RetryMin time.Duration `env:"SUNDIAL_NOTIFIER_RETRY_MIN"`
	// longest wait between tries
	RetryMax time.Duration `env:"SUNDIAL_NOTIFIER_RETRY_MAX"`
	// how long a send is retried before it fails for good
	GiveUp time.Duration `env:"SUNDIAL_NOTIFIER_GIVE_UP"`

	// the gateway's address as receivers and people reach it (no `/v1`): the
	// async ack and nack URLs sent with every delivery are built on it, and
	// the links in alerts; `make run` sets it to its gateway
	PublicURL string `env:"SUNDIAL_PUBLIC_URL"`
	// base of the links in alerts; by default `SUNDIAL_PUBLIC_URL` +
	// `/dashboard`
	DashboardURL string `env:"SUNDIAL_DASHBOARD_URL"`
	// prefix of every Sundial-named header (the API's quota headers, the
	// delivery headers, and the signature headers of custom-webhook channels),
	// for receivers written for the hosted service's names
	HeaderPrefix string `env:"SUNDIAL_HEADER_PREFIX"`
	// `true` lets deliveries and notification channels reach loopback and
	// private addresses (development, tests)
	AllowPrivate bool `env:"SUNDIAL_DELIVERY_ALLOW_PRIVATE"`
	// AllowCIDRs are networks channels may reach although they are internal.
	// SUNDIAL_DELIVERY_ALLOW_CIDRS, comma-separated CIDRs (a bare address
	// means just that address), default none (as the dispatcher's).
	AllowCIDRs []netip.Prefix
	// PEM file of CA certificates trusted besides the system's
	CAFile string `env:"SUNDIAL_DELIVERY_CA_FILE"`

	// SMTP is the operator's SMTP server for the e-mails to projects'
	// owner addresses (quota alerts); Host empty means none, and then no
	// owner e-mail is sent.
	SMTP SMTPConfig

	// the keys that seal signing keys, Authorization values, async secrets and
	// channel settings in PostgreSQL: `id:base64key[,id:base64key...]`, 32
	// random bytes each (`echo "k1:$(openssl rand -base64 32)"`); the first
	// seals, every one opens; the same list on every service; rotation in
	// [docs/security.md](docs/security.md#secrets-at-rest); `make run` makes
	// one and keeps it in `.data/secret-keys`
	SecretKeys string `env:"SUNDIAL_SECRET_KEYS"` // a secret: never logged
}

// SMTPConfig is the operator's SMTP server. It is trusted: the egress guard
// does not apply to it.
type SMTPConfig struct {
	// the operator's SMTP server for quota e-mails to project owners; unset:
	// no owner e-mails
	Host string `env:"SUNDIAL_NOTIFIER_SMTP_HOST"`
	// its port
	Port int `env:"SUNDIAL_NOTIFIER_SMTP_PORT"`
	// user name (with the password, or neither)
	Username string `env:"SUNDIAL_NOTIFIER_SMTP_USERNAME"`
	// password (never logged)
	Password string `env:"SUNDIAL_NOTIFIER_SMTP_PASSWORD"`
	// `starttls`, `tls` or `none` (not with credentials)
	TLS string `env:"SUNDIAL_NOTIFIER_SMTP_TLS"`
	// sender address, required with the host
	From string `env:"SUNDIAL_NOTIFIER_SMTP_FROM"`
}

// Defaults.
const (
	DefaultNATSURL          = bus.DefaultURL
	DefaultDatabaseURL      = postgres.DefaultURL
	DefaultDatabaseMaxConns = 4
	DefaultLogLevel         = "info"
	DefaultAdminAddr        = "127.0.0.1:9093"
	DefaultConcurrency      = 8
	DefaultShutdownTimeout  = 15 * time.Second
	DefaultPollInterval     = time.Second
	DefaultSweepAge         = 10 * time.Second
	DefaultSendLease        = 60 * time.Second
	DefaultSendTimeout      = 10 * time.Second
	DefaultRetryMin         = 30 * time.Second
	DefaultRetryMax         = time.Hour
	DefaultGiveUp           = 24 * time.Hour
	DefaultPublicURL        = "http://127.0.0.1:8080"
	DefaultHeaderPrefix     = signing.DefaultHeaderPrefix
	DefaultSMTPPort         = 587
)

// defaultConfig is the Config with no variable set, but for DashboardURL,
// whose default follows PublicURL (ConfigFromEnv).
func defaultConfig() Config {
	return Config{
		NATSURL:          DefaultNATSURL,
		StreamReplicas:   event.DefaultReplicas,
		DatabaseURL:      DefaultDatabaseURL,
		DatabaseMaxConns: DefaultDatabaseMaxConns,
		SchemaWait:       postgres.DefaultSchemaWait,
		LogLevel:         DefaultLogLevel,
		AdminAddr:        DefaultAdminAddr,
		Concurrency:      DefaultConcurrency,
		ShutdownTimeout:  DefaultShutdownTimeout,
		PollInterval:     DefaultPollInterval,
		SweepAge:         DefaultSweepAge,
		SendLease:        DefaultSendLease,
		SendTimeout:      DefaultSendTimeout,
		RetryMin:         DefaultRetryMin,
		RetryMax:         DefaultRetryMax,
		GiveUp:           DefaultGiveUp,
		PublicURL:        DefaultPublicURL,
		HeaderPrefix:     DefaultHeaderPrefix,
		SMTP: SMTPConfig{
			Port: DefaultSMTPPort,
			TLS:  channelconfig.TLSStartTLS,
		},
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

// ConfigFromEnv reads the Config through lookup (os.LookupEnv when nil) and
// returns every parse and validation problem at once.
func ConfigFromEnv(lookup envconf.Lookup) (Config, error) {
	env := fromEnv{Config: defaultConfig()}
	err := envconf.Load(lookup, &env)
	cfg := env.Config
	if cfg.DashboardURL == "" {
		cfg.DashboardURL = strings.TrimSuffix(cfg.PublicURL, "/") + "/dashboard"
	}
	cidrs, cidrErr := egress.ParseAllowList(env.AllowList)
	cfg.AllowCIDRs = cidrs
	// A value that failed to parse holds its default, so Validate does not
	// report it a second time.
	return cfg, errors.Join(err, cidrErr, cfg.Validate())
}

// Validate reports every value the notifier cannot run with.
func (c Config) Validate() error {
	var check envconf.Check
	check.That(c.NATSURL != "", "SUNDIAL_NATS_URL: must be set")
	replicasErr := event.CheckReplicas(c.StreamReplicas)
	check.That(replicasErr == nil, "%v", replicasErr)
	check.That(c.DatabaseURL != "", "SUNDIAL_DATABASE_URL: must be set")
	schemaWaitErr := postgres.CheckSchemaWait(c.SchemaWait)
	check.That(schemaWaitErr == nil, "%v", schemaWaitErr)
	check.That(c.DatabaseMaxConns >= 1 && c.DatabaseMaxConns <= 1000,
		"SUNDIAL_DATABASE_MAX_CONNS=%d: want 1 to 1000", c.DatabaseMaxConns)
	if err := telemetry.ParseLevel(c.LogLevel); err != nil {
		check.That(false, "SUNDIAL_LOG_LEVEL: %v", err)
	}
	if err := adminhttp.CheckAddr(c.AdminAddr); err != nil {
		check.That(false, "SUNDIAL_NOTIFIER_ADMIN_ADDR=%q: %v", c.AdminAddr, err)
	}
	// The bound keeps the consumer's MaxAckPending, which equals it, sane.
	check.That(c.Concurrency >= 1 && c.Concurrency <= 1024,
		"SUNDIAL_NOTIFIER_CONCURRENCY=%d: want 1 to 1024", c.Concurrency)
	check.That(c.ShutdownTimeout > 0, "SUNDIAL_SHUTDOWN_TIMEOUT=%s: want a positive duration", c.ShutdownTimeout)
	c.validateTimes(&check)
	check.That(validBaseURL(c.PublicURL), "SUNDIAL_PUBLIC_URL=%q: want an absolute http or https URL without query or fragment", c.PublicURL)
	check.That(validBaseURL(c.DashboardURL), "SUNDIAL_DASHBOARD_URL=%q: want an absolute http or https URL without query or fragment", c.DashboardURL)
	check.That(signing.ValidHeaderPrefix(c.HeaderPrefix), "SUNDIAL_HEADER_PREFIX=%q: want letters, digits and dashes, starting with a letter", c.HeaderPrefix)
	for _, p := range c.AllowCIDRs {
		check.That(p.IsValid(), "SUNDIAL_DELIVERY_ALLOW_CIDRS: invalid network %s", p)
	}
	c.SMTP.validate(&check)
	secretsErr := secretbox.CheckEnv(c.SecretKeys)
	check.That(secretsErr == nil, "%v", secretsErr)
	return check.Err()
}

func (c Config) validateTimes(check *envconf.Check) {
	check.That(c.PollInterval >= 10*time.Millisecond && c.PollInterval <= time.Minute,
		"SUNDIAL_NOTIFIER_POLL_INTERVAL=%s: want 10ms to 1m", c.PollInterval)
	check.That(c.SweepAge >= 0 && c.SweepAge <= time.Hour, "SUNDIAL_NOTIFIER_SWEEP_AGE=%s: want 0 to 1h", c.SweepAge)
	check.That(c.SendTimeout > 0 && c.SendTimeout <= time.Minute,
		"SUNDIAL_NOTIFIER_SEND_TIMEOUT=%s: want more than 0 and at most 1m", c.SendTimeout)
	// A lease shorter than a send would hand a healthy send to another
	// notifier while it is still running: a duplicate message.
	check.That(c.SendLease > c.SendTimeout, "SUNDIAL_NOTIFIER_SEND_LEASE=%s: want more than SUNDIAL_NOTIFIER_SEND_TIMEOUT (%s)", c.SendLease, c.SendTimeout)
	check.That(c.RetryMin > 0, "SUNDIAL_NOTIFIER_RETRY_MIN=%s: want a positive duration", c.RetryMin)
	check.That(c.RetryMax >= c.RetryMin, "SUNDIAL_NOTIFIER_RETRY_MAX=%s: want at least SUNDIAL_NOTIFIER_RETRY_MIN (%s)", c.RetryMax, c.RetryMin)
	check.That(c.GiveUp > 0, "SUNDIAL_NOTIFIER_GIVE_UP=%s: want a positive duration", c.GiveUp)
}

// validate checks the operator's SMTP server; nothing is checked when none
// is configured.
func (s SMTPConfig) validate(check *envconf.Check) {
	if s.Host == "" {
		return
	}
	check.That(s.Port >= 1 && s.Port <= 65535, "SUNDIAL_NOTIFIER_SMTP_PORT=%d: want 1 to 65535", s.Port)
	switch s.TLS {
	case channelconfig.TLSStartTLS, channelconfig.TLSImplicit:
	case channelconfig.TLSNone:
		check.That(s.Username == "" && s.Password == "",
			"SUNDIAL_NOTIFIER_SMTP_TLS=none: not with a username or password (credentials are never sent unencrypted)")
	default:
		check.That(false, "SUNDIAL_NOTIFIER_SMTP_TLS=%q: want starttls, tls or none", s.TLS)
	}
	check.That((s.Username == "") == (s.Password == ""),
		"SUNDIAL_NOTIFIER_SMTP_USERNAME and SUNDIAL_NOTIFIER_SMTP_PASSWORD: set both or neither")
	if err := channelconfig.CheckAddress(s.From); err != nil {
		check.That(false, "SUNDIAL_NOTIFIER_SMTP_FROM: %v (required with SUNDIAL_NOTIFIER_SMTP_HOST)", err)
	}
}

// ownerSMTP is the channel package's view of the operator's server; nil
// when none is configured.
func (s SMTPConfig) ownerSMTP() *channelconfig.Email {
	if s.Host == "" {
		return nil
	}
	return &channelconfig.Email{Host: s.Host, Port: s.Port, Username: s.Username, Password: s.Password, TLS: s.TLS, From: s.From}
}

// validBaseURL accepts a base that links are built on.
func validBaseURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" &&
		u.User == nil && u.RawQuery == "" && u.Fragment == ""
}
