package claim

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// WindowConfig tunes a Window.
type WindowConfig struct {
	// Ahead is how far ahead of the database's now hooks are loaded into
	// memory (the prefetch window).
	Ahead time.Duration
	// Refresh is the interval between prefetch reads.
	Refresh time.Duration
}

// Validate reports a configuration the window cannot run with.
func (c WindowConfig) Validate() error {
	var errs []error
	if c.Ahead <= 0 {
		errs = append(errs, fmt.Errorf("prefetch window %s: must be positive", c.Ahead))
	}
	if c.Refresh <= 0 {
		errs = append(errs, fmt.Errorf("prefetch interval %s: must be positive", c.Refresh))
	}
	return errors.Join(errs...)
}

// maxPrefetch bounds the hooks one prefetch read loads; beyond it (a burst
// larger than this due within the window) the safety poll, which claims full
// batches back to back, takes over.
const maxPrefetch = 20000

// notifyAhead is how far ahead migration 00006's trigger announces hooks:
// the window may hold hooks that far ahead, whatever its prefetch range.
const notifyAhead = 10 * time.Second

// listenRetryBase is the first wait before reconnecting the listener; it
// doubles up to maxErrorBackoff.
const listenRetryBase = 100 * time.Millisecond

// Window claims hooks just in time. It holds in memory the ids and run_at
// of the hooks due within Ahead (read every Refresh from hooks_due_idx, and
// added as soon as the trigger of migration 00006 notifies a near-due
// insert or change), and when a hook's run_at arrives it claims it, with the
// others due by then, by id. The memory is only a hint: the claim's
// run_at <= now() on the database clock decides, so a hook is never claimed
// early, and one deleted, finished or rescheduled meanwhile is skipped.
//
// Several replicas may hold the same ids; FOR UPDATE SKIP LOCKED and the
// status and run_at conditions let exactly one of them claim each hook per
// lease, the others' claims find nothing. The Claimer's slow poll still runs
// beside it, for lost notifications and hooks beyond the prefetch limit.
type Window struct {
	c      *Claimer
	connCf *pgx.ConnConfig
	cfg    WindowConfig
	log    *slog.Logger
	// now is the local clock (time.Now; tests skew it).
	now func() time.Time

	// Owned by Run's goroutine.
	queue  dueQueue
	runAt  map[uuid.UUID]time.Time // the run_at each queued id waits for
	offset time.Duration           // database clock minus local clock
	// pausedUntil holds claims back while the queues are full (admission).
	pausedUntil time.Time

	notes  chan note
	nudges chan struct{}
	// listening is closed once the window first listens for notifications.
	listening     chan struct{}
	listeningOnce sync.Once
}

// note is one hook the trigger announced; zero id means "re-read".
type note struct {
	id    uuid.UUID
	runAt time.Time
}

// NewWindow returns a Window that claims through c and listens for
// notifications on its own connection to pool's database.
func NewWindow(c *Claimer, pool *pgxpool.Pool, cfg WindowConfig, log *slog.Logger) (*Window, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("window: %w", err)
	}
	return &Window{
		c:      c,
		connCf: pool.Config().ConnConfig.Copy(),
		cfg:    cfg,
		log:    log.With("component", "window"),
		now:    time.Now,
		runAt:  map[uuid.UUID]time.Time{},
		notes:  make(chan note, 4096),
		nudges: make(chan struct{}, 1),

		listening: make(chan struct{}),
	}, nil
}

// Listening is closed once the window first listens for notifications: from
// then on a near-due hook reaches it without waiting for a prefetch.
func (w *Window) Listening() <-chan struct{} { return w.listening }

// Run loads, listens and claims until ctx is done. A claim in progress when
// ctx ends is finished, as in Claimer.Run.
func (w *Window) Run(ctx context.Context) {
	listenDone := make(chan struct{})
	go func() {
		defer close(listenDone)
		w.listen(ctx)
	}()
	defer func() { <-listenDone }()

	refresh := time.NewTicker(w.cfg.Refresh)
	defer refresh.Stop()
	wake := time.NewTimer(0)
	defer wake.Stop()
	w.prefetch(ctx)
	for {
		w.resetWake(wake)
		select {
		case <-ctx.Done():
			return
		case <-refresh.C:
			w.prefetch(ctx)
		case <-w.nudges:
			w.prefetch(ctx)
		case n := <-w.notes:
			w.add(n.id, n.runAt)
		case <-wake.C:
			w.claimDue(ctx)
		}
	}
}

// resetWake arms the timer for the first queued hook, translated to the
// local clock.
func (w *Window) resetWake(t *time.Timer) {
	if len(w.queue) == 0 {
		t.Stop()
		return
	}
	at := w.queue[0].runAt.Add(-w.offset)
	if w.pausedUntil.After(at) {
		at = w.pausedUntil
	}
	t.Reset(at.Sub(w.now()))
}

// add queues a hook unless it is already queued for the same run_at.
func (w *Window) add(id uuid.UUID, runAt time.Time) {
	if prev, ok := w.runAt[id]; ok && prev.Equal(runAt) {
		return
	}
	w.runAt[id] = runAt
	heap.Push(&w.queue, dueEntry{id: id, runAt: runAt})
}

// learnOffset estimates the database clock's offset from the local one:
// now() is taken when the statement starts, about half the round trip
// after it was sent.
func (w *Window) learnOffset(sent, received, dbNow time.Time) {
	w.offset = dbNow.Sub(sent.Add(received.Sub(sent) / 2))
}

// prefetch loads the hooks due within the window.
func (w *Window) prefetch(ctx context.Context) {
	sent := w.now()
	rows, err := w.c.queries.PrefetchDueHooks(ctx, store.PrefetchDueHooksParams{
		WindowSeconds: w.cfg.Ahead.Seconds(),
		MaxHooks:      maxPrefetch,
	})
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("prefetch due hooks failed; the poll covers them", "err", err)
		}
		return
	}
	if len(rows) > 0 {
		w.learnOffset(sent, w.now(), rows[0].DbNow)
	}
	for _, r := range rows {
		w.add(r.ID, r.RunAt)
	}
	w.log.Debug("prefetched due hooks", "count", len(rows), "queued", len(w.runAt), "clock_offset", w.offset)
}

// claimDue claims, in batches, every queued hook whose run_at has come by
// the local estimate of the database clock.
func (w *Window) claimDue(ctx context.Context) {
	for {
		if !w.hasDue() {
			return
		}
		limit := w.c.admit.room(ctx, w.c.cfg.BatchSize)
		if limit == 0 {
			// The queues are full: the due hooks stay queued, and the
			// wake-up waits a little instead of firing at once.
			w.pausedUntil = w.now().Add(backpressureWait)
			return
		}
		ids := w.popDue(limit)
		if len(ids) == 0 {
			return
		}
		w.claim(ctx, ids)
	}
}

// hasDue reports whether the first queued hook's run_at has come by the
// local estimate of the database clock.
func (w *Window) hasDue() bool {
	return len(w.queue) > 0 && !w.queue[0].runAt.After(w.now().Add(w.offset))
}

// popDue takes up to limit due ids off the queue.
func (w *Window) popDue(limit int) []uuid.UUID {
	dbNow := w.now().Add(w.offset)
	var ids []uuid.UUID
	for len(w.queue) > 0 && len(ids) < limit && !w.queue[0].runAt.After(dbNow) {
		e := heap.Pop(&w.queue).(dueEntry)
		if at, ok := w.runAt[e.id]; !ok || !at.Equal(e.runAt) {
			continue // superseded by a later add, or already claimed
		}
		delete(w.runAt, e.id)
		ids = append(ids, e.id)
	}
	return ids
}

// claim claims ids by the database clock and publishes them; the ids left
// over are looked at again (requeue).
func (w *Window) claim(ctx context.Context, ids []uuid.UUID) {
	cycleCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.c.cfg.Lease)
	defer cancel()
	w.c.healStreams(cycleCtx)
	start := time.Now()
	rows, err := w.c.queries.ClaimHooksByID(cycleCtx, store.ClaimHooksByIDParams{
		LeaseSeconds: w.c.cfg.Lease.Seconds(),
		Ids:          ids,
	})
	if err != nil {
		w.log.Warn("just-in-time claim failed; the poll covers these hooks", "count", len(ids), "err", err)
		return
	}
	claimed := make([]store.ClaimDueHooksRow, len(rows))
	for i, r := range rows {
		claimed[i] = store.ClaimDueHooksRow(r)
	}
	w.c.publish(cycleCtx, claimed, start, "just-in-time")
	if len(rows) < len(ids) {
		w.requeue(cycleCtx, ids)
	}
}

// lockedRetry is the wait before claiming again a due hook whose row
// another transaction held locked (a result being applied, the gateway
// changing it, another scheduler's claim not yet committed).
const lockedRetry = 10 * time.Millisecond

// requeue queues again the ids still waiting within the window: at their
// run_at when the database has not reached it yet (the local clock ran
// ahead), a little later when they are due but were locked. The others were
// claimed (here or elsewhere), deleted, finished or moved away; a change
// that makes one near-due again notifies again.
func (w *Window) requeue(ctx context.Context, ids []uuid.UUID) {
	sent := w.now()
	rows, err := w.c.queries.WaitingHooks(ctx, store.WaitingHooksParams{
		Ids:           ids,
		WindowSeconds: max(w.cfg.Ahead, notifyAhead).Seconds(),
	})
	if err != nil {
		w.log.Warn("re-read unclaimed hooks failed; the prefetch covers them", "err", err)
		return
	}
	if len(rows) > 0 {
		w.learnOffset(sent, w.now(), rows[0].DbNow)
	}
	for _, r := range rows {
		at := r.RunAt
		if !at.After(r.DbNow) {
			at = r.DbNow.Add(lockedRetry)
		}
		w.add(r.ID, at)
	}
}

// listen forwards the trigger's notifications to Run, reconnecting with a
// bounded backoff. After each (re)connect it asks for a prefetch, since
// notifications sent while it was away are lost.
func (w *Window) listen(ctx context.Context) {
	failures := 0
	for {
		connected, err := w.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if connected {
			failures = 0
		}
		failures++
		wait := errorBackoff(listenRetryBase, failures)
		w.log.Warn("listening for due hooks failed; reconnecting", "err", err, "retry_in", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// listenOnce connects, listens and forwards notifications until the
// connection fails or ctx ends; it reports whether it got as far as
// listening.
func (w *Window) listenOnce(ctx context.Context) (bool, error) {
	conn, err := pgx.ConnectConfig(ctx, w.connCf)
	if err != nil {
		return false, fmt.Errorf("connect: %w", err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if err := store.New(conn).ListenDue(ctx); err != nil {
		return false, fmt.Errorf("listen: %w", err)
	}
	w.nudge()
	w.listeningOnce.Do(func() { close(w.listening) })
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, fmt.Errorf("wait for notification: %w", err)
		}
		w.forward(n.Payload)
	}
}

// forward hands one notification to Run without ever blocking the
// connection: when Run is behind, or the payload is not understood, a
// prefetch re-reads everything instead.
func (w *Window) forward(payload string) {
	n, ok := parseNote(payload)
	if !ok {
		w.nudge()
		return
	}
	select {
	case w.notes <- n:
	default:
		w.nudge()
	}
}

func (w *Window) nudge() {
	select {
	case w.nudges <- struct{}{}:
	default:
	}
}

// parseNote reads "<uuid> <run_at in Unix microseconds>".
func parseNote(payload string) (note, bool) {
	idText, microsText, ok := strings.Cut(payload, " ")
	if !ok {
		return note{}, false
	}
	id, err := uuid.Parse(idText)
	if err != nil {
		return note{}, false
	}
	micros, err := strconv.ParseInt(microsText, 10, 64)
	if err != nil {
		return note{}, false
	}
	return note{id: id, runAt: time.UnixMicro(micros)}, true
}

// dueEntry is one queued hook; the queue may hold stale entries for an id,
// which runAt tells apart.
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
