package sequencer

import (
	"time"

	"github.com/sundial-run/sundial/pkg/calendar"
)

// Bounds of one sequence's scan.
const (
	// MaxCatchUp bounds the missed slots catchUp = all starts in one scan:
	// the latest MaxCatchUp, oldest first; older ones are skipped.
	MaxCatchUp = 100
	// maxSlots bounds the due slots one scan of a sequence reads. A
	// sequence with more due (a long outage) has its oldest
	// maxSlots-MaxCatchUp recorded as skipped and stays due, so the next
	// scan goes on from there: those slots are missed whatever the policy,
	// since more than MaxCatchUp slots follow them.
	maxSlots = 2 * MaxCatchUp
	// onTime is how recent the latest slot must be to run under catchUp =
	// none.
	onTime = time.Minute
)

// Catch-up and overlap policies (migration 00016).
const (
	catchUpLatest = "latest"
	catchUpAll    = "all"
	catchUpNone   = "none"
	overlapSkip   = "skip"
)

// Skip reasons of a skipped run.
const (
	reasonCatchUp = "catch_up"
	reasonOverlap = "overlap"
)

// due is what planning a sequence's scan needs of it.
type due struct {
	timetable calendar.Timetable
	nextRunAt time.Time
	catchUp   string
	overlap   string
	// running: a run of the sequence is unfinished.
	running bool
}

// slotRun is a slot the scan records: started, or skipped for skipReason.
type slotRun struct {
	slot       time.Time
	skipReason string
}

// slotPlan is what a scan does to a sequence.
type slotPlan struct {
	runs []slotRun
	// next is the next slot to handle; ended: there is none.
	next  time.Time
	ended bool
	// behind: more slots are due than one scan reads; next is one of them.
	behind bool
}

// plan decides, by the rules of docs/sequences.md ("Catch-up",
// "Overlap"), which of the slots due by now (from d.nextRunAt on) start a
// run and which are skipped, and where the sequence goes next.
func plan(d due, now time.Time) slotPlan {
	slots := d.timetable.Slots(d.nextRunAt, now.Add(time.Nanosecond), maxSlots+1)
	if len(slots) > maxSlots {
		missed := slots[:maxSlots-MaxCatchUp]
		p := slotPlan{next: slots[len(missed)], behind: true}
		for _, s := range missed {
			p.runs = append(p.runs, slotRun{slot: s, skipReason: reasonCatchUp})
		}
		return p
	}
	var p slotPlan
	start := starts(d.catchUp, slots, now)
	running := d.running
	for i, s := range slots {
		r := slotRun{slot: s, skipReason: reasonCatchUp}
		if start(i) {
			r.skipReason = ""
			if running && d.overlap == overlapSkip {
				r.skipReason = reasonOverlap
			}
			running = true
		}
		p.runs = append(p.runs, r)
	}
	next, ok := d.timetable.Next(now)
	p.next, p.ended = next, !ok
	return p
}

// starts says, by the catch-up policy, which of the due slots start a run.
// A single due slot is on time whatever the policy.
func starts(catchUp string, slots []time.Time, now time.Time) func(i int) bool {
	n := len(slots)
	switch {
	case n == 1:
		return func(int) bool { return true }
	case catchUp == catchUpAll:
		return func(i int) bool { return i >= n-MaxCatchUp }
	case catchUp == catchUpNone:
		return func(i int) bool { return i == n-1 && now.Sub(slots[i]) < onTime }
	default: // latest
		return func(i int) bool { return i == n-1 }
	}
}
