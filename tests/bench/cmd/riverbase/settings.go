package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// settings are riverbase's environment variables. The defaults are what
// the measurements in README.md (next to this file) chose
// on a 2-vCPU machine; each is documented where it is read.
type settings struct {
	// DatabaseURL (RIVERBASE_DATABASE_URL, required) is the database river
	// migrates and works in.
	DatabaseURL string
	// ReceiverURL (RIVERBASE_RECEIVER_URL, required) is https://host:port;
	// each job's path is appended.
	ReceiverURL string
	// CAFile (RIVERBASE_CA_FILE) is the PEM the receiver's certificate is
	// trusted from; empty trusts the system roots.
	CAFile string
	// SigningKey (RIVERBASE_SIGNING_KEY, required) signs every delivery.
	SigningKey string

	// MaxWorkers (RIVERBASE_MAX_WORKERS, 1000) is the queue's concurrency:
	// deliveries in flight at once. Receivers that answer in seconds or
	// not at all hold a worker each for that long, so a receiver with
	// slow paths needs many (README.md, "Tuning for real receivers").
	MaxWorkers int
	// FetchCooldown (RIVERBASE_FETCH_COOLDOWN, 1ms: river's minimum) is the least time
	// between two fetches; a burst's throughput is bounded by about
	// MaxWorkers / FetchCooldown (river's default is 100ms).
	FetchCooldown time.Duration
	// FetchPollInterval (RIVERBASE_FETCH_POLL_INTERVAL, 20ms) is how often
	// river looks for jobs without being told: scheduled jobs become due
	// silently (no NOTIFY), so this bounds their lateness (default 1s).
	FetchPollInterval time.Duration
	// PollOnly (RIVERBASE_POLL_ONLY, false) turns LISTEN/NOTIFY off.
	PollOnly bool
	// JobTimeout (RIVERBASE_JOB_TIMEOUT, 15s) bounds one job's Work, above
	// the HTTP timeout so the client's own timeout is what normally fires.
	JobTimeout time.Duration
	// HTTPTimeout (RIVERBASE_HTTP_TIMEOUT, 10s) bounds one POST, as
	// Sundial's delivery timeout does.
	HTTPTimeout time.Duration
	// CompletedRetention (RIVERBASE_COMPLETED_RETENTION, 24h: river's
	// default) is how long completed jobs stay in river_job.
	CompletedRetention time.Duration
	// DBMaxConns (RIVERBASE_DB_MAX_CONNS, 10) sizes the pgx pool (pgx's
	// default would be 4 on 2 CPUs).
	DBMaxConns int
	// LogEvery (RIVERBASE_LOG_EVERY, 10000) logs one line per that many
	// deliveries; 0 logs none.
	LogEvery int
	// RiverLogLevel (RIVERBASE_RIVER_LOG_LEVEL, WARN) is the level of river's
	// own lines: per-job lines at INFO would cost throughput.
	RiverLogLevel slog.Level
	// StopTimeout (RIVERBASE_STOP_TIMEOUT, 10s) is how long SIGTERM waits
	// for running deliveries before cancelling them.
	StopTimeout time.Duration
	// RescueAfter (RIVERBASE_RESCUE_AFTER, 1h: river's default) is river's
	// RescueStuckJobsAfter: how long a job may stay running before the
	// leader's rescuer (every 30 s) hands it back, which is how the jobs a
	// killed process was working come back. It must exceed JobTimeout.
	RescueAfter time.Duration
}

// loadSettings reads the environment through getenv.
func loadSettings(getenv func(string) string) (settings, error) {
	r := reader{getenv: getenv}
	s := settings{
		DatabaseURL:        r.required("RIVERBASE_DATABASE_URL"),
		ReceiverURL:        strings.TrimRight(r.required("RIVERBASE_RECEIVER_URL"), "/"),
		CAFile:             getenv("RIVERBASE_CA_FILE"),
		SigningKey:         r.required("RIVERBASE_SIGNING_KEY"),
		MaxWorkers:         r.integer("RIVERBASE_MAX_WORKERS", 1000),
		FetchCooldown:      r.duration("RIVERBASE_FETCH_COOLDOWN", time.Millisecond),
		FetchPollInterval:  r.duration("RIVERBASE_FETCH_POLL_INTERVAL", 20*time.Millisecond),
		PollOnly:           r.boolean("RIVERBASE_POLL_ONLY", false),
		JobTimeout:         r.duration("RIVERBASE_JOB_TIMEOUT", 15*time.Second),
		HTTPTimeout:        r.duration("RIVERBASE_HTTP_TIMEOUT", 10*time.Second),
		CompletedRetention: r.duration("RIVERBASE_COMPLETED_RETENTION", 24*time.Hour),
		DBMaxConns:         r.integer("RIVERBASE_DB_MAX_CONNS", 10),
		LogEvery:           r.integer("RIVERBASE_LOG_EVERY", 10000),
		StopTimeout:        r.duration("RIVERBASE_STOP_TIMEOUT", 10*time.Second),
		RescueAfter:        r.duration("RIVERBASE_RESCUE_AFTER", time.Hour),
		RiverLogLevel:      r.level("RIVERBASE_RIVER_LOG_LEVEL", slog.LevelWarn),
	}
	if s.RescueAfter <= s.JobTimeout {
		r.errs = append(r.errs, errors.New("RIVERBASE_RESCUE_AFTER must exceed RIVERBASE_JOB_TIMEOUT"))
	}
	if s.MaxWorkers < 1 || s.DBMaxConns < 2 || s.LogEvery < 0 {
		r.errs = append(r.errs, errors.New("RIVERBASE_MAX_WORKERS must be >= 1, RIVERBASE_DB_MAX_CONNS >= 2, RIVERBASE_LOG_EVERY >= 0"))
	}
	return s, errors.Join(r.errs...)
}

// public are the settings in effect, for the ready line: neither the
// signing key nor the database URL (it may hold a password).
func (s settings) public() map[string]string {
	return map[string]string{
		"RIVERBASE_MAX_WORKERS":         strconv.Itoa(s.MaxWorkers),
		"RIVERBASE_FETCH_COOLDOWN":      s.FetchCooldown.String(),
		"RIVERBASE_FETCH_POLL_INTERVAL": s.FetchPollInterval.String(),
		"RIVERBASE_POLL_ONLY":           strconv.FormatBool(s.PollOnly),
		"RIVERBASE_JOB_TIMEOUT":         s.JobTimeout.String(),
		"RIVERBASE_HTTP_TIMEOUT":        s.HTTPTimeout.String(),
		"RIVERBASE_COMPLETED_RETENTION": s.CompletedRetention.String(),
		"RIVERBASE_DB_MAX_CONNS":        strconv.Itoa(s.DBMaxConns),
		"RIVERBASE_LOG_EVERY":           strconv.Itoa(s.LogEvery),
		"RIVERBASE_STOP_TIMEOUT":        s.StopTimeout.String(),
		"RIVERBASE_RESCUE_AFTER":        s.RescueAfter.String(),
		"RIVERBASE_RIVER_LOG_LEVEL":     s.RiverLogLevel.String(),
	}
}

// reader collects every malformed variable, so one run reports them all.
type reader struct {
	getenv func(string) string
	errs   []error
}

func (r *reader) required(key string) string {
	v := r.getenv(key)
	if v == "" {
		r.errs = append(r.errs, fmt.Errorf("%s is required", key))
	}
	return v
}

func (r *reader) integer(key string, def int) int {
	v := r.getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s: %w", key, err))
	}
	return n
}

func (r *reader) duration(key string, def time.Duration) time.Duration {
	v := r.getenv(key)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s: %w", key, err))
	}
	return d
}

func (r *reader) boolean(key string, def bool) bool {
	v := r.getenv(key)
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s: %w", key, err))
	}
	return b
}

func (r *reader) level(key string, def slog.Level) slog.Level {
	v := r.getenv(key)
	if v == "" {
		return def
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(v)); err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s: %w", key, err))
	}
	return l
}
