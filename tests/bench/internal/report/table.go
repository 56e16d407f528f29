package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/sundial-run/sundial/tests/bench/internal/logscan"
)

// PrintTable writes the API intake, the delivery table, the memory
// summary, the comparison with the baseline when it ran, then the stage
// breakdown.
func (r Report) PrintTable(w io.Writer) {
	quick := ""
	if r.Quick {
		quick = " (BENCH_QUICK: scaled down)"
	}
	fmt.Fprintf(w, "\nSundial end to end%s, %d vCPU (%s), %.0f GiB, %s\n", quick, r.Machine.CPUs, r.Machine.CPUModel, r.Machine.MemoryGiB, r.Machine.GoVersion)
	r.printIntake(w)
	r.printBatch(w)
	r.printDeliveries(w)
	r.printOrdering(w)
	r.printBulkJob(w)
	r.printRealistic(w)
	r.printCrash(w)
	r.printListen(w)
	r.printSequences(w)
	r.printDashboard(w)
	r.printRetention(w)
	r.printMemory(w)
	r.printComparisons(w)
	r.printStages(w)
}

func (r Report) printIntake(w io.Writer) {
	var rows []Result
	for _, res := range r.Results {
		if res.Scenario == "schedule" {
			rows = append(rows, res)
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "\nAPI intake (POST /v1/hooks, closed loop):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tcreated\ts\thooks/s\tlatency p50 ms\tp99 ms\tmax ms\terrors\tgateway RSS MiB\tok\t")
	for _, res := range rows {
		c := res.Create
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.0f\t%.1f\t%.1f\t%.1f\t%s\t%.1f\t%v\t\n", res.Scenario, c.Count, c.Seconds, c.PerSecond,
			c.Latency.P50Ms, c.Latency.P99Ms, c.Latency.MaxMs, formatErrors(c.Errors), res.PeakRSSMiB["gateway"], res.OK)
	}
	_ = tw.Flush()
}

func (r Report) printDeliveries(w io.Writer) {
	if !slices.ContainsFunc(r.Results, func(res Result) bool { return !intake(res) && res.Listen == nil }) {
		return
	}
	fmt.Fprintln(w, "\nDeliveries (lateness = first arrival - postAt; x steady = figure / same system's steady figure):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tsystem\thooks\tbacklog\tcreate/s\tdelivered\tdup\tearly\tlate p50 ms\tp99 ms\tmax ms\tall in s\tdeliv/s\tsustained/s\tx steady p99/deliv/s\tpeak RSS MiB\tok\t")
	for _, res := range r.Results {
		if intake(res) || res.Listen != nil || res.Dashboard != nil || (res.Sequence != nil && res.Sequence.Due == nil) {
			continue
		}
		c := res.Check
		vs := ""
		if res.VsSteady != nil {
			vs = fmt.Sprintf("%.2f/%.2f", res.VsSteady["lateP99"], res.VsSteady["deliveriesPerSecond"])
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.0f\t%d\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.2f\t%.0f\t%.0f\t%s\t%s\t%v\t\n",
			res.Scenario, res.System, res.Hooks, res.Backlog, res.Create.PerSecond, c.Delivered, c.Duplicates, c.Early,
			c.Lateness.P50Ms, c.Lateness.P99Ms, c.Lateness.MaxMs, res.AllDeliveredSeconds,
			res.DeliveriesPerSecond, res.SustainedPerSecond, vs, formatRSS(res.PeakRSSMiB), res.OK)
	}
	_ = tw.Flush()
}

// intake says a result is one of the API's intake scenarios, which
// deliver nothing.
func intake(res Result) bool {
	return res.Scenario == "schedule" || res.Scenario == "batch-intake"
}

// printMemory is the memory scenario: each process's peak RSS, the most of
// the burst and scale rows.
func (r Report) printMemory(w io.Writer) {
	for _, system := range r.systems() {
		peak := r.MemoryPeaks(system)
		if len(peak) == 0 {
			continue
		}
		fmt.Fprintf(w, "\nMemory, %s: peak RSS MiB over burst and scale: %s\n", system, formatMap(peak, "%.1f"))
	}
}

func (r Report) printComparisons(w io.Writer) {
	if len(r.Comparisons) == 0 {
		return
	}
	fmt.Fprintln(w, "\nSundial / baseline (river), same run, alternating:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tsundial deliv/s\tbaseline deliv/s\tratio\tsundial p99 ms\tbaseline p99 ms\tratio\tboth ok\t")
	for _, c := range r.Comparisons {
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.2f\t%.1f\t%.1f\t%.2f\t%v\t\n", c.Scenario, c.Sundial.DeliveriesPerSecond, c.Baseline.DeliveriesPerSecond,
			c.DeliveriesPerSecondRatio, c.Sundial.LateP99Ms, c.Baseline.LateP99Ms, c.LateP99Ratio, c.OK)
	}
	_ = tw.Flush()
}

func (r Report) printStages(w io.Writer) {
	fmt.Fprintln(w, "\nStages (ms after the first postAt: first / half / all; rate first to last), CPU seconds in the delivery phase, work per hook:")
	for _, res := range r.Results {
		if res.Listen != nil {
			// Its runs' stages; the notes below include theirs.
			for _, run := range res.Listen.Runs {
				fmt.Fprintf(w, "  %s, %s (%s):\n", res.Scenario, run.Name, res.System)
				printStageLines(w, run.Stages, run.CPUSeconds)
			}
		} else {
			fmt.Fprintf(w, "  %s (%s):\n", res.Scenario, res.System)
			printStageLines(w, res.Stages, res.CPUSeconds)
		}
		if len(res.PerHook) > 0 {
			fmt.Fprintf(w, "    per hook: %s\n", formatMap(res.PerHook, "%.2f"))
		}
		if res.Check.Delivered > 0 {
			fmt.Fprintf(w, "    late: %s\n", res.Check.LateSpread)
		}
		for _, n := range res.Notes {
			fmt.Fprintf(w, "    note: %s\n", n)
		}
	}
	fmt.Fprintln(w)
}

// printStageLines writes one line per stage, then the processor times.
func printStageLines(w io.Writer, stages []logscan.Stage, cpu map[string]float64) {
	for _, st := range stages {
		via := ""
		if len(st.ByVia) > 0 {
			via = fmt.Sprintf(" %v", st.ByVia)
		}
		fmt.Fprintf(w, "    %-16s %7d  %9.1f / %9.1f / %9.1f  %8.0f/s%s\n", st.Name, st.Count, st.FirstMs, st.HalfMs, st.AllMs, st.PerSecond, via)
	}
	fmt.Fprintf(w, "    cpu s:  %s\n", formatMap(cpu, "%.1f"))
}

// systems lists the systems of the results in order of appearance.
func (r Report) systems() []string {
	var out []string
	for _, res := range r.Results {
		if !slices.Contains(out, res.System) {
			out = append(out, res.System)
		}
	}
	return out
}

// MemoryPeaks is each process's highest peak RSS (MiB) of system over its
// burst and scale rows.
func (r Report) MemoryPeaks(system string) map[string]float64 {
	peak := map[string]float64{}
	for _, res := range r.Results {
		if res.System != system || (res.Scenario != "burst" && !strings.HasPrefix(res.Scenario, "scale-")) {
			continue
		}
		for k, v := range res.PeakRSSMiB {
			peak[k] = max(peak[k], v)
		}
	}
	return peak
}

// rssOrder names the processes in the order the table shows them.
var rssOrder = []struct{ key, short string }{
	{"gateway", "gw"}, {"scheduler", "sch"}, {"dispatcher", "disp"}, {"notifier", "notif"}, {"nats", "nats"},
}

// formatRSS lists each process's peak RSS, Sundial's in a fixed order, any
// other (the baseline's) after.
func formatRSS(m map[string]float64) string {
	var parts []string
	seen := map[string]bool{}
	for _, o := range rssOrder {
		if v, ok := m[o.key]; ok {
			parts = append(parts, fmt.Sprintf("%s %.0f", o.short, v))
			seen[o.key] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !seen[k] {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, m[k]))
		}
	}
	return strings.Join(parts, " ")
}

func formatErrors(m map[string]int) string {
	if len(m) == 0 {
		return "0"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s:%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}
