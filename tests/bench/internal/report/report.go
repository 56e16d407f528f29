// Package report holds the benchmark's results: one Result per scenario,
// printed as one table and written as one JSON file.
package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/sundial-run/sundial/tests/bench/internal/check"
	"github.com/sundial-run/sundial/tests/bench/internal/load"
	"github.com/sundial-run/sundial/tests/bench/internal/logscan"
	"github.com/sundial-run/sundial/tests/bench/internal/suite"
)

// Report is the whole run.
type Report struct {
	Machine  Machine   `json:"machine"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Quick says the sizes were scaled down (BENCH_QUICK=1).
	Quick bool `json:"quick"`
	// Settings are each system's settings: for Sundial the environment
	// variables every service ran with, for the baseline its river
	// configuration.
	Settings map[string]map[string]string `json:"settings"`
	// Sizes are the scenarios' sizes (BENCH_* variables).
	Sizes   map[string]int `json:"sizes"`
	Results []Result       `json:"results"`
	// Comparisons are Sundial over the baseline per delivery scenario, when
	// both ran.
	Comparisons []Comparison `json:"comparisons,omitempty"`
}

// Machine describes where the figures come from.
type Machine struct {
	CPUs      int     `json:"cpus"`
	CPUModel  string  `json:"cpuModel"`
	MemoryGiB float64 `json:"memoryGiB"`
	GOOS      string  `json:"goos"`
	GoVersion string  `json:"goVersion"`
}

// Result is one scenario's figures.
type Result struct {
	Scenario string `json:"scenario"`
	// System is what was measured: sundial or baseline (river).
	System      string `json:"system"`
	Description string `json:"description"`
	Hooks       int    `json:"hooks"`
	// Backlog is how many far-future pending hooks were in the table, and
	// BacklogLoad how they were loaded.
	Backlog     int                `json:"backlog"`
	BacklogLoad *suite.BacklogLoad `json:"backlogLoad,omitempty"`
	// Create is the creation of the hooks through the API, before they
	// were due.
	Create load.Created `json:"create"`
	// Check compares scheduled hooks with arrivals; its lateness is first
	// arrival minus postAt.
	Check check.Outcome `json:"check"`
	// AllDeliveredSeconds runs from the first postAt to the last hook's
	// first arrival.
	AllDeliveredSeconds float64 `json:"allDeliveredSeconds"`
	// DeliveriesPerSecond is Delivered over AllDeliveredSeconds;
	// SustainedPerSecond the rate between the 10th and 90th percentile
	// arrivals (without the ramp-up and the tail).
	DeliveriesPerSecond float64 `json:"deliveriesPerSecond"`
	SustainedPerSecond  float64 `json:"sustainedPerSecond"`
	// VsSteady is, for a scale row, each figure over the same system's
	// steady (empty table) figure in the same run: 1.0 is flat.
	VsSteady map[string]float64 `json:"vsSteady,omitempty"`
	// PeakRSSMiB is each process's VmHWM at the end of the scenario.
	PeakRSSMiB map[string]float64 `json:"peakRssMiB"`
	// CPUSeconds is processor time used during the delivery phase (from the
	// first postAt until every result was applied); postgres counts every
	// PostgreSQL process of the machine.
	CPUSeconds map[string]float64 `json:"cpuSeconds"`
	// Stages time the scheduler's claims, the dispatcher's deliveries and
	// the scheduler's result applications, from the services' logs.
	Stages []logscan.Stage `json:"stages"`
	// Sequence is the sequence scenarios' figures.
	Sequence *Sequence `json:"sequence,omitempty"`
	// Listen is the listen scenario's figures.
	Listen *Listen `json:"listen,omitempty"`
	// Batch is the batch-intake scenario's figures.
	Batch *Batch `json:"batch,omitempty"`
	// Dashboard is the dashboard scenario's figures.
	Dashboard *Dashboard `json:"dashboard,omitempty"`
	// Retention is the retention scenarios' figures.
	Retention *Retention `json:"retention,omitempty"`
	// Realistic is the realistic scenario's figures.
	Realistic *Realistic `json:"realistic,omitempty"`
	// Crash is the crash scenario's figures.
	Crash *Crash `json:"crash,omitempty"`
	// Ordering is the ordering scenario's figures.
	Ordering *Ordering `json:"ordering,omitempty"`
	// BulkJob is the bulk-job scenario's figures.
	BulkJob *BulkJob `json:"bulkJob,omitempty"`
	// Database and NATS count the delivery phase's work.
	Database        suite.DBStats      `json:"database"`
	NATS            suite.NATSStats    `json:"nats"`
	PerHook         map[string]float64 `json:"perHook"`
	Profiles        []string           `json:"profiles,omitempty"`
	Notes           []string           `json:"notes,omitempty"`
	OK              bool               `json:"ok"`
	DurationSeconds float64            `json:"durationSeconds"`
}

// DescribeMachine reads the CPU model and memory from /proc.
func DescribeMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GOOS: runtime.GOOS, GoVersion: runtime.Version()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
		_ = f.Close()
	}
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb float64
		if _, err := fmt.Sscanf(string(raw), "MemTotal: %f kB", &kb); err == nil {
			m.MemoryGiB = math.Round(kb/(1<<20)*10) / 10
		}
	}
	return m
}

// Write writes the report as indented JSON to path, creating its folder.
func (r Report) Write(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}

func formatMap(m map[string]float64, verb string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+" "+fmt.Sprintf(verb, m[k]))
	}
	return strings.Join(parts, ", ")
}
