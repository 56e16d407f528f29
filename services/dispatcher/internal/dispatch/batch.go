package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
)

// Batches of due hooks. The scheduler publishes the hooks of a claim
// together in a DueHooks message (its claim package, due.go). Each hook is
// delivered as if it had come alone, side by side on the handler's
// delivery pool, and the message is acknowledged once every hook is
// reported. A hook that a single message would have handed back to
// JetStream (its host busy, the database away, shutdown cutting the
// delivery short) cannot be: the message is the batch's. So it is
// published again as a DueHook of its own, under the id its scheduler
// would have given it, and takes the single path from there.

// inProgressEvery is how often a batch still being delivered restarts its
// message's AckWait (30 s, event.DispatcherConsumer): a batch waits for
// delivery slots, and its deliveries may each take the delivery timeout.
const inProgressEvery = 10 * time.Second

// handleBatch delivers every hook of a DueHooks message and returns once
// each is reported, skipped or handed back. It returns bus.Drop for a
// message that does not decode, and an error (the message comes back, and
// with it hooks already delivered) only when a hook could not be handed
// back.
func (h *Handler) handleBatch(ctx context.Context, d bus.Delivery) error {
	var batch eventv1.DueHooks
	if err := proto.Unmarshal(d.Data, &batch); err != nil {
		return bus.Drop(fmt.Errorf("decode DueHooks: %w", err))
	}
	defer keepAlive(d)()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		handBack []*eventv1.DueHook
	)
	for _, msg := range batch.GetHooks() {
		due, err := check(msg)
		if err != nil {
			// A scheduler bug: the lease re-drives the hook, if it is one.
			h.log.ErrorContext(ctx, "malformed hook in a DueHooks batch; skipped", "err", err)
			continue
		}
		wg.Add(1)
		h.deliveries.Go(func() {
			defer wg.Done()
			if err := h.deliverOne(ctx, due, d.NumDelivered); err != nil {
				mu.Lock()
				handBack = append(handBack, msg)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return h.handBack(ctx, handBack)
}

// handBack publishes hooks of a batch again, each as a DueHook of its own.
// It runs even when shutdown cancelled ctx: that is when it is needed.
func (h *Handler) handBack(ctx context.Context, hooks []*eventv1.DueHook) error {
	ctx = context.WithoutCancel(ctx)
	var errs []error
	for _, due := range hooks {
		msg := bus.Message{
			Subject: event.SubjectDue,
			MsgID:   event.MsgID(event.KindDue, due.GetHookId(), due.GetLeaseSeq()),
			Body:    due,
		}
		if err := h.cfg.Result.Publish(ctx, msg); err != nil {
			errs = append(errs, err)
		}
	}
	if len(hooks) > 0 {
		h.log.LogAttrs(ctx, slog.LevelInfo, "hooks of a batch handed back as messages of their own",
			slog.Int("count", len(hooks)), slog.Int("failed", len(errs)))
	}
	if len(errs) > 0 {
		return fmt.Errorf("hand back %d of %d hooks: %w", len(errs), len(hooks), errors.Join(errs...))
	}
	return nil
}

// keepAlive restarts d's AckWait every inProgressEvery until the returned
// function is called.
func keepAlive(d bus.Delivery) (stop func()) {
	if d.InProgress == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(inProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = d.InProgress()
			}
		}
	}()
	return func() { close(done) }
}
