package report

import (
	"fmt"
	"io"
)

// Crash is the crash scenario's figures: a burst during which the
// dispatcher is killed with SIGKILL and started again.
type Crash struct {
	// Process is what was killed.
	Process string `json:"process"`
	// KilledMs and RestartedMs are when it was killed and when the new
	// process was started, ReadyMs when it said it was ready, all after
	// the burst's instant.
	KilledMs    float64 `json:"killedMs"`
	RestartedMs float64 `json:"restartedMs"`
	ReadyMs     float64 `json:"readyMs"`
	// ArrivedBeforeKill counts the hooks that had arrived when it was
	// killed.
	ArrivedBeforeKill int    `json:"arrivedBeforeKill"`
	Goals             []Goal `json:"goals"`
}

// crashGoalMs is issue 41's bound on the burst's lateness p99 with the
// dispatcher killed in it.
const crashGoalMs = 5000

// CrashGoals is the crash row's goal.
func CrashGoals(res Result) []Goal {
	return []Goal{{
		What: "crash recovery p99", Target: fmt.Sprintf("<= %d s", crashGoalMs/1000),
		Value: res.Check.Lateness.P99Ms / 1000, Unit: "s",
		Met: res.Check.Delivered > 0 && res.Check.Lateness.P99Ms <= crashGoalMs,
	}}
}

func (r Report) printCrash(w io.Writer) {
	for _, res := range r.Results {
		x := res.Crash
		if x == nil {
			continue
		}
		c := res.Check
		fmt.Fprintf(w, "\nCrash (%s): %s killed (SIGKILL) %.0f ms after the instant of %d hooks, %d of them arrived by then; started again at %.0f ms, ready at %.0f ms\n",
			res.System, x.Process, x.KilledMs, res.Hooks, x.ArrivedBeforeKill, x.RestartedMs, x.ReadyMs)
		fmt.Fprintf(w, "lost %d, early %d, duplicates %d (%d hooks, %d of them more than once), lateness p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
			c.Missing, c.Early, c.Duplicates, c.DuplicatedHooks, c.MultiDuplicatedHooks, c.Lateness.P50Ms, c.Lateness.P99Ms, c.Lateness.MaxMs)
		printGoals(w, x.Goals)
	}
}
