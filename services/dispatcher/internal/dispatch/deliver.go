package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/dispatcher/internal/credential"
	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
	"github.com/sundial-run/sundial/services/dispatcher/internal/hostlimit"
)

// deliverOne handles one decoded DueHook under its delivery span.
func (h *Handler) deliverOne(ctx context.Context, due dueHook, delivered uint64) error {
	ctx, span := h.startDeliver(ctx, due)
	res, err := h.handle(ctx, due, delivered)
	endDeliver(span, res.outcome, res.statusCode, err)
	return err
}

// handled is what the span of a handling records.
type handled struct {
	outcome    string
	statusCode int
}

// handle is one checked hook's handling; ctx carries its span, so the
// result is published with that span's trace context.
func (h *Handler) handle(ctx context.Context, due dueHook, delivered uint64) (handled, error) {
	log := deliveryLog{h: h, due: due}
	if h.leaseTooShort(due.msg) {
		// The scheduler re-drives the hook under a new lease; a result for
		// this one might come after that and be ignored as stale, the hook
		// delivered twice.
		log.info(ctx, "lease too close to its end to deliver; skipped", slog.Time("lease_expires_at", due.msg.GetLeaseExpiresAt().AsTime()))
		return handled{outcome: "lease_expired"}, nil
	}
	release, err := h.takeHostSlot(ctx, due, delivered)
	if err != nil {
		return handled{outcome: outcomeHostBusy}, err
	}
	defer release()
	creds, err := h.cfg.Credentials.Get(ctx, due.projectID)
	if errors.Is(err, postgres.ErrNotFound) {
		log.info(ctx, "project no longer exists; skipped")
		return handled{outcome: "project_gone"}, nil
	}
	if err != nil {
		return handled{outcome: "error"}, err
	}
	res, err := h.deliver(ctx, due, creds)
	// The host is done with; publishing the result must not hold its slot.
	release()
	if err != nil {
		return handled{outcome: "interrupted"}, notSent(err, delivered)
	}
	log.delivery(ctx, res)
	h.publish(ctx, log, due, res)
	return handled{outcome: outcomeName(res.Outcome), statusCode: res.StatusCode}, nil
}

// errHostBusy is handed to bus.Retry when the destination host already has
// its limit of deliveries in flight.
var errHostBusy = errors.New("destination host at its concurrency limit")

// hostWait is how long a delivery waits for a slot on its busy host before
// handing its hook back. A fast receiver at its limit frees a slot
// within a few milliseconds, so the wait serves it at the pace it answers;
// a slow one holds the process's slot no longer than this.
const hostWait = 100 * time.Millisecond

// takeHostSlot reserves a delivery slot on the hook's host, waiting up to
// hostWait, or returns a bus.Retry error that hands the hook back (with
// its message, or in a message of its own: deliverAll) after a short delay: waiting longer would hold one of the process's delivery
// slots for a host that is already slow. The lease check above runs again
// on every redelivery, so a message handed back until its lease expired is
// never delivered.
func (h *Handler) takeHostSlot(ctx context.Context, due dueHook, delivered uint64) (func(), error) {
	if h.cfg.Hosts == nil {
		return func() {}, nil
	}
	key := hostlimit.Key(due.msg.GetUrl())
	release, ok := h.cfg.Hosts.Acquire(ctx, key, hostWait)
	if !ok {
		return nil, bus.Retry(fmt.Errorf("%w (%s, %d in flight)", errHostBusy, key, h.cfg.Hosts.Limit()), hostlimit.Backoff(delivered))
	}
	return release, nil
}

// resultMargin is the time a delivery's result needs, after the exchange,
// to be published and applied before the lease ends.
const resultMargin = 2 * time.Second

// leaseTooShort reports whether the hook's lease could end before a
// delivery started now is reported: then the scheduler would re-drive it
// while this delivery is still in flight, and the hook would arrive twice.
// The time needed is the delivery timeout plus resultMargin, but at most
// half the lease, so that a short lease (tests, a deployment that chose
// one) still lets the queue's first half deliver. A message of a scheduler
// that sends no lease duration is checked against expiry alone.
func (h *Handler) leaseTooShort(msg *eventv1.DueHook) bool {
	// An unknown lease (zero) makes the need zero: expiry alone.
	need := min(h.cfg.DeliveryTimeout+resultMargin, msg.GetLeaseDuration().AsDuration()/2)
	return time.Until(msg.GetLeaseExpiresAt().AsTime()) <= need
}

// deliver sends the hook, or fails the attempt without sending when the
// project has no key to sign with: the customer then sees why in the hook's
// failureError instead of receiving unsigned requests.
func (h *Handler) deliver(ctx context.Context, due dueHook, creds credential.Set) (delivery.Result, error) {
	if len(creds.Keys) == 0 {
		return delivery.Result{
			Outcome:   eventv1.Outcome_OUTCOME_FAILURE,
			Error:     "project has no active signing key",
			StartedAt: time.Now(),
		}, nil
	}
	m := due.msg
	req := delivery.Request{
		HookID:        due.hookID.String(),
		URL:           m.GetUrl(),
		Path:          m.GetPath(),
		Data:          m.GetData(),
		PostAt:        m.GetPostAt().AsTime(),
		CreatedAt:     m.GetCreatedAt().AsTime(),
		UpdatedAt:     m.GetUpdatedAt().AsTime(),
		Keys:          creds.Keys,
		Scheme:        creds.Scheme,
		Authorization: creds.Authorization,
		LeaseSeq:      m.GetLeaseSeq(),
		AsyncSecret:   creds.AsyncSecret,
	}
	done := h.cfg.Metrics.start(ctx)
	res, err := h.send(ctx, req, due.host)
	done(ctx, res, err)
	if err == nil && m.GetAttempt() == 1 {
		h.cfg.Metrics.recordLateness(ctx, res.StartedAt, req.PostAt)
	}
	return res, err
}
