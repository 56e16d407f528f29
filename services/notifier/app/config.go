package app

import (
	"errors"
	"time"

	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/pkg/telemetry"
)

// Config is the whole configuration, read only from the environment.
type Config struct {
	// NATSURL is the NATS server the alerts come from.
	// SUNDIAL_NATS_URL, default nats://127.0.0.1:4222.
	NATSURL string
	// DatabaseURL is the PostgreSQL database. The notifier connects at start
	// so that the notification channels (stored per project) can use it.
	// SUNDIAL_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/sundial?sslmode=disable.
	DatabaseURL string
	// DatabaseMaxConns bounds the connection pool.
	// SUNDIAL_DATABASE_MAX_CONNS, default 4, 1 to 1000.
	DatabaseMaxConns int
	// LogLevel is debug, info, warn or error. SUNDIAL_LOG_LEVEL, default info.
	LogLevel string
	// Concurrency bounds the alerts being sent at once.
	// SUNDIAL_NOTIFIER_CONCURRENCY, default 8, 1 to 1024.
	Concurrency int
	// ShutdownTimeout bounds how long alerts in flight may take to finish
	// once the notifier is told to stop; after it they are handed back to
	// NATS for the next notifier. SUNDIAL_SHUTDOWN_TIMEOUT, default 15s.
	ShutdownTimeout time.Duration
}

// Defaults.
const (
	DefaultNATSURL          = "nats://127.0.0.1:4222"
	DefaultDatabaseURL      = "postgres://postgres@127.0.0.1:5432/sundial?sslmode=disable"
	DefaultDatabaseMaxConns = 4
	DefaultLogLevel         = "info"
	DefaultConcurrency      = 8
	DefaultShutdownTimeout  = 15 * time.Second
)

// ConfigFromEnv reads the Config through lookup (os.LookupEnv when nil) and
// returns every parse and validation problem at once.
func ConfigFromEnv(lookup envconf.Lookup) (Config, error) {
	r := envconf.New(lookup)
	cfg := Config{
		NATSURL:          r.String("SUNDIAL_NATS_URL", DefaultNATSURL),
		DatabaseURL:      r.String("SUNDIAL_DATABASE_URL", DefaultDatabaseURL),
		DatabaseMaxConns: r.Int("SUNDIAL_DATABASE_MAX_CONNS", DefaultDatabaseMaxConns),
		LogLevel:         r.String("SUNDIAL_LOG_LEVEL", DefaultLogLevel),
		Concurrency:      r.Int("SUNDIAL_NOTIFIER_CONCURRENCY", DefaultConcurrency),
		ShutdownTimeout:  r.Duration("SUNDIAL_SHUTDOWN_TIMEOUT", DefaultShutdownTimeout),
	}
	// A value that failed to parse holds its default, so Validate does not
	// report it a second time.
	return cfg, errors.Join(r.Err(), cfg.Validate())
}

// Validate reports every value the notifier cannot run with.
func (c Config) Validate() error {
	var check envconf.Check
	check.That(c.NATSURL != "", "SUNDIAL_NATS_URL: must be set")
	check.That(c.DatabaseURL != "", "SUNDIAL_DATABASE_URL: must be set")
	check.That(c.DatabaseMaxConns >= 1 && c.DatabaseMaxConns <= 1000,
		"SUNDIAL_DATABASE_MAX_CONNS=%d: want 1 to 1000", c.DatabaseMaxConns)
	if err := telemetry.ParseLevel(c.LogLevel); err != nil {
		check.That(false, "SUNDIAL_LOG_LEVEL: %v", err)
	}
	// The bound keeps the consumer's MaxAckPending, which equals it, sane.
	check.That(c.Concurrency >= 1 && c.Concurrency <= 1024,
		"SUNDIAL_NOTIFIER_CONCURRENCY=%d: want 1 to 1024", c.Concurrency)
	check.That(c.ShutdownTimeout > 0, "SUNDIAL_SHUTDOWN_TIMEOUT=%s: want a positive duration", c.ShutdownTimeout)
	return check.Err()
}
