package claim

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// Publishing. A claim has committed before anything is published, so a
// failed publish is logged and counted, never retried here (the publisher
// only waits out a stream's leader election, electionWait): the lease
// expiry re-drives the hooks that were not published.

// publish publishes the messages of claimed rows, holding each until the
// database clock, bounded by clock, reaches its due instant; how says which
// path claimed them (poll or just-in-time), for the span and the log line.
func (c *Claimer) publish(ctx context.Context, rows []store.ClaimHooksRow, clock dbClock, start time.Time, how string) {
	if len(rows) == 0 {
		return
	}
	c.instruments.claimed.Add(ctx, int64(len(rows)))
	msgs := c.messages(ctx, rows, clock)
	pubStart := time.Now()
	pubCtx, endTrace := c.instruments.traceClaim(ctx, len(rows), len(msgs), start, how)
	published, err := c.pub.PublishAll(pubCtx, msgs)
	endTrace(published, err)
	end := time.Now()
	c.instruments.recordPublish(ctx, rows, published, err, end)
	c.logBatch(ctx, how, len(rows), len(msgs), published, end.Sub(start), end.Sub(pubStart), err)
	if event.IsStreamGone(err) {
		c.streamsLost.Store(true)
	}
}

// messages builds the messages of claimed rows: their DueHooks, each with
// the hold it still needs (hold.go), in batches of up to DueBatch (due.go),
// and the failed results of attempts given up.
func (c *Claimer) messages(ctx context.Context, rows []store.ClaimHooksRow, clock dbClock) []bus.Message {
	msgs := make([]bus.Message, 0, len(rows)/c.cfg.DueBatch+1)
	batch := bus.DueBatch{Max: c.cfg.DueBatch}
	now := time.Now()
	for _, r := range rows {
		if c.givenUp(r) {
			msgs = append(msgs, c.giveUp(ctx, r))
			continue
		}
		due := c.dueHook(r)
		if hold := holdAt(now, clock.releaseAt(r.DueAt)); hold > 0 {
			due.Hold = durationpb.New(hold)
		}
		if !batch.Fits(due) {
			msgs = append(msgs, batch.Take())
		}
		if batch.Add(due) {
			msgs = append(msgs, batch.Take())
		}
	}
	if batch.Len() > 0 {
		msgs = append(msgs, batch.Take())
	}
	c.admit.countDue(msgs)
	return msgs
}

// healStreams re-creates the streams after a publish found none, and
// reports whether claiming may go on. A claim whose hooks cannot be
// published costs each of them a whole lease before it is re-driven; so
// while the streams cannot be reached or re-created (NATS down, or a
// cluster electing a stream leader, which answers nobody for seconds),
// claims wait, with the hooks still unclaimed in PostgreSQL, and are
// published as soon as the streams answer again.
func (c *Claimer) healStreams(ctx context.Context) error {
	if !c.streamsLost.Load() {
		return nil
	}
	if err := event.EnsureStreams(ctx, c.js, c.cfg.StreamReplicas); err != nil {
		return fmt.Errorf("streams unavailable, claims wait: %w", err)
	}
	c.streamsLost.Store(false)
	c.log.Info("the streams answer again after a publish found none")
	return nil
}

// logBatch writes the one line per claim: duration is the whole of it,
// publish_duration the part spent publishing; published counts hooks,
// messages the JetStream messages that carried them.
func (c *Claimer) logBatch(ctx context.Context, how string, claimed, messages, published int, took, publishing time.Duration, err error) {
	attrs := []any{"via", how, "count", claimed, "messages", messages, "published", published,
		"duration", took, "publish_duration", publishing}
	if err != nil {
		c.log.WarnContext(ctx, "claimed due hooks; publish failed, leases will re-drive them",
			append(attrs, "err", err)...)
		return
	}
	c.log.InfoContext(ctx, "claimed due hooks", attrs...)
}
