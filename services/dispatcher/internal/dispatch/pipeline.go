package dispatch

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/dispatcher/internal/credential"
	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
)

// One hook's way through the dispatcher, once its message is decoded, its
// hold waited out and a delivery slot of the pool taken (message.go):
//
//  1. admit: a lease too near its end is skipped, or the hook deferred;
//  2. credentials: the project's keys (a project gone is skipped);
//  3. send: to the project's listener (listener.go), or over HTTPS once
//     its host's Retry-After wait is over (hostwait.go) and its flow has a
//     slot (hostlimit), with the exchange itself in send.go;
//  4. report: the result (result.go), or, for a hook not sent now, a
//     deferral (deferral.go), nothing sent and no attempt counted.
//
// Stages 1 and 3 say why a hook was not sent; stage 4 alone reports.

// deliverOne handles one decoded DueHook under its delivery span.
func (h *Handler) deliverOne(ctx context.Context, due dueHook) error {
	ctx, span := h.startDeliver(ctx, due)
	res, err := h.handle(ctx, due)
	endDeliver(span, res.outcome, res.statusCode, err)
	return err
}

// handled is what the span of a handling records.
type handled struct {
	outcome    string
	statusCode int
}

// sent is what the send stage did: a result to report, or, when deferWhy
// is set, nothing sent now, to be deferred for about deferFor.
type sent struct {
	res delivery.Result
	// toListener says the hook went to the project's listener, through
	// connectionID.
	toListener   bool
	connectionID string
	deferFor     time.Duration
	deferWhy     string
}

// notSent is a hook that could not be sent now.
func notSent(wait time.Duration, why string) sent {
	return sent{deferFor: wait, deferWhy: why}
}

// handle takes one checked hook through the stages above; ctx carries its
// span, so the result is published with that span's trace context.
func (h *Handler) handle(ctx context.Context, due dueHook) (handled, error) {
	log := deliveryLog{h: h, due: due}
	// 1. Admit.
	expired, short := h.leaseTooShort(due.msg)
	if expired {
		// Too late even to defer: the scheduler re-drives the hook under a
		// new lease.
		log.info(ctx, "lease expired before delivery; skipped", slog.Time("lease_expires_at", due.msg.GetLeaseExpiresAt().AsTime()))
		return handled{outcome: "lease_expired"}, nil
	}
	if short {
		// A result for this lease might come after the scheduler has
		// re-driven the hook and be ignored as stale, the hook delivered
		// twice: hand the hook back to the scheduler instead.
		return h.deferHook(ctx, log, due, 0, "lease too close to its end to deliver")
	}
	// 2. Credentials.
	creds, err := h.cfg.Credentials.Get(ctx, due.projectID)
	if errors.Is(err, postgres.ErrNotFound) {
		log.info(ctx, "project no longer exists; skipped")
		return handled{outcome: "project_gone"}, nil
	}
	if err != nil {
		return handled{outcome: "error"}, err
	}
	// 3. Send.
	var s sent
	if due.msg.GetListener() {
		s = h.sendToListener(ctx, due, creds)
	} else if s, err = h.sendOverHTTPS(ctx, due, creds); err != nil {
		return handled{outcome: "interrupted"}, err
	}
	// 4. Report.
	if s.deferWhy != "" {
		return h.deferHook(ctx, log, due, s.deferFor, s.deferWhy)
	}
	if s.toListener {
		log.listenerDelivery(ctx, s.res, s.connectionID)
	} else {
		log.delivery(ctx, s.res)
	}
	h.publish(ctx, log, due, s.res)
	return handled{outcome: outcomeName(s.res.Outcome), statusCode: s.res.StatusCode}, nil
}

// sendOverHTTPS takes a slot on the hook's flow (waiting briefly) and
// delivers it; the flow at its limit, or its host's new connections spent,
// is a hook not sent now. The error is a delivery cut short (shutdown).
func (h *Handler) sendOverHTTPS(ctx context.Context, due dueHook, creds credential.Set) (sent, error) {
	if wait := h.waits.left(due.projectID, due.limitHost, time.Now()); wait > 0 {
		return notSent(wait, "host asked to wait (Retry-After)"), nil
	}
	slot, wait := h.takeHostSlot(ctx, due, creds.MaxConcurrency)
	if slot == nil {
		return notSent(wait, "host at its concurrency limit"), nil
	}
	res, err := h.deliver(ctx, due, creds)
	if res.RetryAfter > 0 {
		h.waits.hold(due.projectID, due.limitHost, time.Now().Add(res.RetryAfter))
	}
	if err == nil && !res.TimedOut && res.Duration > 0 {
		due.slot.observe(res.Duration)
	}
	// The host is done with; publishing the result must not hold its slot.
	slot.Done(sample(res, err, due.msg.GetPath()))
	if connectionsSpent(err) {
		return notSent(connectWait, "host's new connections spent"), nil
	}
	return sent{res: res}, err
}
