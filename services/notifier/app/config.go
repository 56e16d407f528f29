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
	// NATSURL is the NATS server the alerts come from.
	// SUNDIAL_NATS_URL, default nats://127.0.0.1:4222.
	NATSURL string `env:"SUNDIAL_NATS_URL"`
	// StreamReplicas is how many servers of a JetStream cluster keep each
	// stream and durable consumer (SUNDIAL_STREAM_REPLICAS, default 1, at
	// most 5; every service must be given the same value:
	// docs/operations.md, "Streams and consumers").
	StreamReplicas int `env:"SUNDIAL_STREAM_REPLICAS"`
	// DatabaseURL is the PostgreSQL database: alerts, groups, channels and
	// sends live there.
	// SUNDIAL_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/sundial?sslmode=disable.
	DatabaseURL string `env:"SUNDIAL_DATABASE_URL"`
	// DatabaseMaxConns bounds the connection pool.
	// SUNDIAL_DATABASE_MAX_CONNS, default 4, 1 to 1000.
	DatabaseMaxConns int `env:"SUNDIAL_DATABASE_MAX_CONNS"`
	// LogLevel is debug, info, warn or error. SUNDIAL_LOG_LEVEL, default info.
	LogLevel string `env:"SUNDIAL_LOG_LEVEL"`
	// AdminAddr is the admin listener's address: /healthz, /readyz and
	// /metrics (docs/observability.md). SUNDIAL_NOTIFIER_ADMIN_ADDR, default
	// 127.0.0.1:9093, this machine only: an operator exposes it, e.g. :9093 in
	// a pod; port 0 picks a free one (App.AdminAddr).
	AdminAddr string `env:"SUNDIAL_NOTIFIER_ADMIN_ADDR"`
	// Concurrency bounds the sends in flight at once, and the alerts taken
	// in at once. SUNDIAL_NOTIFIER_CONCURRENCY, default 8, 1 to 1024.
	Concurrency int `env:"SUNDIAL_NOTIFIER_CONCURRENCY"`
	// ShutdownTimeout bounds how long the sends in flight may take to
	// finish (and be recorded) once the notifier is told to stop; after it
	// they are abandoned and retried by another notifier when their lease
	// expires. SUNDIAL_SHUTDOWN_TIMEOUT, default 15s.
	ShutdownTimeout time.Duration `env:"SUNDIAL_SHUTDOWN_TIMEOUT"`

	// PollInterval is how often the notifier looks for alerts to take in,
	// groups to close and sends to try, besides being woken when an alert
	// due at once arrives. SUNDIAL_NOTIFIER_POLL_INTERVAL, default 1s,
	// 10ms to 1m.
	PollInterval time.Duration `env:"SUNDIAL_NOTIFIER_POLL_INTERVAL"`
	// SweepAge is how old an alert not taken in must be before the sweeper
	// takes it in (its event was lost or never published).
	// SUNDIAL_NOTIFIER_SWEEP_AGE, default 10s, 0 to 1h.
	SweepAge time.Duration `env:"SUNDIAL_NOTIFIER_SWEEP_AGE"`
	// SendLease is how long a claimed send belongs to this notifier: one
	// killed mid-send leaves it to another after the lease.
	// SUNDIAL_NOTIFIER_SEND_LEASE, default 60s, more than SendTimeout.
	SendLease time.Duration `env:"SUNDIAL_NOTIFIER_SEND_LEASE"`
	// SendTimeout bounds one send, connection to last byte.
	// SUNDIAL_NOTIFIER_SEND_TIMEOUT, default 10s, at most 1m.
	SendTimeout time.Duration `env:"SUNDIAL_NOTIFIER_SEND_TIMEOUT"`
	// RetryMin is the wait after a send's first failed try; it doubles at
	// each try up to RetryMax. SUNDIAL_NOTIFIER_RETRY_MIN, default 30s.
	RetryMin time.Duration `env:"SUNDIAL_NOTIFIER_RETRY_MIN"`
	// RetryMax caps the wait between tries. SUNDIAL_NOTIFIER_RETRY_MAX,
	// default 1h, at least RetryMin.
	RetryMax time.Duration `env:"SUNDIAL_NOTIFIER_RETRY_MAX"`
	// GiveUp is how long a send is retried before it is failed for good.
	// SUNDIAL_NOTIFIER_GIVE_UP, default 24h.
	GiveUp time.Duration `env:"SUNDIAL_NOTIFIER_GIVE_UP"`

	// PublicURL is the deployment's public base URL (the gateway as people
	// reach it). SUNDIAL_PUBLIC_URL, default http://127.0.0.1:8080.
	PublicURL string `env:"SUNDIAL_PUBLIC_URL"`
	// DashboardURL is the dashboard's base URL, which messages link to.
	// SUNDIAL_DASHBOARD_URL, default PublicURL + "/dashboard".
	DashboardURL string `env:"SUNDIAL_DASHBOARD_URL"`
	// HeaderPrefix names the signature headers of custom-webhook channels,
	// as of deliveries (<Prefix>-Signature, ...). SUNDIAL_HEADER_PREFIX,
	// default Sundial.
	HeaderPrefix string `env:"SUNDIAL_HEADER_PREFIX"`
	// AllowPrivate lets channels reach loopback, private and other internal
	// addresses: for development and tests only.
	// SUNDIAL_DELIVERY_ALLOW_PRIVATE, default false (as the dispatcher's).
	AllowPrivate bool `env:"SUNDIAL_DELIVERY_ALLOW_PRIVATE"`
	// AllowCIDRs are networks channels may reach although they are internal.
	// SUNDIAL_DELIVERY_ALLOW_CIDRS, comma-separated CIDRs (a bare address
	// means just that address), default none (as the dispatcher's).
	AllowCIDRs []netip.Prefix
	// CAFile is a PEM file of CA certificates trusted in addition to the
	// system's. SUNDIAL_DELIVERY_CA_FILE, default none (as the dispatcher's).
	CAFile string `env:"SUNDIAL_DELIVERY_CA_FILE"`

	// SMTP is the operator's SMTP server for the e-mails to projects'
	// owner addresses (quota alerts); Host empty means none, and then no
	// owner e-mail is sent.
	SMTP SMTPConfig

	// SecretKeys open the channels' configs and the signing keys stored
	// sealed in PostgreSQL (SUNDIAL_SECRET_KEYS, required, the gateway's
	// keyring: package secretbox). Never log it.
	SecretKeys string `env:"SUNDIAL_SECRET_KEYS"`
}

// SMTPConfig is the operator's SMTP server. It is trusted: the egress guard
// does not apply to it.
type SMTPConfig struct {
	// Host is the server's name. SUNDIAL_NOTIFIER_SMTP_HOST, default none.
	Host string `env:"SUNDIAL_NOTIFIER_SMTP_HOST"`
	// Port. SUNDIAL_NOTIFIER_SMTP_PORT, default 587.
	Port int `env:"SUNDIAL_NOTIFIER_SMTP_PORT"`
	// Username and Password authenticate (both or neither).
	// SUNDIAL_NOTIFIER_SMTP_USERNAME, SUNDIAL_NOTIFIER_SMTP_PASSWORD. The
	// password is a secret: never logged.
	Username string `env:"SUNDIAL_NOTIFIER_SMTP_USERNAME"`
	Password string `env:"SUNDIAL_NOTIFIER_SMTP_PASSWORD"`
	// TLS is starttls, tls or none. SUNDIAL_NOTIFIER_SMTP_TLS, default starttls.
	TLS string `env:"SUNDIAL_NOTIFIER_SMTP_TLS"`
	// From is the sender address, required with Host.
	// SUNDIAL_NOTIFIER_SMTP_FROM.
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
