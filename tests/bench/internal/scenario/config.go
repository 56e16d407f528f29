package scenario

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Config is the benchmark's configuration, from BENCH_* variables.
type Config struct {
	// Scenarios to run, in registry order (BENCH_SCENARIOS, comma-separated
	// names; default all).
	Scenarios []string
	// SameSecondSize is the hooks due in the same second
	// (BENCH_SAME_SECOND_SIZE, default 1000).
	SameSecondSize int
	// SteadyRate and SteadySeconds shape the steady scenario
	// (BENCH_STEADY_RATE, default 500 hooks/s; BENCH_STEADY_SECONDS, 30).
	SteadyRate    int
	SteadySeconds int
	// BurstSize is the hooks due at one instant (BENCH_BURST_SIZE, 100000).
	BurstSize int
	// BacklogRows is the far-future pending hooks of the backlog scenario
	// (BENCH_BACKLOG_ROWS, 1000000).
	BacklogRows int
	// Clients is the concurrent API clients creating hooks (BENCH_CLIENTS, 64).
	Clients int
	// ServiceEnv are extra settings for every service (BENCH_SERVICE_ENV,
	// comma-separated KEY=VALUE, e.g.
	// SUNDIAL_DISPATCHER_HOST_CONCURRENCY=64,SUNDIAL_SCHEDULER_BATCH_SIZE=1000).
	ServiceEnv map[string]string
	// Pprof builds the services with pprof and profiles the burst
	// scenarios' delivery phase (BENCH_PPROF=1) for PprofSeconds
	// (BENCH_PPROF_SECONDS, default 15).
	Pprof        bool
	PprofSeconds int
	// Out is the JSON report (BENCH_OUT, default .bench/e2e.json under the
	// repository root); Dir holds the runs' logs (BENCH_DIR, default
	// .bench/e2e).
	Out string
	Dir string
	// AdminURL is the PostgreSQL server (SUNDIAL_TEST_DATABASE_URL, as
	// withpg sets it, else SUNDIAL_DATABASE_URL, else the local server).
	AdminURL string
	// KeepDatabase leaves each scenario's database behind (BENCH_KEEP_DB=1).
	KeepDatabase bool
	// Root is the repository (the folder of go.work).
	Root string
}

// DefaultServiceEnv is the benchmark's tuning of the services, what an
// operator whose hooks all go to one fast endpoint would set: every hook of
// the benchmark goes to the one receiver, and the default per-host bound
// (16 of the 64 delivery slots) hands the other deliveries back to
// JetStream for 250 ms to 2 s each. BENCH_SERVICE_ENV overrides it
// (SUNDIAL_DISPATCHER_HOST_CONCURRENCY=16 measures the defaults).
var DefaultServiceEnv = map[string]string{
	"SUNDIAL_DISPATCHER_HOST_CONCURRENCY": "64",
}

// ConfigFromEnv reads the Config, reporting every bad value at once.
func ConfigFromEnv(root string) (Config, error) {
	var errs []error
	num := func(name string, def int) int {
		v := os.Getenv(name)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("%s=%q: want a positive integer", name, v))
			return def
		}
		return n
	}
	c := Config{
		SameSecondSize: num("BENCH_SAME_SECOND_SIZE", 1000),
		SteadyRate:     num("BENCH_STEADY_RATE", 500),
		SteadySeconds:  num("BENCH_STEADY_SECONDS", 30),
		BurstSize:      num("BENCH_BURST_SIZE", 100_000),
		BacklogRows:    num("BENCH_BACKLOG_ROWS", 1_000_000),
		Clients:        num("BENCH_CLIENTS", 64),
		PprofSeconds:   num("BENCH_PPROF_SECONDS", 15),
		Pprof:          os.Getenv("BENCH_PPROF") == "1",
		KeepDatabase:   os.Getenv("BENCH_KEEP_DB") == "1",
		Out:            envOr("BENCH_OUT", filepath.Join(root, ".bench", "e2e.json")),
		Dir:            envOr("BENCH_DIR", filepath.Join(root, ".bench", "e2e")),
		AdminURL:       envOr("SUNDIAL_TEST_DATABASE_URL", envOr("SUNDIAL_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")),
		Root:           root,
		ServiceEnv:     maps.Clone(DefaultServiceEnv),
	}
	known := map[string]bool{}
	for _, s := range Registry {
		known[s.Name] = true
	}
	if v := os.Getenv("BENCH_SCENARIOS"); v != "" {
		for _, name := range strings.Split(v, ",") {
			name = strings.TrimSpace(name)
			if !known[name] {
				errs = append(errs, fmt.Errorf("BENCH_SCENARIOS: unknown scenario %q (want %s)", name, strings.Join(Names(), ", ")))
				continue
			}
			c.Scenarios = append(c.Scenarios, name)
		}
	} else {
		c.Scenarios = Names()
	}
	if v := os.Getenv("BENCH_SERVICE_ENV"); v != "" {
		for _, kv := range strings.Split(v, ",") {
			k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok || !strings.HasPrefix(k, "SUNDIAL_") {
				errs = append(errs, fmt.Errorf("BENCH_SERVICE_ENV: %q: want SUNDIAL_NAME=value", kv))
				continue
			}
			c.ServiceEnv[k] = val
		}
	}
	return c, errors.Join(errs...)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
