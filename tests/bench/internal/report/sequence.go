package report

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"

	"github.com/sundial-run/sundial/tests/bench/internal/load"
	"github.com/sundial-run/sundial/tests/bench/internal/stats"
)

// Sequence is the figures of the sequence scenarios: one of Due, Memory
// and Preview is set, by scenario, and the goals of that scenario.
type Sequence struct {
	Due     *SequenceDue     `json:"due,omitempty"`
	Memory  *SequenceMemory  `json:"memory,omitempty"`
	Preview *SequencePreview `json:"preview,omitempty"`
	// Goals are the goals, each against its figure. A goal not
	// met does not fail the run: the figures move with the machine.
	Goals []Goal `json:"goals"`
}

// SequenceDue is the sequences scenario: many sequences whose next slot is
// the same instant, each with one root step delivered to the receiver.
// The delivery figures (lateness from the slot, deliveries/s) are the
// Result's.
type SequenceDue struct {
	Sequences int       `json:"sequences"`
	Schedule  string    `json:"schedule"`
	Slot      time.Time `json:"slot"`
	// Created says how the sequences were stored: "api" (all through POST
	// /v1/sequences) or "direct" (one through the API, the others copied
	// from its row by SQL: admin.sql clone-sequences), and APICreate is the
	// API's create rate measured first in either case.
	Created       string       `json:"created"`
	APICreate     load.Created `json:"apiCreate"`
	DirectSeconds float64      `json:"directSeconds,omitempty"`
	// RunsStarted counts the slot's scheduled runs; RunStart is each run's
	// started_at (the transaction that created its root hook) minus the
	// slot, by the database clock.
	RunsStarted int           `json:"runsStarted"`
	RunStart    stats.Summary `json:"runStart"`
	// BurstDeliveriesPerSecond is the same run's burst figure (plain
	// hooks), when it ran, and DeliveriesVsBurst the ratio.
	BurstDeliveriesPerSecond float64 `json:"burstDeliveriesPerSecond,omitempty"`
	DeliveriesVsBurst        float64 `json:"deliveriesVsBurst,omitempty"`
}

// SequenceMemory is the scheduler's peak RSS (VmHWM of a freshly started
// scheduler, over a window of plain hooks) with no sequences, then with
// Rows far-future sequences.
type SequenceMemory struct {
	Rows          int     `json:"rows"`
	WindowSeconds int     `json:"windowSeconds"`
	HooksPerSec   int     `json:"hooksPerSecond"`
	LoadSeconds   float64 `json:"loadSeconds"`
	EmptyMiB      float64 `json:"emptyMiB"`
	LoadedMiB     float64 `json:"loadedMiB"`
	// Ratio is LoadedMiB over EmptyMiB.
	Ratio float64 `json:"ratio"`
	// EmptyLateP99Ms and LoadedLateP99Ms are the windows' hooks' lateness
	// p99 (first arrival - postAt), for reference.
	EmptyLateP99Ms  float64 `json:"emptyLateP99Ms"`
	LoadedLateP99Ms float64 `json:"loadedLateP99Ms"`
}

// SequencePreview times the previews against the gateway, one request
// after another.
type SequencePreview struct {
	Schedule string `json:"schedule"`
	Count    int    `json:"count"`
	// Schedule is POST /v1/sequences/preview (nothing read), Stored GET
	// /v1/sequences/{id}/preview (one indexed read).
	Stateless load.Timed `json:"stateless"`
	Stored    load.Timed `json:"stored"`
}

func (r Report) printSequences(w io.Writer) {
	for _, res := range r.Results {
		s := res.Sequence
		if s == nil {
			continue
		}
		switch {
		case s.Due != nil:
			d, c := s.Due, res.Check
			fmt.Fprintf(w, "\nSequences due at one slot (%s; %d sequences, %s, created %s; API %.0f sequences/s):\n",
				res.System, d.Sequences, d.Schedule, d.Created, d.APICreate.PerSecond)
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "runs\trun start p50 ms\tp99 ms\tall started s\tdelivered\tdup\tearly\tlate p50 ms\tp99 ms\tmax ms\tall in s\tdeliv/s\tburst deliv/s\tok\t")
			burst := "-"
			if d.BurstDeliveriesPerSecond > 0 {
				burst = fmt.Sprintf("%.0f", d.BurstDeliveriesPerSecond)
			}
			fmt.Fprintf(tw, "%d\t%.1f\t%.1f\t%.2f\t%d\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.2f\t%.0f\t%s\t%v\t\n",
				d.RunsStarted, d.RunStart.P50Ms, d.RunStart.P99Ms, d.RunStart.MaxMs/1000, c.Delivered, c.Duplicates, c.Early,
				c.Lateness.P50Ms, c.Lateness.P99Ms, c.Lateness.MaxMs, res.AllDeliveredSeconds, res.DeliveriesPerSecond,
				burst, res.OK)
			_ = tw.Flush()
		case s.Memory != nil:
			m := s.Memory
			fmt.Fprintf(w, "\nScheduler memory with sequences (%s; VmHWM of a fresh scheduler over %d s of %d hooks/s): %.1f MiB with none, %.1f MiB with %d (x%.3f; loaded in %.1f s); hooks' lateness p99 %.1f / %.1f ms\n",
				res.System, m.WindowSeconds, m.HooksPerSec, m.EmptyMiB, m.LoadedMiB, m.Rows, m.Ratio, m.LoadSeconds, m.EmptyLateP99Ms, m.LoadedLateP99Ms)
		case s.Preview != nil:
			p := s.Preview
			fmt.Fprintf(w, "\nSequence preview (%s; count=%d, %s, sequential requests to the gateway):\n", res.System, p.Count, p.Schedule)
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "request\trequests\tp50 ms\tp90 ms\tp99 ms\tmax ms\terrors\t")
			for _, row := range []struct {
				name string
				t    load.Timed
			}{{"POST /v1/sequences/preview", p.Stateless}, {"GET /v1/sequences/{id}/preview", p.Stored}} {
				l := row.t.Latency
				fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t\n", row.name, row.t.Requests, l.P50Ms, l.P90Ms, l.P99Ms, l.MaxMs, formatErrors(row.t.Errors))
			}
			_ = tw.Flush()
		}
		for _, g := range s.Goals {
			met := "met"
			if !g.Met {
				met = "NOT met"
			}
			fmt.Fprintf(w, "goal: %s %s: %.2f %s, %s\n", g.What, g.Target, g.Value, g.Unit, met)
		}
	}
}

// burstGoal is how close to the burst's rate the sequences' root hooks
// must be delivered to be "at the burst rate".
const burstGoal = 0.9

// CompareSequencesWithBurst sets, on the sequences row, the same run's
// burst deliveries/s (plain hooks) and the ratio, with its goal; without a
// burst row the figure is reported alone.
func CompareSequencesWithBurst(results []Result) {
	burst := map[string]float64{}
	for _, r := range results {
		if r.Scenario == "burst" && r.OK {
			burst[r.System] = r.DeliveriesPerSecond
		}
	}
	for i := range results {
		r := &results[i]
		if r.Sequence == nil || r.Sequence.Due == nil {
			continue
		}
		b, ok := burst[r.System]
		if !ok || b == 0 {
			continue
		}
		d := r.Sequence.Due
		d.BurstDeliveriesPerSecond = b
		d.DeliveriesVsBurst = math.Round(r.DeliveriesPerSecond/b*100) / 100
		r.Sequence.Goals = append(r.Sequence.Goals, Goal{What: "root hooks delivered per second over the burst's (plain hooks, same run)",
			Target: fmt.Sprintf("at least %.1f", burstGoal), Value: d.DeliveriesVsBurst, Unit: "x", Met: d.DeliveriesVsBurst >= burstGoal})
	}
}
