package check

import (
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/tests/bench/internal/stats"
)

// Place is a keyed hook's place in its key's line: Seq 0 is delivered
// first, then 1, and so on.
type Place struct {
	Key int
	Seq int
}

// Order is how the arrivals of keyed hooks kept their keys' order.
type Order struct {
	Keys int `json:"keys"`
	// OutOfOrder counts arrivals of a hook after a later hook of its key
	// had arrived (a repeat of an earlier hook included); Skipped counts
	// arrivals of a hook before its predecessor had arrived once.
	// KeysViolated counts the keys with at least one of either.
	OutOfOrder   int `json:"outOfOrder"`
	Skipped      int `json:"skipped"`
	KeysViolated int `json:"keysViolated"`
	// Handoff is, for every hook but a key's first, its first arrival
	// minus its predecessor's: how long a key waits between two
	// deliveries.
	Handoff stats.Summary `json:"handoff"`
}

// Violations is every arrival out of its key's order.
func (o Order) Violations() int { return o.OutOfOrder + o.Skipped }

// CheckOrder walks each key's arrivals (repeats included) in the order
// they arrived: an arrival of a hook whose predecessor has not arrived yet
// is Skipped, else one of a hook behind one already arrived is OutOfOrder.
// Arrivals of hooks not in places are left out.
func CheckOrder(places map[uuid.UUID]Place, arrivals []Arrival) Order {
	byKey := map[int][]Arrival{}
	for _, a := range arrivals {
		if p, ok := places[a.ID]; ok {
			byKey[p.Key] = append(byKey[p.Key], a)
		}
	}
	keys := map[int]bool{}
	for _, p := range places {
		keys[p.Key] = true
	}
	o := Order{Keys: len(keys)}
	var handoffs []time.Duration
	for _, got := range byKey {
		// Stable: the receiver records arrivals in the order they came,
		// and two of the same instant keep it.
		slices.SortStableFunc(got, func(a, b Arrival) int { return a.At.Compare(b.At) })
		first := map[int]time.Time{}
		latest, violated := -1, false
		for _, a := range got {
			seq := places[a.ID].Seq
			_, before := first[seq-1]
			switch {
			case seq > 0 && !before:
				o.Skipped++
				violated = true
			case seq < latest:
				o.OutOfOrder++
				violated = true
			}
			if _, seen := first[seq]; !seen {
				first[seq] = a.At
				if before {
					handoffs = append(handoffs, a.At.Sub(first[seq-1]))
				}
			}
			latest = max(latest, seq)
		}
		if violated {
			o.KeysViolated++
		}
	}
	o.Handoff = stats.Summarize(handoffs)
	return o
}
