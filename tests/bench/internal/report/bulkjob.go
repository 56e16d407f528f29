package report

import (
	"fmt"
	"io"

	"github.com/sundial-run/sundial/tests/bench/internal/stats"
)

// BulkJob is the bulk-job scenario's figures: a cancel job over Rows
// far-future hooks loaded before the services started, created during a
// plain flow whose lateness it must not spoil. The Result's Check covers
// the flow.
type BulkJob struct {
	// Rows are the far-future hooks loaded; the job's range holds them and
	// the calibration's hooks, due in a year too.
	Rows int    `json:"rows"`
	ID   string `json:"id,omitempty"`
	// State is the job's last state seen: completed, or what it was when
	// the run stopped waiting. ErrorCode and Error are a failed job's.
	State     string `json:"state"`
	ErrorCode string `json:"errorCode,omitempty"`
	Error     string `json:"error,omitempty"`
	// Total is the selection counted at creation, Selected the hooks the
	// batches read, Affected those they cancelled (deleted).
	Total    int64 `json:"total"`
	Selected int64 `json:"selected"`
	Affected int64 `json:"affected"`
	Batches  int64 `json:"batches"`
	// StartMs and EndMs place the job in the flow: its createdAt and
	// finishedAt (the API's) after the flow's first postAt.
	// DurationSeconds is finishedAt - createdAt; WallSeconds runs from
	// sending the create to reading the ended job (within a poll of its
	// end). HooksPerSecond is Affected over DurationSeconds.
	StartMs         float64 `json:"startMs"`
	EndMs           float64 `json:"endMs"`
	DurationSeconds float64 `json:"durationSeconds"`
	WallSeconds     float64 `json:"wallSeconds"`
	HooksPerSecond  float64 `json:"hooksPerSecond"`
	// Polls counts the reads of the job, PollErrors those that failed
	// (the run went on polling).
	Polls      int `json:"polls"`
	PollErrors int `json:"pollErrors"`
	// Flow is the lateness of the plain flow's first arrivals, FlowRate
	// hooks/s due for FlowSeconds; During that of the flow hooks due
	// between the job's creation and its end, Outside the others'.
	// FlowEndedFirst says the flow's last hook was due before the job
	// ended: During then covers the flow's part of the job only.
	Flow           stats.Summary `json:"flow"`
	During         stats.Summary `json:"during"`
	Outside        stats.Summary `json:"outside"`
	FlowRate       int           `json:"flowRate"`
	FlowSeconds    int           `json:"flowSeconds"`
	FlowEndedFirst bool          `json:"flowEndedFirst,omitempty"`
	// SteadyP99Ms is the same run's steady p99 (the same system), when it
	// ran and passed; DuringVsSteadyP99 is During's p99 over it.
	SteadyP99Ms       float64 `json:"steadyP99Ms,omitempty"`
	DuringVsSteadyP99 float64 `json:"duringVsSteadyP99,omitempty"`
}

// OK says the job completed and cancelled every hook it selected, and it
// selected at least every hook loaded.
func (b *BulkJob) OK() bool {
	return b.State == "completed" && b.Affected == b.Selected && b.Selected >= int64(b.Rows)
}

// Problems says why the job is not OK, for the row's notes.
func (b *BulkJob) Problems() []string {
	var out []string
	if b.State != "completed" {
		out = append(out, fmt.Sprintf("the bulk job ended %q, not completed", b.State))
	}
	if b.Affected != b.Selected {
		out = append(out, fmt.Sprintf("the bulk job cancelled %d of the %d hooks it selected", b.Affected, b.Selected))
	}
	if b.Selected < int64(b.Rows) {
		out = append(out, fmt.Sprintf("the bulk job selected %d hooks, fewer than the %d loaded", b.Selected, b.Rows))
	}
	return out
}

// CompareBulkJob sets, on each bulk-job row, the same run's steady p99
// of the same system and the ratio of the flow's p99 during the job to
// it, when steady ran and passed.
func CompareBulkJob(results []Result) {
	for i := range results {
		b := results[i].BulkJob
		if b == nil {
			continue
		}
		for _, r := range results {
			if r.System == results[i].System && r.OK && r.Scenario == "steady" {
				b.SteadyP99Ms = r.Check.Lateness.P99Ms
				b.DuringVsSteadyP99 = ratio(b.During.P99Ms, r.Check.Lateness.P99Ms)
			}
		}
	}
}

func (r Report) printBulkJob(w io.Writer) {
	for _, res := range r.Results {
		b := res.BulkJob
		if b == nil {
			continue
		}
		fmt.Fprintf(w, "\nBulk job (%s): cancel over %d far-future hooks, beside %d plain hooks/s for %d s\n",
			res.System, b.Rows, b.FlowRate, b.FlowSeconds)
		failure := ""
		if b.ErrorCode != "" || b.Error != "" {
			failure = fmt.Sprintf(" (%s: %s)", b.ErrorCode, b.Error)
		}
		fmt.Fprintf(w, "job: %s%s; total %d, selected %d, affected %d, %d batches; %.1f s (createdAt to finishedAt; %.1f s wall), %.0f hooks/s; from %.1f s to %.1f s of the flow; %d polls, %d failed\n",
			b.State, failure, b.Total, b.Selected, b.Affected, b.Batches, b.DurationSeconds, b.WallSeconds, b.HooksPerSecond,
			b.StartMs/1000, b.EndMs/1000, b.Polls, b.PollErrors)
		vsSteady := "-"
		if b.SteadyP99Ms > 0 {
			vsSteady = fmt.Sprintf("%.2fx steady's %.1f ms", b.DuringVsSteadyP99, b.SteadyP99Ms)
		}
		ended := ""
		if b.FlowEndedFirst {
			ended = "; the flow ended before the job"
		}
		f, d, o := b.Flow, b.During, b.Outside
		fmt.Fprintf(w, "flow: lateness p50 %.1f ms, p99 %.1f ms, max %.1f ms; the %d due while the job ran: p50 %.1f ms, p99 %.1f ms (%s), max %.1f ms; the %d others: p50 %.1f ms, p99 %.1f ms, max %.1f ms%s\n",
			f.P50Ms, f.P99Ms, f.MaxMs, d.Count, d.P50Ms, d.P99Ms, vsSteady, d.MaxMs, o.Count, o.P50Ms, o.P99Ms, o.MaxMs, ended)
	}
}
