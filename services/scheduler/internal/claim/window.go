package claim

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// idClaimer is what a Window asks of its Claimer (claim.go), and all it
// may: the lease, the bound on work in flight and the claim statement
// stay the Claimer's.
type idClaimer interface {
	// reserve takes room for up to a claim's batch under the bound on
	// work in flight; release gives back what a claim did not take.
	reserve(ctx context.Context) int
	release(n int)
	// claimIDs claims those of ids due within ahead by the database clock
	// and publishes them, each with the hold it still needs. It releases
	// the room of the ids it did not claim.
	claimIDs(ctx context.Context, ids []uuid.UUID, ahead time.Duration) (claimed int, err error)
	// warmClaim runs the claim statement on db with no ids.
	warmClaim(ctx context.Context, db store.DBTX, ahead time.Duration) error
	// detach is the context of one claim: ctx's values without its
	// cancellation, bounded by the lease.
	detach(ctx context.Context) (context.Context, context.CancelFunc)
}

// warmTimeout bounds the opening of connections before the first claim.
const warmTimeout = time.Second

// lockedRetry is the wait before claiming again a due hook whose row
// another transaction held locked (a result being applied, the gateway
// changing it, another scheduler's claim not yet committed).
const lockedRetry = 10 * time.Millisecond

// Window claims hooks just in time. It holds in memory the ids and run_at
// of the hooks due within Ahead (read every Refresh from hooks_due_idx,
// prefetch.go, and added as soon as the trigger of migration 00006
// notifies a near-due insert or change, listen.go), and when a hook's
// run_at arrives it claims it, with the others due by then, by id. The
// memory is only a hint: the claim's run_at <= now() on the database clock
// decides, so a hook is never claimed early, and one deleted, finished or
// rescheduled meanwhile is skipped.
//
// Several replicas may hold the same ids; FOR UPDATE SKIP LOCKED and the
// status and run_at conditions let exactly one of them claim each hook per
// lease, the others' claims find nothing. The Claimer's slow poll still runs
// beside it, for lost notifications and hooks beyond the prefetch limit.
type Window struct {
	claimer idClaimer
	queries *store.Queries
	pool    *pgxpool.Pool
	connCf  *pgx.ConnConfig
	cfg     WindowConfig
	log     *slog.Logger
	// now is the local clock (time.Now; tests skew it).
	now func() time.Time

	// Owned by Run's goroutine.
	queues [lanes]dueQueue
	queued map[uuid.UUID]dueEntry // what each queued id waits for
	offset time.Duration          // database clock minus local clock
	// pausedUntil holds claims back while the queues are full (admission).
	pausedUntil time.Time
	// claiming counts each lane's claims in flight; each reports on
	// settled. turn is the lane whose claim starts next when both have
	// hooks due.
	claiming [lanes]int
	turn     lane
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

// NewWindow returns a Window that claims through c, reads the hooks near
// due from pool and listens for notifications on its own connection to
// pool's database.
func NewWindow(c *Claimer, pool *pgxpool.Pool, cfg WindowConfig, log *slog.Logger) (*Window, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("window: %w", err)
	}
	return &Window{
		claimer: c,
		queries: store.New(pool),
		pool:    pool,
		connCf:  pool.Config().ConnConfig.Copy(),
		cfg:     cfg,
		log:     log.With("component", "window"),
		now:     time.Now,
		queued:  map[uuid.UUID]dueEntry{},
		notes:   make(chan note, 4096),
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
			w.add(n.id, n.runAt, n.keyed)
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
// the backend's catalog caches to fill, which on a busy machine would make
// each of the first claims slow. A failure is left to the claims
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
		if err := w.claimer.warmClaim(ctx, c, w.cfg.ClaimAhead); err != nil {
			return
		}
	}
}

// resetWake arms the timer for the next claim, translated to the local
// clock. While no lane with hooks queued may start a claim it stays off:
// the claim that frees a slot re-arms it.
func (w *Window) resetWake(t *time.Timer) {
	at, ok := w.nextClaimStart()
	if !ok {
		t.Stop()
		return
	}
	if w.pausedUntil.After(at) {
		at = w.pausedUntil
	}
	t.Reset(at.Sub(w.now()))
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

// claimDue starts claims, in batches of one lane each, of every queued
// hook whose run_at has come by the local estimate of the database clock,
// while claim slots are free; the hooks left wait for a slot.
func (w *Window) claimDue(ctx context.Context) {
	for {
		l, ok := w.dueLane()
		if !ok {
			return
		}
		limit := w.claimer.reserve(ctx)
		if limit == 0 {
			// The queues are full: the due hooks stay queued, and the
			// wake-up waits a little instead of firing at once.
			w.pausedUntil = w.now().Add(backpressureWait)
			return
		}
		ids := w.popDue(l, limit)
		w.claimer.release(limit - len(ids))
		if len(ids) == 0 {
			return
		}
		w.claiming[l]++
		w.workers.Go(func() {
			c := w.claim(ctx, ids)
			c.lane = l
			w.settled <- c
		})
	}
}

// claimStart is the local instant a claim starts for a hook due at runAt:
// claimLead before it by the local estimate of the database clock.
func (w *Window) claimStart(runAt time.Time) time.Time {
	return runAt.Add(-w.offset - w.cfg.claimLead())
}

// dbNow is the local estimate of the database clock.
func (w *Window) dbNow() time.Time { return w.now().Add(w.offset) }

// claimHorizon is the latest run_at that may be claimed now, by the local
// estimate of the database clock; the claim itself checks it by the
// database's.
func (w *Window) claimHorizon() time.Time {
	return w.dbNow().Add(w.cfg.ClaimAhead)
}

// claimed is what one claim of lane's hooks reports to Run: the ids it
// did not claim that are still waiting within the window, to be queued
// again.
type claimed struct {
	lane    lane
	waiting []store.WaitingHooksRow
	clock   clockSample
}

// applyClaim frees the claim's slot and queues again the hooks it left.
func (w *Window) applyClaim(c claimed) {
	w.claiming[c.lane]--
	if len(c.waiting) > 0 {
		w.learnOffset(c.clock)
	}
	for _, r := range c.waiting {
		// A hook that was claimable and still waits was locked: try it
		// again shortly, not at once. The queue's run_at only times the
		// wake-up (a claim starts claimLead before it); the claim reads
		// the row's own.
		at := r.RunAt
		if !at.After(r.DbNow.Add(w.cfg.ClaimAhead)) {
			at = r.DbNow.Add(w.cfg.claimLead() + lockedRetry)
		}
		w.add(r.ID, at, r.Keyed)
	}
}

// claim claims ids by the database clock and publishes them, each with
// the hold it still needs (hold.go); of the ids left over it reports those
// to look at again (requeue). It runs on its own goroutine, detached from
// ctx's cancellation like Claimer.Run's claims, and ends before Run
// returns.
func (w *Window) claim(ctx context.Context, ids []uuid.UUID) claimed {
	ctx, cancel := w.claimer.detach(ctx)
	defer cancel()
	n, err := w.claimer.claimIDs(ctx, ids, w.cfg.ClaimAhead)
	if err != nil {
		w.log.Warn("just-in-time claim failed; the poll covers these hooks", "count", len(ids), "err", err)
		return claimed{}
	}
	if n == len(ids) {
		return claimed{}
	}
	return w.requeue(ctx, ids)
}

// requeue reads which of ids are still waiting within the window: Run
// queues them again at their run_at when the database has not reached it
// yet (the local clock ran ahead), a little later when they are due but
// were locked. The others were claimed (here or elsewhere), deleted,
// finished or moved away; a change that makes one near-due again notifies
// again.
func (w *Window) requeue(ctx context.Context, ids []uuid.UUID) claimed {
	sent := w.now()
	rows, err := w.queries.WaitingHooks(ctx, store.WaitingHooksParams{
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
