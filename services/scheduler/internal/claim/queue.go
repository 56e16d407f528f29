package claim

import (
	"container/heap"
	"time"

	"github.com/google/uuid"
)

// The Window's queue: the near-due hooks by run_at, in two lanes, plain
// hooks and hooks with an ordering key, each a min-heap, with what each id
// waits for beside them (Window.queued). A heap may hold stale entries for
// an id (queued again for another run_at or lane); queued tells them
// apart.
//
// Lanes keep ordering keys from holding other traffic behind them
// (docs/choices.md, "Ordering keys"). A key's next hook falls due when
// its predecessor finishes, so 10,000 keys with work left keep about
// 10,000 keyed hooks due, all of them earlier than a plain hook that falls
// due now. In one queue by run_at that hook waits for all of them whenever
// the claims are held back (admission.go); with lanes each claim takes the
// two in turn, so each gets at least half of the room while both wait,
// and either gets all of it while the other is empty.

// lane is one of the Window's queues.
type lane int

const (
	plainLane lane = iota
	keyedLane
	lanes
)

// laneOf is the lane of a hook with an ordering key or without.
func laneOf(keyed bool) lane {
	if keyed {
		return keyedLane
	}
	return plainLane
}

// dueEntry is one queued hook.
type dueEntry struct {
	id    uuid.UUID
	runAt time.Time
	lane  lane
}

// dueQueue is a min-heap of entries by run_at (container/heap).
type dueQueue []dueEntry

func (q dueQueue) Len() int           { return len(q) }
func (q dueQueue) Less(i, j int) bool { return q[i].runAt.Before(q[j].runAt) }
func (q dueQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *dueQueue) Push(x any)        { *q = append(*q, x.(dueEntry)) }
func (q *dueQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// add queues a hook unless it is already queued for the same run_at in
// the same lane.
func (w *Window) add(id uuid.UUID, runAt time.Time, keyed bool) {
	e := dueEntry{id: id, runAt: runAt, lane: laneOf(keyed)}
	if w.live(e) {
		return
	}
	w.queued[id] = e
	heap.Push(&w.queues[e.lane], e)
}

// live reports whether e is what its id waits for, not a stale entry.
func (w *Window) live(e dueEntry) bool {
	q, ok := w.queued[e.id]
	return ok && q.lane == e.lane && q.runAt.Equal(e.runAt)
}

// head is lane l's first live entry; it drops the stale entries before it.
func (w *Window) head(l lane) (dueEntry, bool) {
	q := &w.queues[l]
	for q.Len() > 0 {
		if e := (*q)[0]; w.live(e) {
			return e, true
		}
		heap.Pop(q)
	}
	return dueEntry{}, false
}

// first is the queued hook due soonest, of either lane.
func (w *Window) first() (dueEntry, bool) {
	var out dueEntry
	found := false
	for l := range lanes {
		if e, ok := w.head(l); ok && (!found || e.runAt.Before(out.runAt)) {
			out, found = e, true
		}
	}
	return out, found
}

// popDue takes up to limit claimable ids off the queue, from the two lanes
// in turn while both have some.
func (w *Window) popDue(limit int) []uuid.UUID {
	horizon := w.claimHorizon()
	var ids []uuid.UUID
	turn := plainLane
	for len(ids) < limit {
		l, ok := w.dueLane(turn, horizon)
		if !ok {
			break
		}
		e := heap.Pop(&w.queues[l]).(dueEntry)
		delete(w.queued, e.id)
		ids = append(ids, e.id)
		turn = (l + 1) % lanes
	}
	return ids
}

// dueLane is the lane whose turn it is if its head is claimable, else the
// other if its head is.
func (w *Window) dueLane(turn lane, horizon time.Time) (lane, bool) {
	for i := range lanes {
		l := (turn + i) % lanes
		if e, ok := w.head(l); ok && !e.runAt.After(horizon) {
			return l, true
		}
	}
	return 0, false
}
