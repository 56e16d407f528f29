package claim

import (
	"context"

	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// Prefetch reads. Every WindowConfig.Refresh, and whenever the listener
// asks (it reconnected, or could not hand a notification over), the Window
// reads the hooks due within WindowConfig.Ahead from hooks_due_idx and
// queues them. The read runs on a goroutine of its own and reports on
// Window.loaded, so that reading thousands of ids never holds back the
// claim of a hook that comes due meanwhile.

// maxPrefetch bounds the hooks one prefetch read loads in each lane
// (queue.go); beyond it (a burst larger than this due within the window)
// the safety poll, which claims full batches back to back, takes over.
const maxPrefetch = 20000

// loaded is what one prefetch read found.
type loaded struct {
	rows  []store.PrefetchDueHooksRow
	clock clockSample
	err   error
}

// startPrefetch starts a prefetch read unless one is running; then that
// one is followed by another, since the ask may be for hooks it missed. A
// lane with a backlog is not read (backlogged), and a window with one in
// each lane reads nothing.
func (w *Window) startPrefetch(ctx context.Context) {
	var limits [lanes]int32
	for l := range lanes {
		if !w.backlogged(l) {
			limits[l] = maxPrefetch
		}
	}
	if limits == [lanes]int32{} {
		return
	}
	if w.prefetching {
		w.prefetchAgain = true
		return
	}
	w.prefetching = true
	w.workers.Go(func() { w.loaded <- w.prefetch(ctx, limits) })
}

// backlogged reports whether lane l already holds a read's worth of hooks
// (maxPrefetch) and the first of them is due: its claims are behind. A
// read of it then returns, earliest first, hooks due no sooner than those
// the lane holds; in a burst, mostly the very hooks it holds, read again
// and again for nothing at a visible cost to PostgreSQL. Any hook a read
// would add that the window lacks (a notification lost) the poll claims as
// soon, since while claims fill their batches the poll runs back to back.
// Reads of the lane resume once its backlog is below a read's worth. The
// count includes stale entries, which the lane drops as they reach its
// head.
func (w *Window) backlogged(l lane) bool {
	if len(w.queues[l]) < maxPrefetch {
		return false
	}
	e, ok := w.head(l)
	return ok && !w.claimStart(e.runAt).After(w.now())
}

// prefetch reads the hooks due within the window, up to limits of each lane.
func (w *Window) prefetch(ctx context.Context, limits [lanes]int32) loaded {
	sent := w.now()
	rows, err := w.queries.PrefetchDueHooks(ctx, store.PrefetchDueHooksParams{
		WindowSeconds: w.cfg.Ahead.Seconds(),
		PlainMax:      limits[plainLane],
		KeyedMax:      limits[keyedLane],
	})
	l := loaded{rows: rows, err: err}
	if len(rows) > 0 {
		l.clock = clockSample{sent: sent, received: w.now(), dbNow: rows[0].DbNow}
	}
	return l
}

// applyPrefetch queues what a prefetch read found.
func (w *Window) applyPrefetch(ctx context.Context, l loaded) {
	w.prefetching = false
	if w.prefetchAgain {
		w.prefetchAgain = false
		w.startPrefetch(ctx)
	}
	if l.err != nil {
		if ctx.Err() == nil {
			w.log.Warn("prefetch due hooks failed; the poll covers them", "err", l.err)
		}
		return
	}
	if len(l.rows) > 0 {
		w.learnOffset(l.clock)
	}
	for _, r := range l.rows {
		w.add(r.ID, r.RunAt, r.Keyed)
	}
	w.log.Debug("prefetched due hooks", "count", len(l.rows), "queued", len(w.queued), "clock_offset", w.offset)
}
