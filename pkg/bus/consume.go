package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/telemetry"
)

// Delivery is one message handed to a Handler.
type Delivery struct {
	Subject string
	Data    []byte
	Header  nats.Header
	// NumDelivered counts deliveries of this message, 1 the first time.
	NumDelivered uint64

	release func()
}

// Release gives the message's handler slot to the next message while its
// handler goes on: for a handler whose remaining work waits on others (a
// slow receiver, say) rather than on this process. The message is still
// kept in progress and settled when the handler returns. At most
// ConsumeOptions.Released handlers are released at once; beyond that, and
// when called again, Release does nothing. Call it from the handler's own
// goroutine.
func (d Delivery) Release() {
	if d.release != nil {
		d.release()
	}
}

// Handler processes one message. Its context carries the trace context of
// the publisher. It returns nil, Retry(...), Drop(...) or another error.
type Handler func(ctx context.Context, d Delivery) error

// ConsumeOptions tune Consume.
type ConsumeOptions struct {
	// Concurrency bounds the handlers running at once (default 1).
	Concurrency int
	// DrainTimeout bounds how long Consume waits, once its context is done,
	// for running handlers to finish; after it their context is cancelled
	// and their messages are handed back (default 15 s).
	DrainTimeout time.Duration
	// Logger receives one line per settled message at debug level and
	// errors at warn level.
	Logger *slog.Logger
	// Settled, when set, is told the outcome of every message (for metrics).
	Settled func(Outcome)
	// Released bounds the handlers that gave their slot back
	// (Delivery.Release) and still run, besides Concurrency (default 0:
	// Release does nothing).
	Released int
}

// Consume runs handler on the messages of a durable consumer until ctx is
// done, then stops pulling, lets running handlers finish (or hands their
// messages back) and returns. If the stream or consumer disappears (NATS
// lost its store, an operator deleted it) Consume creates them again and
// resumes; it retries with a bounded backoff while NATS is unreachable.
//
// A message is in a handler from the moment it reaches this process: each
// pull asks for as many messages as there are free handlers, so none waits
// in a client-side buffer. While its handler runs, the message's AckWait is
// restarted every quarter of it (keeper), so that a consumer's AckWait can
// be short: it then bounds how long the messages of a process that died
// wait before another takes them, not how long a handler may work.
func Consume(ctx context.Context, js jetstream.JetStream, c event.Consumer, handler Handler, opts ConsumeOptions) error {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 1
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 15 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	log := opts.Logger.With("consumer", c.Config.Durable)

	// Handlers get a context that outlives ctx by the drain timeout, so that
	// SIGTERM lets in-flight work finish.
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	w := &worker{handler: handler, opts: opts, log: log, slots: make(chan struct{}, opts.Concurrency),
		released: make(chan struct{}, max(opts.Released, 0)),
		pool:     NewPool(opts.Concurrency + max(opts.Released, 0)), keeper: newKeeper(c.Config.AckWait / 4)}
	keeping := w.keeper.run()
	defer keeping()

	delay := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := w.runOnce(ctx, workCtx, js, c)
		if ctx.Err() != nil {
			break
		}
		log.Warn("consumer interrupted; restarting", "err", err, "after", delay)
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
		delay = min(delay*2, 5*time.Second)
		if err == nil {
			delay = 100 * time.Millisecond
		}
	}
	w.drain(opts.DrainTimeout, cancelWork)
	return nil
}

// worker runs the handlers of one Consume on a Pool of Concurrency
// goroutines, which ends when Consume returns.
type worker struct {
	handler Handler
	opts    ConsumeOptions
	log     *slog.Logger
	slots   chan struct{}
	// released holds a token per handler released (Delivery.Release).
	released chan struct{}
	pool     *Pool
	keeper   *keeper

	// mu orders running.Add against drain's running.Wait: once closing is
	// set no handler starts, so Wait cannot race with a new Add.
	mu      sync.Mutex
	closing bool
	running sync.WaitGroup
}

// dispatch runs the handler of msg, whose slot is taken and which begin
// counted, on the pool.
func (w *worker) dispatch(workCtx context.Context, msg jetstream.Msg) {
	w.pool.Go(func() {
		s := handlerSlot{w: w}
		w.handle(workCtx, msg, s.release)
		s.free()
		w.running.Done()
	})
}

// handlerSlot is a running handler's hold on a slot, or once released on
// the released room. One goroutine, the handler's, owns it.
type handlerSlot struct {
	w        *worker
	released bool
}

func (s *handlerSlot) release() {
	if s.released {
		return
	}
	select {
	case s.w.released <- struct{}{}:
		s.released = true
		<-s.w.slots
	default:
	}
}

func (s *handlerSlot) free() {
	if s.released {
		<-s.w.released
		return
	}
	<-s.w.slots
}

// begin registers a handler about to run; false once draining has begun.
func (w *worker) begin() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closing {
		return false
	}
	w.running.Add(1)
	return true
}

// Pulls last at most fetchWait, with a heartbeat from the server every
// fetchHeartbeat: a consumer lost without a 409 (the server may drop it
// when the stream is deleted) is noticed by the missing heartbeat within
// 2 x fetchHeartbeat, and shutdown waits at most fetchWait for the pull in
// progress, whose messages are then handed back at once.
const (
	fetchWait      = time.Second
	fetchHeartbeat = 500 * time.Millisecond
)

// runOnce ensures the stream and consumer exist and consumes until ctx is
// done or the consumer is lost. A nil error means it ran and was lost.
func (w *worker) runOnce(ctx, workCtx context.Context, js jetstream.JetStream, c event.Consumer) error {
	// A work queue's consumer has as many replicas as its stream (JetStream
	// requires it), so the consumer's are the streams'.
	if err := event.EnsureStreams(ctx, js, c.Config.Replicas); err != nil {
		return err
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, c.Stream, c.Config)
	if err != nil {
		return fmt.Errorf("create consumer %s: %w", c.Config.Durable, err)
	}
	for {
		free := w.reserve(ctx)
		if free == 0 {
			return ctx.Err()
		}
		batch, err := cons.Fetch(free, jetstream.FetchMaxWait(fetchWait), jetstream.FetchHeartbeat(fetchHeartbeat))
		if err != nil {
			w.release(free)
			return fmt.Errorf("pull from %s: %w", c.Config.Durable, err)
		}
		for msg := range batch.Messages() {
			free--
			if ctx.Err() != nil || !w.begin() {
				// Shutting down: start nothing new, hand the message back.
				_ = msg.Nak()
				<-w.slots
				continue
			}
			w.dispatch(workCtx, msg)
		}
		w.release(free)
		if err := batch.Error(); err != nil {
			// A lost consumer (deleted, its heartbeat missing) or a
			// connection gone: Consume makes sure of the consumer again,
			// after its backoff.
			return err
		}
	}
}

// reserve waits for a free handler slot and takes it with every other one
// free, so that a pull asks for no more messages than can start at once;
// it returns how many it took, 0 once ctx is done.
func (w *worker) reserve(ctx context.Context) int {
	select {
	case w.slots <- struct{}{}:
	case <-ctx.Done():
		return 0
	}
	n := 1
	for n < w.opts.Concurrency {
		select {
		case w.slots <- struct{}{}:
			n++
		default:
			return n
		}
	}
	return n
}

// release gives back n reserved slots that no message took.
func (w *worker) release(n int) {
	for range n {
		<-w.slots
	}
}

func (w *worker) handle(ctx context.Context, msg jetstream.Msg, release func()) {
	delivered := uint64(1)
	if meta, err := msg.Metadata(); err == nil {
		delivered = meta.NumDelivered
	}
	ctx = telemetry.ExtractNATS(ctx, msg.Headers())
	stopKeeping := w.keeper.keep(msg)
	err := w.handler(ctx, Delivery{Subject: msg.Subject(), Data: msg.Data(), Header: msg.Headers(), NumDelivered: delivered, release: release})
	stopKeeping()
	outcome, settleErr := settle(msg, delivered, err)
	if settleErr != nil {
		w.log.Warn("settle message", "outcome", outcome, "err", settleErr)
	}
	var retry *retryError
	switch {
	case err == nil || outcome == OutcomeAck:
	case errors.As(err, &retry):
		// Asked for by the handler (a busy destination, say): expected.
		w.log.Debug("message handed back", "delivered", delivered, "after", retry.after, "err", err)
	default:
		w.log.Warn("message not processed", "outcome", outcome, "delivered", delivered, "err", err)
	}
	if w.opts.Settled != nil {
		w.opts.Settled(outcome)
	}
}

// drain waits for running handlers, at most timeout, then cancels them.
func (w *worker) drain(timeout time.Duration, cancel context.CancelFunc) {
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	done := make(chan struct{})
	go func() { w.running.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		w.log.Warn("drain timed out; handing back in-flight messages", "timeout", timeout)
		cancel()
		<-done
	}
	// No handler runs and none can start: the pool's goroutines end.
	w.pool.Close()
}
