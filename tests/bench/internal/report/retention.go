package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sundial-run/sundial/tests/bench/internal/logscan"
	"github.com/sundial-run/sundial/tests/bench/internal/suite"
)

// Retention is the retention scenarios' figures: the expired hooks loaded
// before the services started and what the scheduler's cleaner deleted
// before, during and after the steady window.
type Retention struct {
	// Cleaner says whether the cleaner ran (retention-on) or was turned
	// off (retention-off, SUNDIAL_SCHEDULER_RETENTION_INTERVAL=0).
	Cleaner bool              `json:"cleaner"`
	Load    suite.ExpiredLoad `json:"load"`
	// Before, Window and After are what the cleaner's log lines ("expired
	// hooks deleted", one a pass) say it deleted before the first postAt,
	// from it to the last hook's first arrival, and after; a pass is
	// counted where it ended.
	Before Deleted `json:"before"`
	Window Deleted `json:"window"`
	After  Deleted `json:"after"`
	// WindowSeconds is the window's length.
	WindowSeconds float64 `json:"windowSeconds"`
	// Remaining are the expired hooks and their attempts still in the
	// table once the services stopped.
	Remaining Deleted `json:"remaining"`
	// LoadAverage is the machine's load average (1, 5, 15 min) just
	// before the first postAt and once the services stopped.
	LoadAverage []string `json:"loadAverage"`
	// VsOff is, on the retention-on row, its lateness figures over the
	// retention-off row's of the same run (1.00 is no cost).
	VsOff map[string]float64 `json:"vsOff,omitempty"`
	// Goals are issue 19's, on the retention-on row.
	Goals []Goal `json:"goals,omitempty"`
	// OK says the deletions add up: none without the cleaner; with it,
	// the expired hooks left are those loaded less those the cleaner
	// logged, give or take the one statement that may commit unlogged as
	// the scheduler stops.
	OK bool `json:"ok"`
}

// Deleted counts hooks and attempts, and the cleaner's passes.
type Deleted struct {
	Hooks    int64 `json:"hooks"`
	Attempts int64 `json:"attempts"`
	Passes   int   `json:"passes,omitempty"`
}

// retentionGoal is issue 19's bound on the lateness p99 with the cleaner
// deleting over the same run without it.
const retentionGoal = 1.20

// SplitDeletions sums the cleaner's passes before from, from from to to,
// and after to.
func SplitDeletions(passes []logscan.Record, from, to time.Time) (before, window, after Deleted) {
	for _, p := range passes {
		d := &window
		switch {
		case p.At.Before(from):
			d = &before
		case p.At.After(to):
			d = &after
		}
		d.Hooks += p.Values["hooks_deleted"]
		d.Attempts += p.Values["attempts_deleted"]
		d.Passes++
	}
	return before, window, after
}

// CompareRetention sets VsOff and the goal of every retention-on row that
// has a retention-off row of the same system.
func CompareRetention(results []Result) {
	for i, on := range results {
		if on.Scenario != "retention-on" || on.Retention == nil {
			continue
		}
		for _, off := range results {
			if off.Scenario != "retention-off" || off.System != on.System || off.Retention == nil {
				continue
			}
			r := results[i].Retention
			r.VsOff = map[string]float64{
				"lateP50": ratio(on.Check.Lateness.P50Ms, off.Check.Lateness.P50Ms),
				"lateP99": ratio(on.Check.Lateness.P99Ms, off.Check.Lateness.P99Ms),
				"lateMax": ratio(on.Check.Lateness.MaxMs, off.Check.Lateness.MaxMs),
			}
			p99 := r.VsOff["lateP99"]
			r.Goals = []Goal{{What: "lateness p99 with the cleaner deleting over the same load without it (same run)",
				Target: fmt.Sprintf("at most %.2f", retentionGoal), Value: p99, Unit: "x",
				Met: off.Check.Lateness.P99Ms > 0 && p99 <= retentionGoal}}
		}
	}
}

func (r Report) printRetention(w io.Writer) {
	for _, res := range r.Results {
		t := res.Retention
		if t == nil {
			continue
		}
		cleaner := "off (SUNDIAL_SCHEDULER_RETENTION_INTERVAL=0)"
		if t.Cleaner {
			cleaner = "on (the defaults)"
		}
		fmt.Fprintf(w, "\nRetention, %s (%s): cleaner %s; %d expired hooks with %d attempts loaded in %.1f s (insert %.1f s on %d connections, VACUUM (ANALYZE) %.1f s)\n",
			res.Scenario, res.System, cleaner, t.Load.Hooks, t.Load.Attempts, t.Load.Seconds, t.Load.InsertSeconds, t.Load.Workers, t.Load.VacuumSeconds)
		fmt.Fprintf(w, "deleted hooks/attempts (passes): before the window %d/%d (%d), in the %.1f s window %d/%d (%d), after %d/%d (%d); left once stopped %d/%d\n",
			t.Before.Hooks, t.Before.Attempts, t.Before.Passes, t.WindowSeconds, t.Window.Hooks, t.Window.Attempts, t.Window.Passes,
			t.After.Hooks, t.After.Attempts, t.After.Passes, t.Remaining.Hooks, t.Remaining.Attempts)
		fmt.Fprintf(w, "load average (1, 5, 15 min): %s\n", strings.Join(t.LoadAverage, "; then "))
		if t.VsOff != nil {
			fmt.Fprintf(w, "lateness on / off: p50 %.2f, p99 %.2f, max %.2f\n", t.VsOff["lateP50"], t.VsOff["lateP99"], t.VsOff["lateMax"])
		}
		printGoals(w, t.Goals)
	}
}
