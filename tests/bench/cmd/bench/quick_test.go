//go:build benchcheck

// The quick runs build and run the whole benchmark: `make bench` runs them
// first (the benchcheck tag), so that a benchmark checks its own report
// before it is trusted, and `make test` stays a test of Sundial.

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/tests/bench/internal/load"
	"github.com/sundial-run/sundial/tests/bench/internal/report"
	"github.com/sundial-run/sundial/tests/bench/internal/scenario"
	"github.com/sundial-run/sundial/tests/bench/internal/stats"
	"github.com/sundial-run/sundial/tests/bench/internal/suite"
)

// quickSystems are the systems the quick run measures: the whole
// `BENCH_QUICK=1 make bench-compare`, which fits the two minutes.
const quickSystems = "sundial,baseline"

type testBundle struct {
	root, bench, out, dir string
}

// setup builds the benchmark without -race (the services it builds never
// are), so that the receiver in the benchmark process measures as it does
// under make bench. The database server is the bench's own: withpg's
// SUNDIAL_TEST_DATABASE_URL, else SUNDIAL_DATABASE_URL.
func setup(t *testing.T) testBundle {
	t.Helper()
	if os.Getenv("SUNDIAL_TEST_DATABASE_URL") == "" && os.Getenv("SUNDIAL_DATABASE_URL") == "" {
		require.FailNow(t, "no PostgreSQL server: the quick benchmark needs SUNDIAL_TEST_DATABASE_URL (make test runs it under withpg, which sets it) or SUNDIAL_DATABASE_URL, a server URL allowed to create databases")
	}
	wd, err := os.Getwd()
	require.NoError(t, err)
	root, err := suite.Root(wd)
	require.NoError(t, err)
	tmp := t.TempDir()
	b := testBundle{root: root, bench: filepath.Join(tmp, "bench"), out: filepath.Join(tmp, "e2e.json"), dir: filepath.Join(tmp, "e2e")}
	build := exec.CommandContext(t.Context(), "go", "build", "-o", b.bench, "./tests/bench/cmd/bench")
	build.Dir = root
	build.Env = benchEnv(os.Environ())
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build the benchmark: %s", out)
	return b
}

// benchEnv is env without the benchmark's own variables, which are the
// test's to set, and without GOFLAGS, which could make the nested builds
// race-enabled.
func benchEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return strings.HasPrefix(kv, "BENCH_") || strings.HasPrefix(kv, "GOFLAGS=")
	})
}

// run runs the built benchmark with BENCH_QUICK=1 and extra variables and
// returns its report.
func (b testBundle) run(t *testing.T, extra ...string) report.Report {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), b.bench)
	cmd.Dir = b.root
	cmd.Env = append(append(benchEnv(os.Environ()), "BENCH_QUICK=1", "BENCH_OUT="+b.out, "BENCH_DIR="+b.dir), extra...)
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	require.NoError(t, cmd.Run(), "quick benchmark:\n%s", output.String())

	raw, err := os.ReadFile(b.out)
	require.NoError(t, err)
	var rep report.Report
	require.NoError(t, json.Unmarshal(raw, &rep))
	require.True(t, rep.Quick)
	return rep
}

// TestQuickBenchmark runs the whole benchmark scaled down (BENCH_QUICK=1)
// on Sundial and the river baseline, but for the scenarios that run the
// `sundial` command (TestQuickListen's), the sequence scenarios
// (TestQuickSequences'), the dashboard's (TestQuickDashboard's), the
// retention pair (TestQuickRetention's) and the real-world ones
// (TestQuickRealWorld's), and checks that it runs and that its report is
// well formed: every scenario present for every system and
// passed, rates above zero, percentiles in order, nothing early; ordering
// (on Sundial alone) with every key in order and its ratios to the burst
// and steady rows it ran beside; bulk-job (on Sundial alone) with its job
// completed over every loaded hook and its ratio to the steady row. It
// checks no target: the figures of a quick run on a busy machine mean
// little.
func TestQuickBenchmark(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var names []string
	for _, s := range scenario.Registry {
		if !s.CLI && !s.Sequence && !s.Pages && !s.Retention && !s.RealWorld {
			names = append(names, s.Name)
		}
	}
	rep := b.run(t, "BENCH_SYSTEMS="+quickSystems, "BENCH_SCENARIOS="+strings.Join(names, ","))

	systems := strings.Split(quickSystems, ",")
	deliveries := 0
	for _, s := range scenario.Registry {
		if s.CLI || s.Sequence || s.Pages || s.Retention || s.RealWorld {
			continue
		}
		if s.Plan != nil {
			deliveries++
		}
		want := systems
		if s.Plan == nil {
			want = systems[:1] // an API scenario runs on Sundial alone
		}
		for _, system := range want {
			res := find(t, rep.Results, s.Name, system)
			require.True(t, res.OK, "%s on %s: %v", s.Name, system, res.Notes)
			if s.Ordering {
				requireDeliveries(t, res)
				requireOrdering(t, rep, res)
				continue
			}
			if s.BulkJob {
				requireDeliveries(t, res)
				requireBulkJob(t, rep, res)
				continue
			}
			if s.Plan == nil {
				requireIntake(t, res)
				if s.Name == "batch-intake" {
					requireBatch(t, res)
				}
				continue
			}
			requireDeliveries(t, res)
		}
	}
	require.Len(t, rep.Comparisons, deliveries, "one comparison per delivery scenario")
	for _, c := range rep.Comparisons {
		require.Positive(t, c.DeliveriesPerSecondRatio, c.Scenario)
		require.Positive(t, c.LateP99Ratio, c.Scenario)
	}
	require.NotEmpty(t, rep.MemoryPeaks("sundial")["scheduler"], "the memory summary has the scheduler")
}

// TestQuickSequences runs the sequence scenarios scaled down
// (BENCH_QUICK=1) on Sundial and checks their report: every sequence's run
// started and its root hook delivered, none early, the memory windows'
// hooks delivered and both peaks read, both previews answered every time
// with consistent percentiles, and each scenario's goals present. It
// checks no goal.
func TestQuickSequences(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var names []string
	for _, s := range scenario.Registry {
		if s.Sequence {
			names = append(names, s.Name)
		}
	}
	require.Len(t, names, 3)
	rep := b.run(t, "BENCH_SCENARIOS="+strings.Join(names, ","))

	due := find(t, rep.Results, "sequences", "sundial")
	require.True(t, due.OK, "sequences: %v", due.Notes)
	require.NotNil(t, due.Sequence)
	d := due.Sequence.Due
	require.NotNil(t, d)
	n := rep.Sizes["BENCH_SEQUENCES"]
	require.Equal(t, n, d.Sequences)
	require.Equal(t, n, d.RunsStarted)
	require.Positive(t, d.APICreate.PerSecond)
	require.Contains(t, []string{"api", "direct"}, d.Created)
	require.LessOrEqual(t, d.RunStart.P50Ms, d.RunStart.P99Ms)
	require.LessOrEqual(t, d.RunStart.P99Ms, d.RunStart.MaxMs)
	require.True(t, d.Slot.Equal(due.Check.FirstPostAt), "lateness is measured from the slot")
	requireDeliveries(t, due)
	require.Len(t, due.Sequence.Goals, 1, "without a burst row, the runs' goal alone")

	mem := find(t, rep.Results, "sequence-memory", "sundial")
	require.True(t, mem.OK, "sequence-memory: %v", mem.Notes)
	m := mem.Sequence.Memory
	require.NotNil(t, m)
	require.Equal(t, rep.Sizes["BENCH_SEQUENCE_MEMORY_ROWS"], m.Rows)
	require.Positive(t, m.EmptyMiB)
	require.Positive(t, m.LoadedMiB)
	require.InDelta(t, m.LoadedMiB/m.EmptyMiB, m.Ratio, 0.01)
	require.Len(t, mem.Sequence.Goals, 1)

	pre := find(t, rep.Results, "sequence-preview", "sundial")
	require.True(t, pre.OK, "sequence-preview: %v", pre.Notes)
	p := pre.Sequence.Preview
	require.NotNil(t, p)
	for _, timed := range []load.Timed{p.Stateless, p.Stored} {
		require.Equal(t, rep.Sizes["BENCH_SEQUENCE_PREVIEW_REQUESTS"], timed.Latency.Count)
		require.Empty(t, timed.Errors)
		require.Positive(t, timed.Latency.P50Ms)
		require.LessOrEqual(t, timed.Latency.P50Ms, timed.Latency.P99Ms)
		require.LessOrEqual(t, timed.Latency.P99Ms, timed.Latency.MaxMs)
	}
	require.Len(t, pre.Sequence.Goals, 2)
}

// TestQuickListen runs the listen scenario scaled down (BENCH_QUICK=1),
// which builds and runs `sundial listen`, and checks its report: every
// hook of its three runs delivered the way measured and none early, every
// idle listener connected and still open when the gateway's memory was
// read, the figures consistent with one another. It checks no goal.
func TestQuickListen(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rep := b.run(t, "BENCH_SCENARIOS=listen")
	res := find(t, rep.Results, "listen", "sundial")
	require.True(t, res.OK, "listen: %v", res.Notes)
	l := res.Listen
	require.NotNil(t, l)
	require.Len(t, l.Runs, 3)
	for i, via := range []string{"https", "listener", "listener"} {
		run := l.Runs[i]
		require.Equal(t, via, run.Via, run.Name)
		c := run.Check
		require.Equal(t, run.Hooks, c.Delivered, run.Name)
		require.Zero(t, c.Early, run.Name)
		require.Zero(t, run.Misrouted, run.Name)
		require.Positive(t, run.DeliveriesPerSecond, run.Name)
		require.Positive(t, c.Lateness.P50Ms, run.Name)
		require.LessOrEqual(t, c.Lateness.P50Ms, c.Lateness.P99Ms, run.Name)
		require.LessOrEqual(t, c.Lateness.P99Ms, c.Lateness.MaxMs, run.Name)
	}
	require.Equal(t, l.Runs[0].Hooks, l.Runs[1].Hooks, "the direct and listener steady runs are the same load")
	require.Positive(t, l.Runs[1].CPUSeconds["listener"], "the listener's processor time is counted")
	require.InDelta(t, l.Runs[1].Check.Lateness.P99Ms-l.Runs[0].Check.Lateness.P99Ms, l.AddedP99Ms, 0.001)

	idle := l.Idle
	require.Equal(t, rep.Sizes["BENCH_LISTEN_IDLE"], idle.Connections)
	require.Equal(t, idle.Connections, idle.Opened.Connected, "%v", idle.Opened.Errors)
	require.Equal(t, idle.Connections, idle.StillOpen)
	require.Positive(t, idle.GatewayRSSBeforeMiB)
	require.GreaterOrEqual(t, idle.GatewayHWMMiB, idle.GatewayRSSMiB, "VmHWM is at least every VmRSS read before it")
	require.Len(t, l.Goals, 3)
	require.Positive(t, res.PeakRSSMiB["listener"])
}

// TestQuickDashboard runs the dashboard scenario scaled down
// (BENCH_QUICK=1) and checks its report: the project seeded with every
// hook asked for, their attempts and figures; every page answered 200 as
// often as asked, with what the page must show (the scenario checks each
// body), percentiles in order, a goal per page. It checks no goal.
func TestQuickDashboard(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rep := b.run(t, "BENCH_SCENARIOS=dashboard")
	res := find(t, rep.Results, "dashboard", "sundial")
	require.True(t, res.OK, "dashboard: %v", res.Notes)
	d := res.Dashboard
	require.NotNil(t, d)
	require.Equal(t, rep.Sizes["BENCH_DASHBOARD_HOOKS"], d.Seed.Hooks)
	require.Greater(t, d.Seed.Attempts, d.Seed.Hooks, "1 to 3 attempts a hook, none for the pending")
	require.Greater(t, d.Seed.Minutes, 7*24*60*8, "every minute's 8 shards, and the longer steps")
	require.Len(t, d.Pages, 9)
	for _, p := range d.Pages {
		l := p.Timed.Latency
		require.Equal(t, rep.Sizes["BENCH_DASHBOARD_REQUESTS"], l.Count, p.Name)
		require.Empty(t, p.Timed.Errors, p.Name)
		require.Positive(t, l.P50Ms, p.Name)
		require.LessOrEqual(t, l.P50Ms, l.P90Ms, p.Name)
		require.LessOrEqual(t, l.P90Ms, l.P99Ms, p.Name)
		require.LessOrEqual(t, l.P99Ms, l.MaxMs, p.Name)
	}
	require.Contains(t, d.Pages[8].Path, "cursor=", "the next page is the first page's link")
	require.Len(t, d.Goals, len(d.Pages))
	require.Len(t, d.Load, 2)
}

// TestQuickRetention runs the retention pair scaled down (BENCH_QUICK=1)
// and checks its report: both steady windows delivered, none early; the
// expired hooks and their attempts all loaded; without the cleaner none
// deleted and all left; with it all deleted by the end (the quick size is
// far too small to keep the cleaner busy through the window, so where the
// deletions fall is not checked), and the on/off comparison with its goal.
// It checks no goal.
func TestQuickRetention(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var names []string
	for _, s := range scenario.Registry {
		if s.Retention {
			names = append(names, s.Name)
		}
	}
	require.Equal(t, []string{"retention-off", "retention-on"}, names)
	rep := b.run(t, "BENCH_SCENARIOS="+strings.Join(names, ","))
	rows := int64(rep.Sizes["BENCH_RETENTION_ROWS"])
	for _, name := range names {
		res := find(t, rep.Results, name, "sundial")
		require.True(t, res.OK, "%s: %v", name, res.Notes)
		requireDeliveries(t, res)
		r := res.Retention
		require.NotNil(t, r, name)
		require.True(t, r.OK, name)
		require.EqualValues(t, rows, r.Load.Hooks, name)
		require.EqualValues(t, rows, r.Load.Attempts, name)
		require.Len(t, r.LoadAverage, 2, name)
	}
	off := find(t, rep.Results, "retention-off", "sundial").Retention
	require.False(t, off.Cleaner)
	require.Zero(t, off.Before.Hooks+off.Window.Hooks+off.After.Hooks)
	require.Equal(t, rows, off.Remaining.Hooks)
	require.Equal(t, rows, off.Remaining.Attempts)
	require.Nil(t, off.Goals)

	on := find(t, rep.Results, "retention-on", "sundial").Retention
	require.True(t, on.Cleaner)
	require.Equal(t, rows, on.Before.Hooks+on.Window.Hooks+on.After.Hooks)
	require.Equal(t, rows, on.Before.Attempts+on.Window.Attempts+on.After.Attempts)
	require.Zero(t, on.Remaining.Hooks)
	require.Zero(t, on.Remaining.Attempts)
	require.Positive(t, on.VsOff["lateP99"])
	require.Len(t, on.Goals, 1)
}

// TestQuickRealWorld runs the realistic and crash scenarios scaled down
// (BENCH_QUICK=1, without the hanging paths) on Sundial and the baseline
// and checks their report: realistic, every hook delivered and none early,
// every signature verified, every healthy retry arrived and none before it
// was due, every kind of path present but hanging, the healthy paths'
// figures and their goal; crash, no hook lost, none early, the kill and
// the restart timed, its goal present; both compared. It checks no goal.
func TestQuickRealWorld(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var names []string
	for _, s := range scenario.Registry {
		if s.RealWorld {
			names = append(names, s.Name)
		}
	}
	require.Equal(t, []string{"realistic", "crash"}, names)
	rep := b.run(t, "BENCH_SYSTEMS="+quickSystems, "BENCH_SCENARIOS="+strings.Join(names, ","))

	for _, system := range strings.Split(quickSystems, ",") {
		res := find(t, rep.Results, "realistic", system)
		require.True(t, res.OK, "realistic on %s: %v", system, res.Notes)
		requireDeliveries(t, res)
		r := res.Realistic
		require.NotNil(t, r, system)
		require.False(t, r.Hanging, "a quick run leaves the hanging paths out")
		var kinds []string
		for _, p := range r.Paths {
			kinds = append(kinds, p.Kind)
			require.GreaterOrEqual(t, p.Arrivals, p.Hooks, "%s on %s", p.Kind, system)
		}
		require.Equal(t, []string{"healthy", "failing", "slow", "async"}, kinds, system)
		require.Zero(t, r.BadSignatures, system)
		require.GreaterOrEqual(t, r.Verified, res.Hooks+r.Retries, system)
		require.Positive(t, r.Retries, system)
		require.Zero(t, r.RetriesMissing, system)
		require.Zero(t, r.RetriesEarly, system)
		require.Equal(t, r.Retries, r.HealthyRetries.Count, system)
		for _, l := range []stats.Summary{r.Healthy, r.HealthyRetries} {
			require.Positive(t, l.Count, system)
			require.LessOrEqual(t, l.P50Ms, l.P99Ms, system)
			require.LessOrEqual(t, l.P99Ms, l.MaxMs, system)
		}
		require.Len(t, r.Goals, 1, system)
		require.Equal(t, r.Healthy.P99Ms, r.Goals[0].Value, system)
	}
	require.Len(t, rep.Comparisons, 2, "realistic and crash are compared")
	for _, c := range rep.Comparisons {
		require.Positive(t, c.LateP99Ratio, c.Scenario)
	}

	for system, process := range map[string]string{"sundial": "dispatcher", "baseline": "riverbase"} {
		res := find(t, rep.Results, "crash", system)
		require.True(t, res.OK, "crash on %s: %v", system, res.Notes)
		requireDeliveries(t, res)
		require.Zero(t, res.Check.Missing, "no hook lost on %s", system)
		c := res.Crash
		require.NotNil(t, c, system)
		require.Equal(t, process, c.Process)
		require.Positive(t, c.KilledMs, system)
		require.Greater(t, c.RestartedMs, c.KilledMs, system)
		require.GreaterOrEqual(t, c.ReadyMs, c.RestartedMs, system)
		require.Less(t, c.ArrivedBeforeKill, res.Hooks, "%s killed in the burst, not after it", system)
		require.NotContains(t, res.CPUSeconds, process, "the killed process's time is left out")
		require.Len(t, c.Goals, 1, system)
	}
}

func find(t *testing.T, results []report.Result, name, system string) report.Result {
	t.Helper()
	for _, r := range results {
		if r.Scenario == name && r.System == system {
			return r
		}
	}
	require.FailNow(t, "missing result", "%s on %s", name, system)
	return report.Result{}
}

func requireIntake(t *testing.T, res report.Result) {
	t.Helper()
	c := res.Create
	require.Positive(t, c.PerSecond, "hooks/s")
	require.Positive(t, c.Latency.P50Ms)
	require.LessOrEqual(t, c.Latency.P50Ms, c.Latency.P99Ms)
	require.LessOrEqual(t, c.Latency.P99Ms, c.Latency.MaxMs)
	require.Empty(t, c.Errors)
	require.Positive(t, res.PeakRSSMiB["gateway"])
}

// requireBatch checks the batch-intake row: whole batches counted, a
// COPY timed and compared, the goals present (the single create's too, as
// schedule ran in the same run).
func requireBatch(t *testing.T, res report.Result) {
	t.Helper()
	b := res.Batch
	require.NotNil(t, b)
	require.Equal(t, b.Size*b.Requests, res.Create.Count, "hooks are whole batches")
	require.Positive(t, b.RequestsPerSecond)
	require.Positive(t, b.Copy.Rows)
	require.Positive(t, b.Copy.PerSecond)
	require.Positive(t, b.VsCopy)
	require.Positive(t, b.CPUMicrosPerHook["gateway"])
	require.Len(t, b.Goals, 3)
	require.Len(t, b.Load, 2)
}

// requireOrdering checks an ordering row: every keyed and flow hook
// arrived, every key in order with a handoff for each hook but its first
// (the baseline has no order), every request verified and where it was
// sent, and the ratios to the burst and steady rows of the same run and,
// for the keyed row, to its baseline.
func requireOrdering(t *testing.T, rep report.Report, res report.Result) {
	t.Helper()
	o := res.Ordering
	require.NotNil(t, o)
	require.Equal(t, res.Scenario == "ordering-plain", o.Plain)
	require.Equal(t, rep.Sizes["BENCH_ORDERING_KEYS"], o.Keys)
	require.Equal(t, rep.Sizes["BENCH_ORDERING_PER_KEY"], o.PerKey)
	require.Equal(t, o.Keys*o.PerKey, o.KeyedHooks)
	require.Equal(t, res.Hooks, o.KeyedHooks+o.FlowHooks+o.OtherHooks)
	require.Positive(t, o.OtherHooks)
	require.Zero(t, o.KeyedMissing)
	require.Zero(t, o.FlowMissing)
	require.Zero(t, o.OtherMissing)
	if o.Plain {
		require.Zero(t, o.Order.Keys, "the baseline has no order to check")
		require.Zero(t, o.VsPlain)
	} else {
		require.Equal(t, o.Keys, o.Order.Keys)
		require.Zero(t, o.Order.Violations())
		require.Equal(t, o.KeyedHooks-o.Keys, o.Order.Handoff.Count, "a handoff for each hook but a key's first")
		require.Positive(t, o.VsPlain, "the baseline ran in the same run")
		require.Positive(t, o.FlowVsPlainP99)
		require.Positive(t, o.OtherVsPlainP99)
	}
	require.Zero(t, o.Misrouted)
	require.Zero(t, o.BadSignatures)
	require.GreaterOrEqual(t, o.Verified, res.Hooks)
	require.Positive(t, o.DeliveriesPerSecond)
	require.Positive(t, o.AllArrivedSeconds)
	for _, l := range []stats.Summary{o.Keyed, o.Flow, o.Other} {
		require.Positive(t, l.Count)
		require.LessOrEqual(t, l.P50Ms, l.P99Ms)
		require.LessOrEqual(t, l.P99Ms, l.MaxMs)
	}
	require.Positive(t, o.VsBurst, "burst ran in the same run")
	require.Positive(t, o.FlowVsSteadyP99, "steady ran in the same run")
}

// requireBulkJob checks the bulk-job row: the backlog loaded, the job
// completed having cancelled every hook it selected, every loaded one
// among them, timed and placed in the flow; the flow split around it,
// and its ratio to the steady row of the same run.
func requireBulkJob(t *testing.T, rep report.Report, res report.Result) {
	t.Helper()
	b := res.BulkJob
	require.NotNil(t, b)
	rows := rep.Sizes["BENCH_BULK_JOB_ROWS"]
	require.Equal(t, rows, b.Rows)
	require.Equal(t, rows, res.Backlog)
	require.NotNil(t, res.BacklogLoad)
	require.Equal(t, "completed", b.State)
	require.GreaterOrEqual(t, b.Selected, int64(rows), "the backlog and the calibration's hooks")
	require.Equal(t, b.Selected, b.Affected)
	require.GreaterOrEqual(t, b.Total, int64(rows))
	require.Positive(t, b.Batches)
	require.Positive(t, b.DurationSeconds)
	require.Positive(t, b.WallSeconds)
	require.Positive(t, b.HooksPerSecond)
	require.Positive(t, b.StartMs, "created into the flow")
	require.Greater(t, b.EndMs, b.StartMs)
	require.Equal(t, res.Hooks, b.Flow.Count)
	require.Equal(t, res.Hooks, b.During.Count+b.Outside.Count)
	for _, l := range []stats.Summary{b.Flow, b.During, b.Outside} {
		require.Positive(t, l.Count)
		require.LessOrEqual(t, l.P50Ms, l.P99Ms)
		require.LessOrEqual(t, l.P99Ms, l.MaxMs)
	}
	require.Positive(t, b.DuringVsSteadyP99, "steady ran in the same run")
}

func requireDeliveries(t *testing.T, res report.Result) {
	t.Helper()
	c := res.Check
	msg := res.Scenario + " on " + res.System
	require.Equal(t, res.Hooks, c.Delivered, msg)
	require.Zero(t, c.Early, msg)
	require.Positive(t, res.DeliveriesPerSecond, msg)
	require.Positive(t, c.Lateness.P50Ms, msg)
	require.LessOrEqual(t, c.Lateness.P50Ms, c.Lateness.P99Ms, msg)
	require.LessOrEqual(t, c.Lateness.P99Ms, c.Lateness.MaxMs, msg)
	require.NotEmpty(t, res.PeakRSSMiB, msg)
	if strings.HasPrefix(res.Scenario, "scale-") {
		require.Positive(t, res.Backlog, msg)
		require.NotNil(t, res.BacklogLoad, msg)
		require.Positive(t, res.VsSteady["lateP99"], msg)
	}
}
