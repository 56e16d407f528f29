package report

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sundial-run/sundial/pkg/batch"
	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
)

// BatchConfig tunes a Batcher.
type BatchConfig struct {
	// MaxBatch bounds the results of one message, 2 to MaxBatchSize.
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
	// 64 KiB each.
	maxBatchBytes = 512 << 10
	// resultOverhead is what a result takes in a message besides its
	// error text and excerpt (ids, times, trace context), rounded up.
	resultOverhead = 256
)

// ErrStopped answers a result reported to a Batcher whose Run has returned.
var ErrStopped = errors.New("result batcher stopped")

// Batcher publishes attempt results in batches: one AttemptResults message
// per batch, flushed when it holds MaxBatch results (or about
// maxBatchBytes), or Linger after its first result. Report waits until the
// batch holding its result is stored, so a DueHook is acknowledged only
// once its result is on JetStream, as with a publish of its own. Run must
// be running for Report to make progress.
type Batcher struct {
	cfg     BatchConfig
	send    bus.Retrying
	log     *slog.Logger
	in      chan *item
	stopped chan struct{}
}

// item is a result waiting in a batch.
type item struct {
	result *eventv1.AttemptResult
	done   chan error // buffered: the flush never waits for its reporter
}

// NewBatcher returns a Batcher publishing with send.
func NewBatcher(cfg BatchConfig, send bus.Retrying) (*Batcher, error) {
	if cfg.InFlight == 0 {
		cfg.InFlight = 4
	}
	if cfg.MaxBatch < 2 || cfg.MaxBatch > MaxBatchSize || cfg.Linger < 0 || cfg.Linger > MaxLinger || cfg.InFlight < 1 {
		return nil, fmt.Errorf("result batcher: want a batch of 2 to %d, a linger of 0 to %s and at least one batch in flight, got %d, %s, %d",
			MaxBatchSize, MaxLinger, cfg.MaxBatch, cfg.Linger, cfg.InFlight)
	}
	log := send.Log
	if log == nil {
		log = slog.Default()
	}
	return &Batcher{cfg: cfg, send: send, log: log, in: make(chan *item), stopped: make(chan struct{})}, nil
}

// Report adds r to the next batch and waits until that batch is published.
// It returns the publish's error when every try failed, ErrStopped when Run
// has returned, or ctx's error when ctx ends first (the batch may still be
// published).
func (b *Batcher) Report(ctx context.Context, r *eventv1.AttemptResult) error {
	it := &item{result: r, done: make(chan error, 1)}
	select {
	case b.in <- it:
	case <-b.stopped:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-it.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run gathers and publishes batches until ctx is done, then publishes what
// it has gathered, waits for the publishes in flight and returns; Report
// then answers ErrStopped. Cancel ctx only once the deliveries have
// drained, so that their results go out in the last batch. Publishes are
// not cut short by ctx: each try has its own timeout. Call Run once.
func (b *Batcher) Run(ctx context.Context) {
	g := batch.Gatherer[*item]{
		In:        b.in,
		Max:       b.cfg.MaxBatch,
		Linger:    b.cfg.Linger,
		Weigh:     itemSize,
		MaxWeight: maxBatchBytes,
	}
	pubCtx := context.WithoutCancel(ctx)
	g.Run(ctx, b.cfg.InFlight, b.stopped, func(batch []*item) { b.flush(pubCtx, batch) })
}

func itemSize(it *item) int {
	return resultOverhead + len(it.result.GetError()) + len(it.result.GetResponseExcerpt())
}

// flush publishes a batch as one message and tells each reporter how it
// went. A failure is logged here, once for the batch.
func (b *Batcher) flush(ctx context.Context, batch []*item) {
	msg := batchMessage(batch)
	err := b.send.Publish(ctx, msg)
	if err != nil {
		b.log.Error("results not published; the lease expiry will re-drive their hooks",
			"results", len(batch), "msg_id", msg.MsgID, "err", err)
		err = fmt.Errorf("batch of %d results: %w", len(batch), err)
	}
	for _, it := range batch {
		it.done <- err
	}
}

// batchMessage is the AttemptResults message of a batch.
func batchMessage(batch []*item) bus.Message {
	body := &eventv1.AttemptResults{Results: make([]*eventv1.AttemptResult, len(batch))}
	ids := make([]string, len(batch))
	seqs := make([]int64, len(batch))
	for i, it := range batch {
		body.Results[i] = it.result
		ids[i] = it.result.GetHookId()
		seqs[i] = it.result.GetLeaseSeq()
	}
	return bus.Message{
		Subject: event.SubjectResult,
		MsgID:   event.ResultsMsgID(ids, seqs),
		Type:    event.TypeAttemptResults,
		Body:    body,
	}
}
