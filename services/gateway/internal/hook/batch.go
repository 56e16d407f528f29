package hook

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/batch"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
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

// Batcher is a Service whose Create batches creates without an
// Idempotency-Key or a key; Run must be running for them to make progress,
// and once it has returned they fail with batch.ErrStopped. Creates with
// either take the Service's own path, a batch of one in a transaction of
// its own: their claim of the Idempotency-Key may find an earlier hook
// instead of inserting one, and their key may replace a hook or be refused.
type Batcher struct {
	*Service
	cfg    BatchConfig
	log    *slog.Logger
	queue  *batch.Queue[pending, outcome]
	active atomic.Int64 // batched creates between their start and their answer
}

// job is a create waiting in a batch for its outcome.
type job = batch.Job[pending, outcome]

// NewBatcher returns a Batcher creating hooks with s.
func NewBatcher(s *Service, cfg BatchConfig, log *slog.Logger) (*Batcher, error) {
	if cfg.MaxBatch < 1 || cfg.MaxBatch > MaxBatchSize || cfg.Linger < 0 || cfg.Linger > MaxLinger ||
		cfg.InFlight < 1 || cfg.Timeout <= 0 {
		return nil, fmt.Errorf("create batcher: want a batch of 1 to %d, a linger of 0 to %s, at least one batch in flight and a timeout, got %d, %s, %d, %s",
			MaxBatchSize, MaxLinger, cfg.MaxBatch, cfg.Linger, cfg.InFlight, cfg.Timeout)
	}
	return &Batcher{Service: s, cfg: cfg, log: log, queue: batch.NewQueue[pending, outcome]()}, nil
}

// Create is Service.Create, batched.
func (b *Batcher) Create(ctx context.Context, projectID uuid.UUID, n New) (Hook, quota.Usage, error) {
	if n.IdempotencyKey != "" || n.Key != "" {
		return b.Service.Create(ctx, projectID, n)
	}
	b.active.Add(1)
	defer b.active.Add(-1)
	p, err := newPending(projectID, n)
	if err != nil {
		return Hook{}, quota.Usage{}, err
	}
	o, err := b.queue.Do(ctx, p)
	if err != nil {
		// Once ctx has ended the batch may still commit the hook: like a
		// response lost on the way, which a client retries with an
		// Idempotency-Key.
		return Hook{}, quota.Usage{}, fmt.Errorf("create hook: %w", err)
	}
	return b.answer(ctx, o)
}

// Run gathers and commits batches until ctx is done, then commits what it
// has gathered, waits for the batches in flight and returns. Cancel ctx
// only once no request is left (the HTTP server has shut down). Call it
// once.
func (b *Batcher) Run(ctx context.Context) {
	g := batch.Gatherer[*job]{
		Max:    b.cfg.MaxBatch,
		Linger: b.cfg.Linger,
		// Lingering only helps while other creates are under way: with
		// every one of them in the batch, waiting would only add latency.
		Enough: func(n int) bool { return b.active.Load() <= int64(n) },
	}
	// Batches outlive ctx: a batch gathered must still answer its requests.
	work := context.WithoutCancel(ctx)
	b.queue.Run(ctx, g, b.cfg.InFlight, func(jobs []*job) { b.commit(work, jobs) })
}

// commit creates a batch in one transaction and answers every request. A
// batch the database refuses for its data (class 22 or 23: one bad
// request) or for a deadlock is created again request by request, each a
// batch of one, so that only a bad request fails; any other failure (a
// lost connection) is every request's error.
func (b *Batcher) commit(ctx context.Context, jobs []*job) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	creates := make([]pending, len(jobs))
	for i, j := range jobs {
		creates[i] = j.Item
	}
	outs, err := b.createBatch(ctx, creates)
	fallback := err != nil && postgres.RetryAlone(err)
	switch {
	case fallback:
		for i, p := range creates {
			outs[i] = b.create(ctx, p)
		}
	case err != nil:
		for i := range outs {
			outs[i] = outcome{err: fmt.Errorf("batch of %d creates: %w", len(jobs), err)}
		}
	}
	for i, j := range jobs {
		j.Answer(outs[i])
	}
	b.logBatch(ctx, outs, fallback, err, time.Since(start))
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
