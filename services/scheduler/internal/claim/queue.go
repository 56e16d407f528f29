package claim

import (
	"container/heap"
	"time"

	"github.com/google/uuid"
)

// The Window's queue: the near-due hooks by run_at, a min-heap with the
// run_at each id waits for beside it (Window.runAt). The heap may hold
// stale entries for an id (queued again for another run_at); runAt tells
// them apart.

// dueEntry is one queued hook.
type dueEntry struct {
	id    uuid.UUID
	runAt time.Time
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

// add queues a hook unless it is already queued for the same run_at.
func (w *Window) add(id uuid.UUID, runAt time.Time) {
	if prev, ok := w.runAt[id]; ok && prev.Equal(runAt) {
		return
	}
	w.runAt[id] = runAt
	heap.Push(&w.queue, dueEntry{id: id, runAt: runAt})
}

// popDue takes up to limit claimable ids off the queue.
func (w *Window) popDue(limit int) []uuid.UUID {
	horizon := w.claimHorizon()
	var ids []uuid.UUID
	for len(w.queue) > 0 && len(ids) < limit && !w.queue[0].runAt.After(horizon) {
		e := heap.Pop(&w.queue).(dueEntry)
		if at, ok := w.runAt[e.id]; !ok || !at.Equal(e.runAt) {
			continue // superseded by a later add, or already claimed
		}
		delete(w.runAt, e.id)
		ids = append(ids, e.id)
	}
	return ids
}
