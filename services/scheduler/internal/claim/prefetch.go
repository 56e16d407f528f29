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

// maxPrefetch bounds the hooks one prefetch read loads; beyond it (a burst
// larger than this due within the window) the safety poll, which claims full
// batches back to back, takes over.
const maxPrefetch = 20000

// loaded is what one prefetch read found.
type loaded struct {
	rows  []store.PrefetchDueHooksRow
	clock clockSample
	err   error
}

// startPrefetch starts a prefetch read unless one is running; then that
// one is followed by another, since the ask may be for hooks it missed. A
// window with a backlog reads nothing (backlogged).
func (w *Window) startPrefetch(ctx context.Context) {
	if w.backlogged() {
		return
	}
	if w.prefetching {
		w.prefetchAgain = true
		return
	}
	w.prefetching = true
	w.workers.Go(func() { w.loaded <- w.prefetch(ctx) })
}

// backlogged reports whether the window already holds a read's worth of
// hooks (maxPrefetch) and the first of them is due: its claims are behind.
// A read then returns, earliest first, hooks due no sooner than those the
// window holds; in a burst, mostly the very hooks it holds, read again
// and again for nothing at a visible cost to PostgreSQL. Any hook a
// read would add that the window lacks (a notification lost) the poll
// claims as soon, since while claims fill their batches the poll runs back
// to back. Reads resume once the backlog is below a read's worth.
func (w *Window) backlogged() bool {
	return len(w.queued) >= maxPrefetch && w.hasDue()
}

// prefetch reads the hooks due within the window.
func (w *Window) prefetch(ctx context.Context) loaded {
	sent := w.now()
	rows, err := w.queries.PrefetchDueHooks(ctx, store.PrefetchDueHooksParams{
		WindowSeconds: w.cfg.Ahead.Seconds(),
		MaxHooks:      maxPrefetch,
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
