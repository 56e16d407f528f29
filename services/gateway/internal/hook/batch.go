package hook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sundial-run/sundial/pkg/batch"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// Group commit: a create in its own transaction holds its project's usage
// row locked until its commit is flushed, so one project's creates are
// counted one commit after the other (a few hundred a second). A Batcher
// lets concurrent creates share one transaction: each request hands its
// validated hook to Run's loop, which gathers up to MaxBatch of them (and,
// while other creates are in flight, what arrives within Linger), locks the
// usage rows of their projects, judges each request in order as if it had
// come alone (quota.Tally), inserts the hooks taken with one statement,
// counts them once per project, commits, and answers each request with its
// own hook and usage.

// BatchConfig tunes a Batcher.
type BatchConfig struct {
	// MaxBatch bounds the creates one transaction holds, 1 to MaxBatchSize.
	MaxBatch int
	// Linger is how long a batch waits for more creates after taking those
	// already waiting, 0 to MaxLinger; it waits only while other creates
	// are in flight, so that a lone request is never held back.
	Linger time.Duration
	// InFlight bounds the batches being committed at once (each holds a
	// database connection). While all are busy, creates wait and the next
	// batch grows.
	InFlight int
	// Timeout bounds a batch's transaction: batches outlive the requests
	// that wait for them.
	Timeout time.Duration
}

// Bounds of BatchConfig.
const (
	MaxBatchSize = 10000
	MaxLinger    = 100 * time.Millisecond
)

// ErrStopped answers a create handed to a Batcher whose Run has returned.
var ErrStopped = errors.New("create batcher stopped")

// Batcher is a Service whose Create batches creates without an
// Idempotency-Key; Run must be running for them to make progress. Creates
// with a key take the Service's own path, one transaction each: their
// claim of the key may find an earlier hook instead of inserting one.
type Batcher struct {
	*Service
	cfg     BatchConfig
	log     *slog.Logger
	in      chan *pending
	stopped chan struct{}
	active  atomic.Int64 // batched creates between their start and their answer
}

// pending is a create waiting in a batch for its outcome.
type pending struct {
	projectID uuid.UUID
	id        uuid.UUID
	n         New
	reply     chan outcome // buffered: the batch never waits for its request
}

type outcome struct {
	out created
	err error
}

// NewBatcher returns a Batcher creating hooks with s.
func NewBatcher(s *Service, cfg BatchConfig, log *slog.Logger) (*Batcher, error) {
	if cfg.MaxBatch < 1 || cfg.MaxBatch > MaxBatchSize || cfg.Linger < 0 || cfg.Linger > MaxLinger ||
		cfg.InFlight < 1 || cfg.Timeout <= 0 {
		return nil, fmt.Errorf("create batcher: want a batch of 1 to %d, a linger of 0 to %s, at least one batch in flight and a timeout, got %d, %s, %d, %s",
			MaxBatchSize, MaxLinger, cfg.MaxBatch, cfg.Linger, cfg.InFlight, cfg.Timeout)
	}
	return &Batcher{Service: s, cfg: cfg, log: log, in: make(chan *pending), stopped: make(chan struct{})}, nil
}

// Create is Service.Create, batched.
func (b *Batcher) Create(ctx context.Context, projectID uuid.UUID, n New) (store.Hook, quota.Usage, error) {
	if n.IdempotencyKey != "" {
		return b.Service.Create(ctx, projectID, n)
	}
	b.active.Add(1)
	defer b.active.Add(-1)
	id, err := uuid.NewV7()
	if err != nil {
		return store.Hook{}, quota.Usage{}, fmt.Errorf("hook id: %w", err)
	}
	p := &pending{projectID: projectID, id: id, n: n, reply: make(chan outcome, 1)}
	select {
	case b.in <- p:
	case <-b.stopped:
		return store.Hook{}, quota.Usage{}, fmt.Errorf("create hook: %w", ErrStopped)
	case <-ctx.Done():
		return store.Hook{}, quota.Usage{}, fmt.Errorf("create hook: %w", ctx.Err())
	}
	var o outcome
	select {
	case o = <-p.reply:
	case <-ctx.Done():
		// The batch may still commit the hook: like a response lost on the
		// way, which a client retries with an Idempotency-Key.
		return store.Hook{}, quota.Usage{}, fmt.Errorf("create hook: %w", ctx.Err())
	}
	if o.err != nil {
		return store.Hook{}, o.out.charge.Usage, o.err
	}
	b.announce(ctx, o.out.charge.Crossed)
	return o.out.hook, o.out.charge.Usage, nil
}

// Run gathers and commits batches until ctx is done, then commits what it
// has gathered, waits for the batches in flight and returns; Create then
// answers ErrStopped. Cancel ctx only once no request is left (the HTTP
// server has shut down). Call it once.
func (b *Batcher) Run(ctx context.Context) {
	g := batch.Gatherer[*pending]{
		In:     b.in,
		Max:    b.cfg.MaxBatch,
		Linger: b.cfg.Linger,
		// Lingering only helps while other creates are under way: with
		// every one of them in the batch, waiting would only add latency.
		Enough: func(n int) bool { return b.active.Load() <= int64(n) },
	}
	// Batches outlive ctx: a batch gathered must still answer its requests.
	work := context.WithoutCancel(ctx)
	g.Run(ctx, b.cfg.InFlight, b.stopped, func(batch []*pending) { b.commit(work, batch) })
}

// commit creates a batch in one transaction and answers every request. A
// batch the database refuses for its data (class 22 or 23: one bad
// request) or for a deadlock is created again request by request, so that
// only a bad request fails; any other failure (a lost connection) is every
// request's error.
func (b *Batcher) commit(ctx context.Context, batch []*pending) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	outs, err := b.createBatch(ctx, batch)
	fallback := err != nil && retryAlone(err)
	switch {
	case fallback:
		for i, p := range batch {
			outs[i].out, outs[i].err = b.create(ctx, p.projectID, p.id, p.n)
		}
	case err != nil:
		for i := range outs {
			outs[i] = outcome{err: fmt.Errorf("batch of %d creates: %w", len(batch), err)}
		}
	}
	for i, p := range batch {
		p.reply <- outs[i]
	}
	b.logBatch(ctx, outs, fallback, err, time.Since(start))
}

// retryAlone reports whether a batch's error may be one request's fault
// (bad data) or the batch's shape (a deadlock with another batch), so that
// creating the requests one by one may succeed.
func retryAlone(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) &&
		(strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "23") || pgErr.Code == "40P01")
}

// logBatch writes the batch's one line, at debug (each request has its
// access log line); a batch created one by one or not at all is a warning.
func (b *Batcher) logBatch(ctx context.Context, outs []outcome, fallback bool, err error, took time.Duration) {
	failed := 0
	for _, o := range outs {
		if o.err != nil {
			failed++
		}
	}
	attrs := []any{"creates", len(outs), "failed", failed, "duration", took}
	switch {
	case fallback:
		b.log.WarnContext(ctx, "created hooks", append(attrs,
			"fallback", "batch refused by the database; created request by request", "batch_err", err)...)
	case err != nil:
		b.log.WarnContext(ctx, "batch of hook creates failed", append(attrs, "err", err)...)
	default:
		b.log.DebugContext(ctx, "created hooks", attrs...)
	}
}

// createBatch creates the batch's hooks in one transaction: outs[i] is the
// outcome of batch[i], whose error, if any, is its own (the quota refused
// it). An error is the whole batch's: nothing was created.
func (s *Service) createBatch(ctx context.Context, batch []*pending) ([]outcome, error) {
	outs := make([]outcome, len(batch))
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return outs, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	q := store.New(tx)
	projects := make([]uuid.UUID, len(batch))
	for i, p := range batch {
		projects[i] = p.projectID
	}
	tallies, err := quota.Lock(ctx, q, projects)
	if err != nil {
		return outs, err
	}
	taken := judge(batch, tallies, outs)
	if err := insertTaken(ctx, q, batch, taken, outs); err != nil {
		return outs, err
	}
	if err := quota.Save(ctx, q, tallies); err != nil {
		return outs, err
	}
	if err := tx.Commit(ctx); err != nil {
		return outs, fmt.Errorf("commit: %w", err)
	}
	return outs, nil
}

// judge counts each request against its project's quota, in order, and
// returns the indexes of those that may create their hook.
func judge(batch []*pending, tallies map[uuid.UUID]*quota.Tally, outs []outcome) []int {
	taken := make([]int, 0, len(batch))
	for i, p := range batch {
		t, ok := tallies[p.projectID]
		if !ok {
			outs[i].err = fmt.Errorf("project plan: %w", postgres.ErrNotFound)
			continue
		}
		outs[i].out.charge, outs[i].err = t.Take()
		if outs[i].err == nil {
			taken = append(taken, i)
		}
	}
	return taken
}

// insertTaken inserts the hooks of the requests at taken in one statement.
func insertTaken(ctx context.Context, q *store.Queries, batch []*pending, taken []int, outs []outcome) error {
	if len(taken) == 0 {
		return nil
	}
	arg := store.InsertHooksParams{
		Ids: make([]string, len(taken)), ProjectIds: make([]string, len(taken)),
		Paths: make([]string, len(taken)), Datas: make([]string, len(taken)),
		PostAts: make([]time.Time, len(taken)), PostInSeconds: make([]int64, len(taken)),
		RetryOverrides: make([]string, len(taken)),
	}
	for j, i := range taken {
		p := batch[i]
		arg.Ids[j], arg.ProjectIds[j], arg.Paths[j] = p.id.String(), p.projectID.String(), p.n.Path
		arg.Datas[j], arg.RetryOverrides[j] = string(p.n.Data), string(p.n.RetryOverride)
		arg.PostInSeconds[j] = -1
		if p.n.PostAt != nil {
			arg.PostAts[j] = *p.n.PostAt
		} else {
			arg.PostInSeconds[j] = int64(p.n.PostIn.Seconds())
		}
	}
	rows, err := q.InsertHooks(ctx, arg)
	if err != nil {
		return fmt.Errorf("insert hooks: %w", postgres.Translate(err))
	}
	byID := make(map[uuid.UUID]store.Hook, len(rows))
	for _, h := range rows {
		byID[h.ID] = h
	}
	for _, i := range taken {
		h, ok := byID[batch[i].id]
		if !ok {
			// Its project was deleted after Lock: count nothing.
			return fmt.Errorf("insert hook %s: %w", batch[i].id, postgres.ErrNotFound)
		}
		outs[i].out.hook = h
	}
	return nil
}
