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
	// Claims bounds the just-in-time claims in flight at once (0:
	// DefaultClaims). A hook that comes due while a claim is running is
	// claimed at once by another instead of waiting for it, so one slow
	// commit or publish delays only its own hooks.
	Claims int
	// ClaimAhead is how long before a hook is due (database clock) its
	// just-in-time claim may run; its DueHook is then held until it is due
	// (see hold.go). Zero claims at the due instant.
	ClaimAhead time.Duration
}

// DefaultClaims is the just-in-time claims in flight at once by default:
// enough to keep hooks due every few milliseconds from queueing behind a
// claim (about 5 ms each, 30 to 90 ms on a slow commit), few enough to leave
// most of a 16-connection pool to the results.
const DefaultClaims = 4

// Validate reports a configuration the window cannot run with.
func (c WindowConfig) Validate() error {
	var errs []error
	if c.Ahead <= 0 {
		errs = append(errs, fmt.Errorf("prefetch window %s: must be positive", c.Ahead))
	}
	if c.Refresh <= 0 {
		errs = append(errs, fmt.Errorf("prefetch interval %s: must be positive", c.Refresh))
	}
	if c.Claims < 0 || c.Claims > MaxClaims {
		errs = append(errs, fmt.Errorf("claims in flight %d: want 0 (default) to %d", c.Claims, MaxClaims))
	}
	if c.ClaimAhead < 0 || c.ClaimAhead > MaxClaimAhead || (c.Ahead > 0 && c.ClaimAhead >= c.Ahead) {
		errs = append(errs, fmt.Errorf("claim ahead %s: want 0 to %s, and less than the prefetch window %s",
			c.ClaimAhead, MaxClaimAhead, c.Ahead))
	}
	return errors.Join(errs...)
}

// MaxClaimAhead bounds WindowConfig.ClaimAhead: a hook cancelled within it
// of its due instant may already be claimed and held, so it is delivered
// all the same; that window stays short.
const MaxClaimAhead = 2 * time.Second

// DefaultClaimAhead covers a claim's commit on a busy database (30 to 90 ms)
// and its answer, with room to spare.
const DefaultClaimAhead = 200 * time.Millisecond

// MaxClaims bounds WindowConfig.Claims: each claim in flight holds a pool
// connection.
const MaxClaims = 64

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
	pool   *pgxpool.Pool
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
	// claiming counts the claims in flight; each reports on settled.
	claiming int
	// prefetching is set while a prefetch read runs (it reports on
	// loaded); prefetchAgain asks for another once it is done.
	prefetching, prefetchAgain bool
	settled                    chan claimed
	loaded                     chan loaded
	// workers counts the claim and prefetch goroutines, so that Run
	// returns only once they have.
	workers sync.WaitGroup

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
		pool:   pool,
		connCf: pool.Config().ConnConfig.Copy(),
		cfg:    cfg,
		log:    log.With("component", "window"),
		now:    time.Now,
		runAt:  map[uuid.UUID]time.Time{},
		notes:  make(chan note, 4096),
		// Buffered for every claim and the one prefetch in flight, so
		// their goroutines never block on a Run that has returned.
		settled: make(chan claimed, cfg.claims()),
		loaded:  make(chan loaded, 1),
		nudges:  make(chan struct{}, 1),

		listening: make(chan struct{}),
	}, nil
}

// Listening is closed once the window first listens for notifications: from
// then on a near-due hook reaches it without waiting for a prefetch.
func (w *Window) Listening() <-chan struct{} { return w.listening }

// Run loads, listens and claims until ctx is done. Claims in progress when
// ctx ends are finished, as in Claimer.Run.
//
// Run's goroutine only keeps the queue: the prefetch reads and the claims
// run on goroutines of their own and report back, so that neither a read of
// thousands of ids nor a slow claim holds back the claim of a hook that
// comes due meanwhile.
func (w *Window) Run(ctx context.Context) {
	listenDone := make(chan struct{})
	go func() {
		defer close(listenDone)
		w.listen(ctx)
	}()
	defer func() { <-listenDone }()
	defer w.workers.Wait()

	refresh := time.NewTicker(w.cfg.Refresh)
	defer refresh.Stop()
	wake := time.NewTimer(0)
	defer wake.Stop()
	w.warm(ctx)
	w.startPrefetch(ctx)
	for {
		w.resetWake(wake)
		select {
		case <-ctx.Done():
			return
		case <-refresh.C:
			w.startPrefetch(ctx)
		case <-w.nudges:
			w.startPrefetch(ctx)
		case n := <-w.notes:
			w.add(n.id, n.runAt)
		case l := <-w.loaded:
			w.applyPrefetch(ctx, l)
		case c := <-w.settled:
			w.applyClaim(c)
		case <-wake.C:
			w.claimDue(ctx)
		}
	}
}

// warm opens the pool connections the claims in flight and the prefetch
// will use, and runs the claim statement once on each with no ids (it
// changes nothing), so that the first hooks due wait neither for
// PostgreSQL to start a backend nor for the statement to be prepared and
// the backend's catalog caches to fill: 10 to 30 ms for each of the first
// claims on a busy machine otherwise. A failure is left to the claims
// themselves to report.
func (w *Window) warm(ctx context.Context) {
	// Never more than the pool has, nor waiting long for connections
	// others hold.
	ctx, cancel := context.WithTimeout(ctx, warmTimeout)
	defer cancel()
	conns := make([]*pgxpool.Conn, 0, min(w.cfg.claims()+1, int(w.pool.Config().MaxConns)))
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range cap(conns) {
		c, err := w.pool.Acquire(ctx)
		if err != nil {
			return
		}
		conns = append(conns, c)
		if _, err := store.New(c).ClaimHooksByID(ctx, store.ClaimHooksByIDParams{
			LeaseSeconds: w.c.cfg.Lease.Seconds(),
			AheadSeconds: w.cfg.ClaimAhead.Seconds(),
			Ids:          []uuid.UUID{},
		}); err != nil {
			return
		}
	}
}

// claims is the bound on claims in flight, with its default.
func (c WindowConfig) claims() int {
	if c.Claims == 0 {
		return DefaultClaims
	}
	return c.Claims
}

// resetWake arms the timer for the first queued hook, translated to the
// local clock. While every claim slot is taken it stays off: the claim
// that frees one re-arms it.
func (w *Window) resetWake(t *time.Timer) {
	if len(w.queue) == 0 || w.claiming >= w.cfg.claims() {
		t.Stop()
		return
	}
	at := w.queue[0].runAt.Add(-w.offset - w.cfg.ClaimAhead)
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

// clockSample is one reading of the database clock: now() is taken when
// the statement starts, about half the round trip after it was sent.
type clockSample struct {
	sent, received, dbNow time.Time
}

// learnOffset estimates the database clock's offset from the local one.
func (w *Window) learnOffset(s clockSample) {
	w.offset = s.dbNow.Sub(s.sent.Add(s.received.Sub(s.sent) / 2))
}

// loaded is what one prefetch read found.
type loaded struct {
	rows  []store.PrefetchDueHooksRow
	clock clockSample
	err   error
}

// startPrefetch starts a prefetch read unless one is running; then that
// one is followed by another, since the ask may be for hooks it missed.
func (w *Window) startPrefetch(ctx context.Context) {
	if w.prefetching {
		w.prefetchAgain = true
		return
	}
	w.prefetching = true
	w.workers.Go(func() { w.loaded <- w.prefetch(ctx) })
}

// prefetch reads the hooks due within the window.
func (w *Window) prefetch(ctx context.Context) loaded {
	sent := w.now()
	rows, err := w.c.queries.PrefetchDueHooks(ctx, store.PrefetchDueHooksParams{
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
		w.add(r.ID, r.RunAt)
	}
	w.log.Debug("prefetched due hooks", "count", len(l.rows), "queued", len(w.runAt), "clock_offset", w.offset)
}

// claimDue starts claims, in batches, of every queued hook whose run_at
// has come by the local estimate of the database clock, while claim slots
// are free; the hooks left wait for a slot.
func (w *Window) claimDue(ctx context.Context) {
	for w.claiming < w.cfg.claims() && w.hasDue() {
		limit := w.c.admit.reserve(ctx, w.c.cfg.BatchSize)
		if limit == 0 {
			// The queues are full: the due hooks stay queued, and the
			// wake-up waits a little instead of firing at once.
			w.pausedUntil = w.now().Add(backpressureWait)
			return
		}
		ids := w.popDue(limit)
		w.c.admit.release(limit - len(ids))
		if len(ids) == 0 {
			return
		}
		w.claiming++
		w.workers.Go(func() { w.settled <- w.claim(ctx, ids) })
	}
}

// hasDue reports whether the first queued hook may be claimed: its run_at
// is within ClaimAhead of the local estimate of the database clock.
func (w *Window) hasDue() bool {
	return len(w.queue) > 0 && !w.queue[0].runAt.After(w.claimHorizon())
}

// claimHorizon is the latest run_at that may be claimed now, by the local
// estimate of the database clock; the claim itself checks it by the
// database's.
func (w *Window) claimHorizon() time.Time {
	return w.now().Add(w.offset + w.cfg.ClaimAhead)
}

// popDue takes up to limit claimable ids off the queue.
func (w *Window) popDue(limit int) []uuid.UUID {
	dbNow := w.claimHorizon()
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

// claimed is what one claim reports to Run: the ids it did not claim that
// are still waiting within the window, to be queued again.
type claimed struct {
	waiting []store.WaitingHooksRow
	clock   clockSample
}

// applyClaim frees the claim's slot and queues again the hooks it left.
func (w *Window) applyClaim(c claimed) {
	w.claiming--
	if len(c.waiting) > 0 {
		w.learnOffset(c.clock)
	}
	for _, r := range c.waiting {
		// A hook that was claimable and still waits was locked: try it
		// again shortly, not at once. The queue's run_at only times the
		// wake-up; the claim reads the row's own.
		at := r.RunAt
		if horizon := r.DbNow.Add(w.cfg.ClaimAhead); !at.After(horizon) {
			at = horizon.Add(lockedRetry)
		}
		w.add(r.ID, at)
	}
}

// claim claims ids by the database clock and publishes them, each once it
// is due (hold.go); of the ids left over it reports those to look at again
// (requeue). It runs on its own goroutine, detached from ctx's cancellation
// like Claimer.cycle; so does the hold, which frees the claim's slot at
// once and ends within ClaimAhead, before Run returns.
func (w *Window) claim(ctx context.Context, ids []uuid.UUID) claimed {
	cycleCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.c.cfg.Lease)
	defer cancel()
	w.c.healStreams(cycleCtx)
	start := time.Now()
	rows, err := w.c.queries.ClaimHooksByID(cycleCtx, store.ClaimHooksByIDParams{
		LeaseSeconds: w.c.cfg.Lease.Seconds(),
		AheadSeconds: w.cfg.ClaimAhead.Seconds(),
		Ids:          ids,
	})
	received := time.Now()
	if err != nil {
		w.c.admit.release(len(ids))
		w.log.Warn("just-in-time claim failed; the poll covers these hooks", "count", len(ids), "err", err)
		return claimed{}
	}
	w.c.admit.release(len(ids) - len(rows))
	rowsClaimed := make([]store.ClaimDueHooksRow, len(rows))
	for i, r := range rows {
		rowsClaimed[i] = store.ClaimDueHooksRow(r)
	}
	if mustHold(rowsClaimed) {
		w.workers.Go(func() {
			holdCtx, cancelHold := context.WithTimeout(context.WithoutCancel(ctx), w.c.cfg.Lease)
			defer cancelHold()
			w.c.publishWhenDue(holdCtx, rowsClaimed, received, start, "just-in-time")
		})
	} else {
		w.c.publish(cycleCtx, rowsClaimed, start, "just-in-time")
	}
	if len(rows) == len(ids) {
		return claimed{}
	}
	return w.requeue(cycleCtx, ids)
}

// warmTimeout bounds the opening of connections before the first claim.
const warmTimeout = time.Second

// lockedRetry is the wait before claiming again a due hook whose row
// another transaction held locked (a result being applied, the gateway
// changing it, another scheduler's claim not yet committed).
const lockedRetry = 10 * time.Millisecond

// requeue reads which of ids are still waiting within the window: Run
// queues them again at their run_at when the database has not reached it
// yet (the local clock ran ahead), a little later when they are due but
// were locked. The others were claimed (here or elsewhere), deleted,
// finished or moved away; a change that makes one near-due again notifies
// again.
func (w *Window) requeue(ctx context.Context, ids []uuid.UUID) claimed {
	sent := w.now()
	rows, err := w.c.queries.WaitingHooks(ctx, store.WaitingHooksParams{
		Ids:           ids,
		WindowSeconds: max(w.cfg.Ahead, notifyAhead).Seconds(),
	})
	if err != nil {
		w.log.Warn("re-read unclaimed hooks failed; the prefetch covers them", "err", err)
		return claimed{}
	}
	c := claimed{waiting: rows}
	if len(rows) > 0 {
		c.clock = clockSample{sent: sent, received: w.now(), dbNow: rows[0].DbNow}
	}
	return c
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
