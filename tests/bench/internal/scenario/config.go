package scenario

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Config is the benchmark's configuration, from BENCH_* variables.
type Config struct {
	// Scenarios to run, in registry order (BENCH_SCENARIOS, comma-separated
	// names; default all).
	Scenarios []string
	// Systems run the delivery scenarios, alternating per scenario
	// (BENCH_SYSTEMS, comma-separated: sundial, baseline; default sundial).
	Systems []string
	// Quick scales every scenario down for a run of about two minutes
	// (BENCH_QUICK=1); the size variables below still override it.
	Quick bool
	// ScheduleSeconds is the closed loop of the schedule scenario
	// (BENCH_SCHEDULE_SECONDS, default 30, quick 5).
	ScheduleSeconds int
	// BatchSeconds is the closed loop of the batch-intake scenario
	// (BENCH_BATCH_SECONDS, default 30, quick 5), BatchClients its clients
	// (BENCH_BATCH_CLIENTS, default 8) and BatchCopyRows the hooks of its
	// COPY (BENCH_BATCH_COPY_ROWS, default 200000, quick 20000).
	BatchSeconds  int
	BatchClients  int
	BatchCopyRows int
	// SameSecondSize is the hooks due in the same second
	// (BENCH_SAME_SECOND_SIZE, default 1000, quick 200).
	SameSecondSize int
	// SteadyRate and SteadySeconds shape the steady and scale scenarios
	// (BENCH_STEADY_RATE, default 500 hooks/s, quick 100;
	// BENCH_STEADY_SECONDS, default 60, quick 5).
	SteadyRate    int
	SteadySeconds int
	// BurstSize is the hooks due at one instant (BENCH_BURST_SIZE, default
	// 100000, quick 3000).
	BurstSize int
	// ScaleRows are the far-future pending hooks of scale-1m and scale-10m
	// (BENCH_SCALE_1M_ROWS, default 1000000, quick 50000;
	// BENCH_SCALE_10M_ROWS, default 10000000, quick 100000).
	Scale1MRows  int
	Scale10MRows int
	// ScaleHighRate is scale-10m-high's rate: steady at that rate with
	// Scale10MRows far-future hooks (BENCH_SCALE_HIGH_RATE, default 2000
	// hooks/s, quick 200; issue 19).
	ScaleHighRate int
	// Sequences are the sequences of the sequences scenario, all due at one
	// slot (BENCH_SEQUENCES, default 100000, quick 500).
	Sequences int
	// SequenceMemoryRows are the far-future sequences of sequence-memory
	// (BENCH_SEQUENCE_MEMORY_ROWS, default 1000000, quick 10000), and
	// SequenceMemorySeconds its window of plain hooks at SteadyRate
	// (BENCH_SEQUENCE_MEMORY_SECONDS, default 30, quick 5).
	SequenceMemoryRows    int
	SequenceMemorySeconds int
	// SequencePreviewRequests are the sequential requests of each preview
	// of sequence-preview (BENCH_SEQUENCE_PREVIEW_REQUESTS, default 2000,
	// quick 200).
	SequencePreviewRequests int
	// DashboardHooks are the hooks of the dashboard scenario's project
	// (BENCH_DASHBOARD_HOOKS, default 1000000, quick 20000) and
	// DashboardRequests the sequential requests of each page
	// (BENCH_DASHBOARD_REQUESTS, default 300, quick 30).
	DashboardHooks    int
	DashboardRequests int
	// RetentionRows are the expired hooks (each with one attempt) of the
	// retention scenarios (BENCH_RETENTION_ROWS, default 10000000, quick
	// 20000; issue 19).
	RetentionRows int
	// ListenBurstSize, ListenSteadyRate and ListenSteadySeconds shape the
	// listen scenario's deliveries (BENCH_LISTEN_BURST_SIZE, default 20000,
	// quick 1000; BENCH_LISTEN_STEADY_RATE, default 500 hooks/s, quick 100;
	// BENCH_LISTEN_STEADY_SECONDS, default 30, quick 5); ListenIdle is its
	// idle listener connections (BENCH_LISTEN_IDLE, default 1000, quick 100).
	ListenBurstSize     int
	ListenSteadyRate    int
	ListenSteadySeconds int
	ListenIdle          int
	// RealisticRate and RealisticSeconds shape the realistic scenario's
	// steady flow (BENCH_REALISTIC_RATE, default 2000 hooks/s, quick 20;
	// BENCH_REALISTIC_SECONDS, default 60, quick 4), RealisticBurst its
	// bursts, one every RealisticBurstEvery seconds within the flow
	// (BENCH_REALISTIC_BURST, default 2000, quick 40;
	// BENCH_REALISTIC_BURST_EVERY, default 15, quick 2).
	RealisticRate       int
	RealisticSeconds    int
	RealisticBurst      int
	RealisticBurstEvery int
	// CrashSize is the crash scenario's hooks due at one instant
	// (BENCH_CRASH_SIZE, default 5000, quick 3000).
	CrashSize int
	// OrderingKeys and OrderingPerKey shape the ordering scenario's keyed
	// hooks, all due at one instant (BENCH_ORDERING_KEYS, default 10000,
	// quick 100; BENCH_ORDERING_PER_KEY, default 10), and
	// OrderingFlowSeconds its plain flow at SteadyRate beside them
	// (BENCH_ORDERING_FLOW_SECONDS, default 30, quick 5).
	OrderingKeys        int
	OrderingPerKey      int
	OrderingFlowSeconds int
	// BulkJobRows are the far-future hooks the bulk-job scenario's job
	// cancels (BENCH_BULK_JOB_ROWS, default 1000000, quick 20000), and
	// BulkJobFlowSeconds its plain flow at SteadyRate, long enough to
	// cover the job (BENCH_BULK_JOB_FLOW_SECONDS, default 180, quick 8).
	BulkJobRows        int
	BulkJobFlowSeconds int
	// Clients is the concurrent API clients creating hooks (BENCH_CLIENTS, 64).
	Clients int
	// BaselineWorkers is the river baseline's MaxWorkers
	// (BENCH_BASELINE_WORKERS; default the baseline's own).
	BaselineWorkers int
	// BaselineEnv are more settings for the baseline (BENCH_BASELINE_ENV,
	// comma-separated RIVERBASE_NAME=value: cmd/riverbase's settings), to
	// try others than its defaults.
	BaselineEnv map[string]string
	// ServiceEnv are extra settings for every service (BENCH_SERVICE_ENV,
	// comma-separated KEY=VALUE, e.g.
	// SUNDIAL_DISPATCHER_HOST_CONCURRENCY=64,SUNDIAL_SCHEDULER_BATCH_SIZE=1000).
	ServiceEnv map[string]string
	// Pprof builds the services with pprof and profiles the delivery phase
	// of burst, steady and the scale scenarios, and the gateway during schedule
	// (BENCH_PPROF=1) for PprofSeconds
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

// Sizes are the scenarios' sizes by variable name, for the report.
func (c Config) Sizes() map[string]int {
	sizes := map[string]int{
		"BENCH_SCHEDULE_SECONDS": c.ScheduleSeconds, "BENCH_SAME_SECOND_SIZE": c.SameSecondSize,
		"BENCH_STEADY_RATE": c.SteadyRate, "BENCH_STEADY_SECONDS": c.SteadySeconds,
		"BENCH_BURST_SIZE": c.BurstSize, "BENCH_SCALE_1M_ROWS": c.Scale1MRows,
		"BENCH_SCALE_10M_ROWS": c.Scale10MRows, "BENCH_SCALE_HIGH_RATE": c.ScaleHighRate, "BENCH_CLIENTS": c.Clients,
		"BENCH_BASELINE_WORKERS":  c.BaselineWorkers,
		"BENCH_LISTEN_BURST_SIZE": c.ListenBurstSize, "BENCH_LISTEN_STEADY_RATE": c.ListenSteadyRate,
		"BENCH_LISTEN_STEADY_SECONDS": c.ListenSteadySeconds, "BENCH_LISTEN_IDLE": c.ListenIdle,
	}
	maps.Copy(sizes, c.sequenceSizes())
	sizes["BENCH_BATCH_SECONDS"], sizes["BENCH_BATCH_CLIENTS"], sizes["BENCH_BATCH_COPY_ROWS"] = c.BatchSeconds, c.BatchClients, c.BatchCopyRows
	sizes["BENCH_DASHBOARD_HOOKS"], sizes["BENCH_DASHBOARD_REQUESTS"] = c.DashboardHooks, c.DashboardRequests
	sizes["BENCH_RETENTION_ROWS"] = c.RetentionRows
	sizes["BENCH_REALISTIC_RATE"], sizes["BENCH_REALISTIC_SECONDS"] = c.RealisticRate, c.RealisticSeconds
	sizes["BENCH_REALISTIC_BURST"], sizes["BENCH_REALISTIC_BURST_EVERY"] = c.RealisticBurst, c.RealisticBurstEvery
	sizes["BENCH_CRASH_SIZE"] = c.CrashSize
	sizes["BENCH_ORDERING_KEYS"], sizes["BENCH_ORDERING_PER_KEY"] = c.OrderingKeys, c.OrderingPerKey
	sizes["BENCH_ORDERING_FLOW_SECONDS"] = c.OrderingFlowSeconds
	sizes["BENCH_BULK_JOB_ROWS"], sizes["BENCH_BULK_JOB_FLOW_SECONDS"] = c.BulkJobRows, c.BulkJobFlowSeconds
	return sizes
}

// DefaultServiceEnv is empty: the benchmark measures Sundial's defaults
// (issue 14). A tuned run may stand beside a default one, through
// BENCH_SERVICE_ENV, never instead of it.
var DefaultServiceEnv = map[string]string{}

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
	quick := os.Getenv("BENCH_QUICK") == "1"
	size := func(name string, full, small int) int {
		if quick {
			return num(name, small)
		}
		return num(name, full)
	}
	c := Config{
		Quick:               quick,
		ScheduleSeconds:     size("BENCH_SCHEDULE_SECONDS", 30, 5),
		SameSecondSize:      size("BENCH_SAME_SECOND_SIZE", 1000, 200),
		SteadyRate:          size("BENCH_STEADY_RATE", 500, 100),
		SteadySeconds:       size("BENCH_STEADY_SECONDS", 60, 5),
		BurstSize:           size("BENCH_BURST_SIZE", 100_000, 3000),
		Scale1MRows:         size("BENCH_SCALE_1M_ROWS", 1_000_000, 50_000),
		Scale10MRows:        size("BENCH_SCALE_10M_ROWS", 10_000_000, 100_000),
		ListenBurstSize:     size("BENCH_LISTEN_BURST_SIZE", 20_000, 1000),
		ListenSteadyRate:    size("BENCH_LISTEN_STEADY_RATE", 500, 100),
		ListenSteadySeconds: size("BENCH_LISTEN_STEADY_SECONDS", 30, 5),
		ListenIdle:          size("BENCH_LISTEN_IDLE", 1000, 100),
		Clients:             num("BENCH_CLIENTS", 64),
		BaselineWorkers:     num("BENCH_BASELINE_WORKERS", 0),
		PprofSeconds:        num("BENCH_PPROF_SECONDS", 15),
		Pprof:               os.Getenv("BENCH_PPROF") == "1",
		KeepDatabase:        os.Getenv("BENCH_KEEP_DB") == "1",
		Out:                 envOr("BENCH_OUT", filepath.Join(root, ".bench", "e2e.json")),
		Dir:                 envOr("BENCH_DIR", filepath.Join(root, ".bench", "e2e")),
		AdminURL:            envOr("SUNDIAL_TEST_DATABASE_URL", envOr("SUNDIAL_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")),
		Root:                root,
		ServiceEnv:          maps.Clone(DefaultServiceEnv),
	}
	c.BatchSeconds = size("BENCH_BATCH_SECONDS", 30, 5)
	c.BatchClients = num("BENCH_BATCH_CLIENTS", 8)
	c.BatchCopyRows = size("BENCH_BATCH_COPY_ROWS", 200_000, 20_000)
	c.ScaleHighRate = size("BENCH_SCALE_HIGH_RATE", 2000, 200)
	c.Sequences = size("BENCH_SEQUENCES", 100_000, 500)
	c.SequenceMemoryRows = size("BENCH_SEQUENCE_MEMORY_ROWS", 1_000_000, 10_000)
	c.SequenceMemorySeconds = size("BENCH_SEQUENCE_MEMORY_SECONDS", 30, 5)
	c.SequencePreviewRequests = size("BENCH_SEQUENCE_PREVIEW_REQUESTS", 2000, 200)
	c.DashboardHooks = size("BENCH_DASHBOARD_HOOKS", 1_000_000, 20_000)
	c.DashboardRequests = size("BENCH_DASHBOARD_REQUESTS", 300, 30)
	c.RetentionRows = size("BENCH_RETENTION_ROWS", 10_000_000, 20_000)
	c.RealisticRate = size("BENCH_REALISTIC_RATE", 2000, 20)
	c.RealisticSeconds = size("BENCH_REALISTIC_SECONDS", 60, 4)
	c.RealisticBurst = size("BENCH_REALISTIC_BURST", 2000, 40)
	c.RealisticBurstEvery = size("BENCH_REALISTIC_BURST_EVERY", 15, 2)
	c.CrashSize = size("BENCH_CRASH_SIZE", 5000, 3000)
	c.OrderingKeys = size("BENCH_ORDERING_KEYS", 10_000, 100)
	c.OrderingPerKey = num("BENCH_ORDERING_PER_KEY", 10)
	c.OrderingFlowSeconds = size("BENCH_ORDERING_FLOW_SECONDS", 30, 5)
	c.BulkJobRows = size("BENCH_BULK_JOB_ROWS", 1_000_000, 20_000)
	c.BulkJobFlowSeconds = size("BENCH_BULK_JOB_FLOW_SECONDS", 180, 8)
	c.Systems, errs = names("BENCH_SYSTEMS", SystemNames()[:1], SystemNames(), errs)
	c.Scenarios, errs = names("BENCH_SCENARIOS", Names(), Names(), errs)
	c.BaselineEnv, errs = keyValues("BENCH_BASELINE_ENV", "RIVERBASE_", errs)
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

// sequenceSizes are the sequence scenarios' sizes by variable name.
func (c Config) sequenceSizes() map[string]int {
	return map[string]int{
		"BENCH_SEQUENCES": c.Sequences, "BENCH_SEQUENCE_MEMORY_ROWS": c.SequenceMemoryRows,
		"BENCH_SEQUENCE_MEMORY_SECONDS": c.SequenceMemorySeconds, "BENCH_SEQUENCE_PREVIEW_REQUESTS": c.SequencePreviewRequests,
	}
}

// keyValues reads a comma-separated list of KEY=VALUE from the variable
// name, each key starting with prefix; bad entries are added to errs.
func keyValues(name, prefix string, errs []error) (map[string]string, []error) {
	out := map[string]string{}
	v := os.Getenv(name)
	if v == "" {
		return out, errs
	}
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || !strings.HasPrefix(k, prefix) {
			errs = append(errs, fmt.Errorf("%s: %q: want %sNAME=value", name, kv, prefix))
			continue
		}
		out[k] = val
	}
	return out, errs
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// names reads a comma-separated list of known names from the variable
// name, def when it is unset; unknown names are added to errs.
func names(name string, def, known []string, errs []error) ([]string, []error) {
	v := os.Getenv(name)
	if v == "" {
		return def, errs
	}
	var out []string
	for _, n := range strings.Split(v, ",") {
		n = strings.TrimSpace(n)
		if !slices.Contains(known, n) {
			errs = append(errs, fmt.Errorf("%s: unknown name %q (want %s)", name, n, strings.Join(known, ", ")))
			continue
		}
		out = append(out, n)
	}
	return out, errs
}
