// Package checker compares the hooks Sundial accepted with what a receiver
// saw arrive, and reports every way the two disagree: hooks lost, arrivals
// nobody scheduled, duplicates and deliveries before their time. It is pure
// logic, so that the crash and end-to-end suites judge their runs the same
// way and the judgement itself is unit-tested.
package checker

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Arrival is one request as the receiver recorded it.
type Arrival struct {
	// ID is the Sundial-Id header.
	ID string
	// At is the receiver's clock when the request arrived.
	At time.Time
	// PostAt is the postAt of the delivered body.
	PostAt time.Time
	// Timestamp is the Sundial-Timestamp header (Unix seconds, the
	// dispatcher's clock when it signed the request).
	Timestamp int64
}

// Early is an arrival before its hook's postAt.
type Early struct {
	Arrival
	// PostAt is the hook's postAt the arrival was judged against: the one
	// the API answered with when the hook was accepted.
	PostAt time.Time
	// By is how early it came (by the receiver's clock, or by the
	// signature's timestamp when Signed).
	By time.Duration
	// Signed says the signature's timestamp, not the arrival, was early.
	Signed bool
}

// Report is the comparison of one run.
type Report struct {
	Accepted int
	Arrivals int
	// Lost are accepted hooks that never arrived, sorted.
	Lost []string
	// Unknown are ids that arrived but were never accepted, sorted.
	Unknown []string
	// Duplicates maps an accepted id to the arrivals beyond its first
	// (an unknown id is wrong however often it arrives).
	Duplicates map[string]int
	// Early lists the deliveries made before their postAt.
	Early []Early
}

// TotalDuplicates is the number of arrivals beyond the first of each id.
func (r Report) TotalDuplicates() int {
	n := 0
	for _, d := range r.Duplicates {
		n += d
	}
	return n
}

// DuplicateArrivals returns, for each id that arrived more than once, the
// times of its arrivals in order.
func (r Report) DuplicateArrivals(arrivals []Arrival) map[string][]time.Time {
	times := map[string][]time.Time{}
	for _, a := range arrivals {
		if r.Duplicates[a.ID] > 0 {
			times[a.ID] = append(times[a.ID], a.At)
		}
	}
	for _, ts := range times {
		slices.SortFunc(ts, func(x, y time.Time) int { return x.Compare(y) })
	}
	return times
}

// Check compares accepted (hook id to the postAt the API answered with)
// with the receiver's arrivals.
//
// An arrival is early when the receiver's clock read before the hook's
// postAt. No tolerance is allowed: the receiver, PostgreSQL and the
// services share this machine's clock, and the chain claim (database now()
// >= postAt) -> publish -> dispatch -> arrival is causal, so an honest
// delivery reads a later clock than the claim did. It is also early when
// the signature's timestamp, in whole seconds, is before postAt's second:
// the request was signed before the hook was due.
func Check(accepted map[string]time.Time, arrivals []Arrival) Report {
	r := Report{Accepted: len(accepted), Arrivals: len(arrivals), Duplicates: map[string]int{}}
	seen := make(map[string]int, len(arrivals))
	unknown := map[string]bool{}
	for _, a := range arrivals {
		seen[a.ID]++
		postAt, ok := accepted[a.ID]
		if !ok {
			unknown[a.ID] = true
			continue
		}
		if seen[a.ID] > 1 {
			r.Duplicates[a.ID]++
		}
		if a.At.Before(postAt) {
			r.Early = append(r.Early, Early{Arrival: a, PostAt: postAt, By: postAt.Sub(a.At)})
		} else if a.Timestamp < postAt.Unix() {
			r.Early = append(r.Early, Early{Arrival: a, PostAt: postAt, By: postAt.Sub(time.Unix(a.Timestamp, 0)), Signed: true})
		}
	}
	for id := range accepted {
		if seen[id] == 0 {
			r.Lost = append(r.Lost, id)
		}
	}
	for id := range unknown {
		r.Unknown = append(r.Unknown, id)
	}
	slices.Sort(r.Lost)
	slices.Sort(r.Unknown)
	return r
}

// Problems lists, in words, everything wrong with the run when at most
// maxDuplicates duplicate arrivals are allowed; empty means the run passed.
func (r Report) Problems(maxDuplicates int) []string {
	var p []string
	if len(r.Lost) > 0 {
		p = append(p, fmt.Sprintf("%d of %d accepted hooks never arrived, e.g. %s", len(r.Lost), r.Accepted, sample(r.Lost)))
	}
	if len(r.Unknown) > 0 {
		p = append(p, fmt.Sprintf("%d ids arrived that were never accepted, e.g. %s", len(r.Unknown), sample(r.Unknown)))
	}
	if d := r.TotalDuplicates(); d > maxDuplicates {
		p = append(p, fmt.Sprintf("%d duplicate arrivals over %d ids, more than the %d allowed", d, len(r.Duplicates), maxDuplicates))
	}
	if len(r.Early) > 0 {
		e := r.Early[0]
		what := "arrived"
		if e.Signed {
			what = "was signed"
		}
		p = append(p, fmt.Sprintf("%d deliveries came before their postAt, e.g. %s %s %s early (postAt %s)",
			len(r.Early), e.ID, what, e.By, e.PostAt.Format(time.RFC3339Nano)))
	}
	return p
}

// String summarises the report for a test's log.
func (r Report) String() string {
	return fmt.Sprintf("accepted %d, arrivals %d, lost %d, unknown %d, duplicates %d (over %d ids), early %d",
		r.Accepted, r.Arrivals, len(r.Lost), len(r.Unknown), r.TotalDuplicates(), len(r.Duplicates), len(r.Early))
}

func sample(ids []string) string {
	if len(ids) > 3 {
		return strings.Join(ids[:3], ", ") + ", ..."
	}
	return strings.Join(ids, ", ")
}
