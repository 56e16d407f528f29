// Package report holds the benchmark's results: one Result per scenario,
// printed as one table and written as one JSON file.
package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
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
	// Settings are the environment variables every service ran with.
	Settings map[string]string `json:"settings"`
	// Sizes are the scenarios' sizes (BENCH_* variables).
	Sizes   map[string]int `json:"sizes"`
	Results []Result       `json:"results"`
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
	Scenario    string `json:"scenario"`
	Description string `json:"description"`
	Hooks       int    `json:"hooks"`
	// Backlog is how many far-future pending hooks were in the table.
	Backlog int `json:"backlog"`
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
	// PeakRSSMiB is each process's VmHWM at the end of the scenario.
	PeakRSSMiB map[string]float64 `json:"peakRssMiB"`
	// CPUSeconds is processor time used during the delivery phase (from the
	// first postAt until every result was applied); postgres counts every
	// PostgreSQL process of the machine.
	CPUSeconds map[string]float64 `json:"cpuSeconds"`
	// Stages time the scheduler's claims, the dispatcher's deliveries and
	// the scheduler's result applications, from the services' logs.
	Stages []logscan.Stage `json:"stages"`
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

// PrintTable writes the results as one table, then the stage breakdown.
func (r Report) PrintTable(w io.Writer) {
	fmt.Fprintf(w, "\nSundial end to end, %d vCPU (%s), %.0f GiB, %s\n", r.Machine.CPUs, r.Machine.CPUModel, r.Machine.MemoryGiB, r.Machine.GoVersion)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\thooks\tbacklog\tcreate/s\tdelivered\tdup\tearly\tlate p50 ms\tp99 ms\tmax ms\tall in s\tdeliv/s\tsustained/s\tRSS MiB gw/sch/disp/notif/nats\tok\t")
	for _, res := range r.Results {
		c := res.Check
		rss := res.PeakRSSMiB
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%d\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.2f\t%.0f\t%.0f\t%.0f/%.0f/%.0f/%.0f/%.0f\t%v\t\n",
			res.Scenario, res.Hooks, res.Backlog, res.Create.PerSecond, c.Delivered, c.Duplicates, c.Early,
			c.Lateness.P50Ms, c.Lateness.P99Ms, c.Lateness.MaxMs, res.AllDeliveredSeconds,
			res.DeliveriesPerSecond, res.SustainedPerSecond,
			rss["gateway"], rss["scheduler"], rss["dispatcher"], rss["notifier"], rss["nats"], res.OK)
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "\nStages (ms after the first postAt: first / half / all; rate first to last), CPU seconds in the delivery phase, work per hook:")
	for _, res := range r.Results {
		fmt.Fprintf(w, "  %s:\n", res.Scenario)
		for _, st := range res.Stages {
			via := ""
			if len(st.ByVia) > 0 {
				via = fmt.Sprintf(" %v", st.ByVia)
			}
			fmt.Fprintf(w, "    %-16s %7d  %9.1f / %9.1f / %9.1f  %8.0f/s%s\n", st.Name, st.Count, st.FirstMs, st.HalfMs, st.AllMs, st.PerSecond, via)
		}
		fmt.Fprintf(w, "    cpu s:  %s\n", formatMap(res.CPUSeconds, "%.1f"))
		fmt.Fprintf(w, "    per hook: %s\n", formatMap(res.PerHook, "%.2f"))
		for _, n := range res.Notes {
			fmt.Fprintf(w, "    note: %s\n", n)
		}
	}
	fmt.Fprintln(w)
}

func formatMap(m map[string]float64, verb string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+" "+fmt.Sprintf(verb, m[k]))
	}
	return strings.Join(parts, ", ")
}
