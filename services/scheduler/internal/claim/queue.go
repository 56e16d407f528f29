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
// the claims are held back (admission.go); with lanes the claims take the
// two in turn, so each gets at least half of them while both wait, and
// either gets all of them while the other is empty. A claim holds one
// lane's hooks, and neither lane holds every claim in flight: a keyed
// claim, which takes its keys and may wait on their rows, never holds up
// a plain hook.

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

// laneClaims is how many of the claims in flight one lane may hold: all
// but one, so that a lane whose claims are slow (a keyed claim takes its
// keys and waits on their rows) always leaves a claim to the other.
func (w *Window) laneClaims() int { return max(w.cfg.claims()-1, 1) }

// slotFree reports whether lane l may start a claim now.
func (w *Window) slotFree(l lane) bool {
	return w.claiming[plainLane]+w.claiming[keyedLane] < w.cfg.claims() && w.claiming[l] < w.laneClaims()
}

// dueLane is the lane to start a claim of: the one whose turn it is if its
// first hook's claimStart has come and it may start a claim, else the
// other if so.
func (w *Window) dueLane() (lane, bool) {
	for i := range lanes {
		l := (w.turn + i) % lanes
		if e, ok := w.head(l); ok && w.slotFree(l) && !w.claimStart(e.runAt).After(w.now()) {
			return l, true
		}
	}
	return 0, false
}

// nextClaimStart is the earliest instant a claim may start: the first
// claimStart of the lanes that may start one.
func (w *Window) nextClaimStart() (time.Time, bool) {
	var at time.Time
	found := false
	for l := range lanes {
		e, ok := w.head(l)
		if !ok || !w.slotFree(l) {
			continue
		}
		if s := w.claimStart(e.runAt); !found || s.Before(at) {
			at, found = s, true
		}
	}
	return at, found
}

// popDue takes up to limit of lane l's claimable ids off the queue (every
// one due within ClaimAhead), and gives the next turn to the other lane.
// A claim holds one lane's hooks only, so that a plain hook never waits
// for a keyed claim's statement.
func (w *Window) popDue(l lane, limit int) []uuid.UUID {
	horizon := w.claimHorizon()
	var ids []uuid.UUID
	for len(ids) < limit {
		e, ok := w.head(l)
		if !ok || e.runAt.After(horizon) {
			break
		}
		heap.Pop(&w.queues[l])
		delete(w.queued, e.id)
		ids = append(ids, e.id)
	}
	w.turn = (l + 1) % lanes
	return ids
}
