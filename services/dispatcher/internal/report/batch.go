package report

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sundial-run/sundial/pkg/batch"
	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
)

// BatchConfig tunes a Batcher.
type BatchConfig struct {
	// MaxBatch bounds the results of one message, 1 to MaxBatchSize.
	MaxBatch int
	// Linger is how long a batch waits, after its first result, for more
	// (0 to MaxLinger; 0 takes only the results already waiting).
	Linger time.Duration
	// InFlight bounds the batches being published at once (default 4).
	InFlight int
}

// Bounds of BatchConfig.
const (
	MaxBatchSize = 1000
	MaxLinger    = time.Second
	// maxBatchBytes bounds a batch's encoded size well below NATS's
	// smallest usual max_payload (1 MiB): response excerpts may be up to
	// 64 KiB each, and recorded headers 8 KiB a side (package delivery).
	maxBatchBytes = 512 << 10
	// resultOverhead is what a result takes in a message besides its
	// error text, excerpt and headers (ids, times, trace context), rounded
	// up.
	resultOverhead = 256
)

// Batcher publishes attempt results in batches: one AttemptResults message
// per batch, flushed when it holds MaxBatch results (or about
// maxBatchBytes), or Linger after its first result. Report waits until the
// batch holding its result is stored, so a DueHook is acknowledged only
// once its result is on JetStream, as with a publish of its own. Run must
// be running for Report to join a batch.
type Batcher struct {
	cfg   BatchConfig
	send  bus.Retrying
	log   *slog.Logger
	queue *batch.Queue[*eventv1.AttemptResult, error]
}

// job is a result waiting in a batch; its answer is the publish's error.
type job = batch.Job[*eventv1.AttemptResult, error]

// NewBatcher returns a Batcher publishing with send.
func NewBatcher(cfg BatchConfig, send bus.Retrying) (*Batcher, error) {
	if cfg.InFlight == 0 {
		cfg.InFlight = 4
	}
	if cfg.MaxBatch < 1 || cfg.MaxBatch > MaxBatchSize || cfg.Linger < 0 || cfg.Linger > MaxLinger || cfg.InFlight < 1 {
		return nil, fmt.Errorf("result batcher: want a batch of 1 to %d, a linger of 0 to %s and at least one batch in flight, got %d, %s, %d",
			MaxBatchSize, MaxLinger, cfg.MaxBatch, cfg.Linger, cfg.InFlight)
	}
	log := send.Log
	if log == nil {
		log = slog.Default()
	}
	return &Batcher{cfg: cfg, send: send, log: log, queue: batch.NewQueue[*eventv1.AttemptResult, error]()}, nil
}

// Report adds r to the next batch and waits until that batch is published.
// It returns the publish's error when every try failed, or ctx's error
// when ctx ends first (the batch may still be published). Once Run has
// returned, r is published in a message of its own.
func (b *Batcher) Report(ctx context.Context, r *eventv1.AttemptResult) error {
	published, err := b.queue.Do(ctx, r)
	if errors.Is(err, batch.ErrStopped) {
		return b.publish(ctx, []*eventv1.AttemptResult{r})
	}
	if err != nil {
		return err
	}
	return published
}

// Run gathers and publishes batches until ctx is done, then publishes what
// it has gathered, waits for the publishes in flight and returns. Cancel
// ctx only once the deliveries have drained, so that their results go out
// in the last batch. Publishes are not cut short by ctx: each try has its
// own timeout. Call Run once.
func (b *Batcher) Run(ctx context.Context) {
	g := batch.Gatherer[*job]{
		Max:       b.cfg.MaxBatch,
		Linger:    b.cfg.Linger,
		Weigh:     jobSize,
		MaxWeight: maxBatchBytes,
	}
	pubCtx := context.WithoutCancel(ctx)
	b.queue.Run(ctx, g, b.cfg.InFlight, func(jobs []*job) { b.flush(pubCtx, jobs) })
}

func jobSize(j *job) int {
	r := j.Item
	return resultOverhead + len(r.GetError()) + len(r.GetResponseExcerpt()) +
		headersSize(r.GetRequestHeaders()) + headersSize(r.GetResponseHeaders())
}

// headersSize is about what h takes in a message: its names and values,
// and a few bytes of framing each.
func headersSize(h *eventv1.Headers) int {
	n := 0
	for _, f := range h.GetFields() {
		n += len(f.GetName()) + 4
		for _, v := range f.GetValues() {
			n += len(v) + 2
		}
	}
	return n
}

// flush publishes a batch as one message and tells each reporter how it
// went.
func (b *Batcher) flush(ctx context.Context, jobs []*job) {
	results := make([]*eventv1.AttemptResult, len(jobs))
	for i, j := range jobs {
		results[i] = j.Item
	}
	err := b.publish(ctx, results)
	for _, j := range jobs {
		j.Answer(err)
	}
}

// publish publishes results as one AttemptResults message. A failure is
// logged here, once for the message.
func (b *Batcher) publish(ctx context.Context, results []*eventv1.AttemptResult) error {
	msg := bus.AttemptResults(results)
	if err := b.send.Publish(ctx, msg); err != nil {
		b.log.ErrorContext(ctx, "results not published; the lease expiry will re-drive their hooks",
			"results", len(results), "msg_id", msg.MsgID, "err", err)
		return fmt.Errorf("batch of %d results: %w", len(results), err)
	}
	return nil
}
