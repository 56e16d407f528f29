package dispatch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/dispatcher/internal/hostlimit"
)

// A due message. The scheduler publishes the hooks of a claim together in
// a DueHooks message (its claim package, due.go), the due subject's one
// type, a hook alone included. Each hook is delivered as if it had come
// alone, side by side on the handler's delivery pool, and the message is
// settled once every hook is reported, skipped or handed back.

// Handle is the bus.Handler of the due subject: it delivers every hook of
// the message (deliverAll) and returns bus.Drop for a message that does
// not decode (event.DecodeDue: its Sundial-Type missing or another, or its
// body malformed), which redelivery would not change; the leases of its
// hooks, if any, re-drive them.
func (h *Handler) Handle(ctx context.Context, d bus.Delivery) error {
	// A hook's hold counts from here: after the message reached this
	// process, so never before the scheduler published it.
	received := time.Now()
	hooks, err := decode(d)
	if err != nil {
		return bus.Drop(err)
	}
	if d.NumDelivered > 1 {
		hooks = h.stillLeased(ctx, hooks)
	}
	return h.deliverAll(ctx, d, received, hooks)
}

// stillLeased keeps, of a message delivered again, the hooks whose lease
// still holds: the dispatcher that had the message before may have died
// after delivering and reporting the others (its AckWait is seconds,
// event.DueAckWait). A hook whose delivery was in flight at its death has
// no result and is delivered again: the one duplicate at-least-once
// allows. When the leases cannot be read, every hook is delivered.
func (h *Handler) stillLeased(ctx context.Context, hooks []*eventv1.DueHook) []*eventv1.DueHook {
	if h.cfg.Leases == nil || len(hooks) == 0 {
		return hooks
	}
	// parsed[i] is hooks[i]'s id; a malformed one is left to check, which
	// skips it.
	parsed := make([]uuid.UUID, len(hooks))
	valid := make([]bool, len(hooks))
	ids := make([]uuid.UUID, 0, len(hooks))
	seqs := make([]int64, 0, len(hooks))
	for i, msg := range hooks {
		id, err := uuid.Parse(msg.GetHookId())
		if err != nil {
			continue
		}
		parsed[i], valid[i] = id, true
		ids = append(ids, id)
		seqs = append(seqs, msg.GetLeaseSeq())
	}
	held, err := h.cfg.Leases.Held(ctx, ids, seqs)
	if err != nil {
		h.log.WarnContext(ctx, "leases of a redelivered message not read; delivering all its hooks", "hooks", len(hooks), "err", err)
		return hooks
	}
	kept := make([]*eventv1.DueHook, 0, len(hooks))
	for i, msg := range hooks {
		if !valid[i] || held[parsed[i]] {
			kept = append(kept, msg)
		}
	}
	if done := len(hooks) - len(kept); done > 0 {
		h.log.InfoContext(ctx, "hooks of a redelivered message already delivered under their lease; skipped", "skipped", done, "kept", len(kept))
	}
	return kept
}

// decode returns the hooks of a due message (event.DecodeDue).
func decode(d bus.Delivery) ([]*eventv1.DueHook, error) {
	return event.DecodeDue(d.Header.Get(event.TypeHeader), d.Data)
}

// failure is a hook of a message that was not delivered now, and why.
type failure struct {
	hook *eventv1.DueHook
	err  error
}

// deliverAll delivers the hooks of a message, each with deliverOne, and
// returns once each is reported, deferred, skipped or handed back.
//
// A hook with a hold (claimed ahead of its due instant, the scheduler's
// claim package, hold.go) starts no sooner than its hold after received:
// the hooks are taken in the order of their holds, each waited for before
// it takes a delivery slot, so a hook waiting for its instant holds no
// slot. When ctx ends during a wait, that hook and the rest go back with
// the holds they still need, as below.
//
// A hook waits for one of the handler's delivery slots (Concurrency, with
// the slow room beside them: slot.go) at most poolWait; when the pool
// stays busy that long, it and the rest of the message are deferred
// (deferral.go), so that they wait in the database, where any dispatcher
// can take them, and not here with their leases running. Once every hook
// is delivering or deferred, the message gives its handler slot back
// (bus.Delivery.Release), so that a message waiting on one slow delivery
// does not keep the next messages from being pulled.
//
// A hook that cannot be delivered because of a fault (the database away,
// shutdown cutting the delivery short, a deferral that could not be
// reported) goes back to JetStream. When none of the message's hooks was
// delivered, deferred or skipped, the message itself goes back: deliverAll
// returns their errors, and bus settles it with its backoff. Otherwise the message
// is done with, and those hooks are published again in a DueHooks message
// of their own (handBack); deliverAll then returns an error (the message
// comes back, and with it hooks already delivered) only when that publish
// fails.
//
// A message without one well-formed hook is dropped (bus.Drop); a
// malformed hook beside well-formed ones, a scheduler bug, is skipped: the
// lease re-drives it, if it is a hook.
func (h *Handler) deliverAll(ctx context.Context, d bus.Delivery, received time.Time, hooks []*eventv1.DueHook) error {
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		failed    []failure
		malformed []error
		started   int
		poolBusy  bool
		stopped   bool
	)
	fail := func(msg *eventv1.DueHook, err error) {
		mu.Lock()
		failed = append(failed, failure{hook: msg, err: err})
		mu.Unlock()
	}
	slices.SortStableFunc(hooks, func(a, b *eventv1.DueHook) int {
		return cmp.Compare(a.GetHold().AsDuration(), b.GetHold().AsDuration())
	})
	dues := make([]dueHook, 0, len(hooks))
	for _, msg := range hooks {
		due, err := check(msg, h.cfg.Sender)
		if err != nil {
			malformed = append(malformed, err)
			continue
		}
		dues = append(dues, due)
	}
	h.warmHosts(ctx, dues)
	wait := slotWait{length: poolWait}
	defer wait.stop()
	for _, due := range dues {
		msg := due.msg
		started++
		if stopped = stopped || !waitHold(ctx, received, msg); stopped {
			keepHoldLeft(received, msg)
			fail(msg, fmt.Errorf("hook %s: stopped while holding it: %w", due.hookID, context.Cause(ctx)))
			continue
		}
		wg.Add(1)
		entered := !poolBusy && h.slots.enter(due.projectID)
		atShare := !poolBusy && !entered
		if entered {
			if due.slot = h.slots.take(ctx, &wait, due.projectID); due.slot == nil {
				h.slots.leave(due.projectID)
				poolBusy = true
			}
		}
		if due.slot == nil {
			// Each deferral waits for its result's batch: side by side.
			go func() {
				defer wg.Done()
				if err := h.deferOne(ctx, due, atShare); err != nil {
					fail(msg, err)
				}
			}()
			continue
		}
		h.deliveries.Go(func() {
			defer wg.Done()
			defer due.slot.free()
			if err := h.deliverOne(ctx, due); err != nil {
				fail(msg, err)
			}
		})
	}
	// Every hook is on its way: the message needs no more of bus's
	// handler slots, which go to the next messages while slow deliveries
	// of this one finish.
	d.Release()
	wg.Wait()
	if started == 0 && len(malformed) > 0 {
		return bus.Drop(errors.Join(malformed...))
	}
	for _, err := range malformed {
		h.log.ErrorContext(ctx, "malformed hook in a DueHooks batch; skipped", "err", err)
	}
	if started > 0 && len(failed) == started {
		errs := make([]error, len(failed))
		for i, f := range failed {
			errs[i] = f.err
		}
		return errors.Join(errs...)
	}
	return h.handBack(ctx, failed)
}

// warmHosts opens, while the message's held hooks wait out their holds,
// connections to their receivers (delivery.Client's Warm): for each
// project's hooks to a host, as many as the most of them due together
// (largestCrowd) and its flow may send at once (hostlimit), counting the
// host's connections already open; each on a goroutine of its own that
// ends within the client's timeout or at Close. The hooks due at a host
// gone cold then find connections open at their due instant, instead of
// spending two round trips to the receiver and a TLS handshake after it;
// a host with enough connections costs a look in the pool. Two projects'
// crowds at one host are each warmed alone, not added up. Listener
// deliveries open nothing.
func (h *Handler) warmHosts(ctx context.Context, hooks []dueHook) {
	type crowd struct {
		url   string
		holds []time.Duration // in increasing order, as hooks are
	}
	var (
		keys   []hostlimit.Key
		crowds map[hostlimit.Key]*crowd // made at the first held hook: a burst's messages hold none
	)
	for _, due := range hooks {
		hold := due.msg.GetHold().AsDuration()
		if hold <= 0 || due.msg.GetListener() {
			continue
		}
		if crowds == nil {
			crowds = map[hostlimit.Key]*crowd{}
		}
		key := due.limitKey()
		c := crowds[key]
		if c == nil {
			c = &crowd{url: due.msg.GetUrl()}
			crowds[key] = c
			keys = append(keys, key)
		}
		c.holds = append(c.holds, hold)
	}
	for _, key := range keys {
		c := crowds[key]
		n := largestCrowd(c.holds)
		if h.cfg.Hosts != nil {
			n = min(n, h.cfg.Hosts.Limit(key))
		}
		h.warming.Go(func() {
			if err := h.cfg.Sender.Warm(h.warmCtx, c.url, n); err != nil && h.warmCtx.Err() == nil {
				h.log.DebugContext(ctx, "receiver not warmed ahead of its held hooks", "host", key.Host, "err", err)
			}
		})
	}
}

// crowdWindow is how close together holds end for their hooks to count as
// due together: a delivery takes longer than this, so such hooks are in
// flight at once, each on a connection of its own.
const crowdWindow = time.Millisecond

// largestCrowd is the most of holds (in increasing order) that end within
// crowdWindow of one another.
func largestCrowd(holds []time.Duration) int {
	most, first := 0, 0
	for i, d := range holds {
		for d-holds[first] > crowdWindow {
			first++
		}
		most = max(most, i-first+1)
	}
	return most
}

// waitHold waits until msg's hold, counted from received, has passed and
// clears it, so that a hook handed back later is not held again; false
// when ctx ended first.
func waitHold(ctx context.Context, received time.Time, msg *eventv1.DueHook) bool {
	if wait := time.Until(holdEnd(received, msg)); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return false
		}
	}
	msg.Hold = nil
	return true
}

// keepHoldLeft sets msg's hold to what is left of it now, for a hand-back
// (the next dispatcher counts it from its own arrival, later than now).
func keepHoldLeft(received time.Time, msg *eventv1.DueHook) {
	left := time.Until(holdEnd(received, msg))
	msg.Hold = nil
	if left > 0 {
		msg.Hold = durationpb.New(left)
	}
}

// holdEnd is the instant msg's hold, counted from received, ends.
func holdEnd(received time.Time, msg *eventv1.DueHook) time.Time {
	return received.Add(msg.GetHold().AsDuration())
}

// poolWait bounds a hook's wait for a delivery slot: a pool busy that long
// is busy with slow deliveries, and the hook is better deferred (another
// dispatcher may have room) than held with its lease running. Longer than
// a burst's hooks wait for a fast receiver (the due messages in hand are
// delivered in well under a second), so a healthy burst is not deferred.
const poolWait = 2 * time.Second

// poolDefer is the suggested deferral of a hook that found the pool busy;
// shareDefer that of a hook whose project holds its share of the pool,
// which its deliveries, most of them slow ones by then, free at their
// pace.
const (
	poolDefer  = time.Second
	shareDefer = 2 * time.Second
)

// deferOne defers a hook that found the delivery pool busy, or its
// project at its share of it (atShare), under its deliver span like any
// other handling.
func (h *Handler) deferOne(ctx context.Context, due dueHook, atShare bool) error {
	ctx, span := h.startDeliver(ctx, due)
	wait, why := poolDefer, "delivery pool busy"
	if atShare {
		wait, why = shareDefer, "project at its share of the delivery pool"
	}
	res, err := h.deferHook(ctx, deliveryLog{h: h, due: due}, due, wait, why)
	endDeliver(span, res.outcome, 0, err)
	return err
}

// dueHook is a decoded and checked DueHook.
type dueHook struct {
	msg       *eventv1.DueHook
	hookID    uuid.UUID
	projectID uuid.UUID
	// hookText and projectText are the ids as uuid.UUID.String() spells
	// them: the message's own strings when they are spelled so (the
	// scheduler's always are), which spares a delivery three formattings.
	hookText, projectText string
	// host is the destination's host[:port] for the log line and the
	// span, and limitHost the host its deliveries count against
	// (hostlimit.HostOf), both from the sender's parse of the URL (which
	// its request then reuses); both "" for a URL no delivery is sent to.
	host, limitHost string
	// slot is the delivery slot the hook holds, nil when none.
	slot *deliverySlot
}

// check validates a decoded DueHook; s tells where its URL goes.
func check(msg *eventv1.DueHook, s Sender) (dueHook, error) {
	hookID, err := uuid.Parse(msg.GetHookId())
	if err != nil {
		return dueHook{}, fmt.Errorf("DueHook hook_id %q: %w", msg.GetHookId(), err)
	}
	projectID, err := uuid.Parse(msg.GetProjectId())
	if err != nil {
		return dueHook{}, fmt.Errorf("DueHook %s project_id %q: %w", hookID, msg.GetProjectId(), err)
	}
	if msg.GetLeaseExpiresAt() == nil {
		return dueHook{}, fmt.Errorf("DueHook %s has no lease_expires_at", hookID)
	}
	if len(msg.GetData()) == 0 {
		return dueHook{}, fmt.Errorf("DueHook %s has no data", hookID)
	}
	// A hold beyond the lease would keep the message in hand past the
	// instant the scheduler re-drives the hook (the scheduler's holds are
	// at most its claim-ahead, 2 s).
	if hold := msg.GetHold().AsDuration(); hold > msg.GetLeaseDuration().AsDuration() {
		return dueHook{}, fmt.Errorf("DueHook %s holds %s, longer than its lease of %s", hookID, hold, msg.GetLeaseDuration().AsDuration())
	}
	due := dueHook{msg: msg, hookID: hookID, projectID: projectID,
		hookText: canonical(msg.GetHookId(), hookID), projectText: canonical(msg.GetProjectId(), projectID)}
	due.host, due.limitHost = s.Destination(msg.GetUrl())
	return due, nil
}

// limitKey is the flow the hook's deliveries count against (hostlimit).
func (d dueHook) limitKey() hostlimit.Key {
	return hostlimit.Key{Project: d.msg.GetProjectId(), Host: d.limitHost}
}

// canonical returns s, the text id was parsed from, when it is spelled as
// id.String() spells it (36 characters, lower case), else id.String().
func canonical(s string, id uuid.UUID) string {
	if len(s) == 36 && strings.ToLower(s) == s {
		return s
	}
	return id.String()
}

// handBack publishes the failed hooks of a message again, in DueHooks
// messages of their own, split by bus.SplitDue's rule so that none exceeds
// the NATS server's max_payload (docs/security.md, "Sizes agree end to
// end"). It runs even when shutdown cancelled ctx: that is when it is
// needed. It stops at the first publish that fails: the message then comes
// back whole, and is handed back again.
func (h *Handler) handBack(ctx context.Context, failed []failure) error {
	if len(failed) == 0 {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	hooks := make([]*eventv1.DueHook, len(failed))
	for i, f := range failed {
		hooks[i] = f.hook
	}
	for _, msg := range bus.SplitDue(hooks, 0) {
		err := h.cfg.HandBack.Publish(ctx, msg)
		h.log.LogAttrs(ctx, slog.LevelInfo, "hooks not delivered now handed back in a message of their own",
			slog.Int("count", msg.Items), slog.String("msg_id", msg.MsgID), slog.Bool("published", err == nil))
		if err != nil {
			return fmt.Errorf("hand back %d hooks: %w", msg.Items, err)
		}
	}
	return nil
}
