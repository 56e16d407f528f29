// Package check compares what was scheduled with what the receiver saw:
// every hook delivered, none early, duplicates counted, and the lateness of
// each hook's first arrival.
package check

import (
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/tests/bench/internal/stats"
)

// Hook is one scheduled hook, as the API answered.
type Hook struct {
	ID     uuid.UUID
	PostAt time.Time
}

// Arrival is one request the receiver recorded: a hook id and its
// wall-clock arrival instant.
type Arrival struct {
	ID uuid.UUID
	At time.Time
}

// Outcome is the comparison.
type Outcome struct {
	Scheduled int `json:"scheduled"`
	// Delivered counts scheduled hooks that arrived at least once.
	Delivered int `json:"delivered"`
	Missing   int `json:"missing"`
	// Duplicates counts arrivals beyond each hook's first;
	// DuplicatedHooks the hooks that arrived more than once, and
	// MultiDuplicatedHooks those that arrived more than twice.
	Duplicates           int `json:"duplicates"`
	DuplicatedHooks      int `json:"duplicatedHooks"`
	MultiDuplicatedHooks int `json:"multiDuplicatedHooks"`
	// Unknown counts arrivals of ids that were not scheduled.
	Unknown int `json:"unknown"`
	// Early counts arrivals (first or not) before their hook's postAt.
	Early int `json:"early"`
	// Lateness is first arrival minus postAt, per delivered hook.
	Lateness stats.Summary `json:"lateness"`
	// LateSpread is how the hooks later than LateBound fall over the run.
	LateSpread Spread `json:"lateSpread"`
	// FirstPostAt and LastPostAt bound the scheduled instants; FirstArrival
	// and LastArrival the first arrivals of scheduled hooks.
	FirstPostAt  time.Time `json:"firstPostAt"`
	LastPostAt   time.Time `json:"lastPostAt"`
	FirstArrival time.Time `json:"firstArrival"`
	LastArrival  time.Time `json:"lastArrival"`
	// latenesses are kept for callers that need more than the summary.
	latenesses []time.Duration
	firsts     []time.Time
}

// Complete says whether every scheduled hook arrived.
func (o Outcome) Complete() bool { return o.Missing == 0 }

// FirstArrivals returns each delivered hook's first arrival instant, in no
// particular order.
func (o Outcome) FirstArrivals() []time.Time { return o.firsts }

// Compare matches arrivals to hooks.
func Compare(hooks []Hook, arrivals []Arrival) Outcome {
	o := Outcome{Scheduled: len(hooks)}
	postAt := make(map[uuid.UUID]time.Time, len(hooks))
	for _, h := range hooks {
		postAt[h.ID] = h.PostAt
		if o.FirstPostAt.IsZero() || h.PostAt.Before(o.FirstPostAt) {
			o.FirstPostAt = h.PostAt
		}
		if h.PostAt.After(o.LastPostAt) {
			o.LastPostAt = h.PostAt
		}
	}
	first := make(map[uuid.UUID]time.Time, len(hooks))
	extra := map[uuid.UUID]int{}
	for _, a := range arrivals {
		due, ok := postAt[a.ID]
		if !ok {
			o.Unknown++
			continue
		}
		if a.At.Before(due) {
			o.Early++
		}
		if prev, seen := first[a.ID]; seen {
			o.Duplicates++
			extra[a.ID]++
			switch extra[a.ID] {
			case 1:
				o.DuplicatedHooks++
			case 2:
				o.MultiDuplicatedHooks++
			}
			if a.At.Before(prev) {
				first[a.ID] = a.At
			}
			continue
		}
		first[a.ID] = a.At
	}
	o.Delivered = len(first)
	o.Missing = len(hooks) - len(first)
	o.latenesses = make([]time.Duration, 0, len(first))
	o.firsts = make([]time.Time, 0, len(first))
	dues := make([]time.Time, 0, len(first))
	for id, at := range first {
		o.latenesses = append(o.latenesses, at.Sub(postAt[id]))
		dues = append(dues, postAt[id])
		o.firsts = append(o.firsts, at)
		if o.FirstArrival.IsZero() || at.Before(o.FirstArrival) {
			o.FirstArrival = at
		}
		if at.After(o.LastArrival) {
			o.LastArrival = at
		}
	}
	o.Lateness = stats.Summarize(o.latenesses)
	o.LateSpread = spread(o.FirstPostAt, o.LastPostAt, dues, o.latenesses)
	return o
}
