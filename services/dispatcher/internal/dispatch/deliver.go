package dispatch

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/dispatcher/internal/credential"
	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
	"github.com/sundial-run/sundial/services/dispatcher/internal/hostlimit"
)

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

// handle is one checked hook's handling; ctx carries its span, so the
// result is published with that span's trace context. A hook that cannot
// be delivered now (its lease too near its end, its flow or host at its
// limit) is deferred: reported as OUTCOME_DEFERRED, nothing sent, no
// attempt counted (deferral.go).
func (h *Handler) handle(ctx context.Context, due dueHook) (handled, error) {
	log := deliveryLog{h: h, due: due}
	if expired, short := h.leaseTooShort(due.msg); short {
		if expired {
			// Too late even to defer: the scheduler re-drives the hook
			// under a new lease.
			log.info(ctx, "lease expired before delivery; skipped", slog.Time("lease_expires_at", due.msg.GetLeaseExpiresAt().AsTime()))
			return handled{outcome: "lease_expired"}, nil
		}
		// A result for this lease might come after the scheduler has
		// re-driven the hook and be ignored as stale, the hook delivered
		// twice: hand the hook back to the scheduler instead.
		return h.deferHook(ctx, log, due, 0, "lease too close to its end to deliver")
	}
	creds, err := h.cfg.Credentials.Get(ctx, due.projectID)
	if errors.Is(err, postgres.ErrNotFound) {
		log.info(ctx, "project no longer exists; skipped")
		return handled{outcome: "project_gone"}, nil
	}
	if err != nil {
		return handled{outcome: "error"}, err
	}
	if due.msg.GetListener() {
		return h.handleListener(ctx, log, due, creds)
	}
	slot, wait := h.takeHostSlot(ctx, due, creds.MaxConcurrency)
	if slot == nil {
		return h.deferHook(ctx, log, due, wait, "host at its concurrency limit")
	}
	res, err := h.deliver(ctx, due, creds)
	// The host is done with; publishing the result must not hold its slot.
	slot.Done(sample(res, err))
	if connectionsSpent(err) {
		return h.deferHook(ctx, log, due, connectWait, "host's new connections spent")
	}
	if err != nil {
		return handled{outcome: "interrupted"}, err
	}
	log.delivery(ctx, res)
	h.publish(ctx, log, due, res)
	return handled{outcome: outcomeName(res.Outcome), statusCode: res.StatusCode}, nil
}

// hostWait is how long a delivery waits for a slot on its busy flow
// before its hook is deferred. A fast receiver at its limit frees a slot
// within a few milliseconds, so the wait serves it at the pace it answers;
// a slow one holds the process's slot no longer than this (and a flow
// whose deliveries take longer is not waited for at all: hostlimit).
const hostWait = 100 * time.Millisecond

// takeHostSlot reserves a delivery slot for the hook's project on its host,
// under the project's cap (0: none), waiting up to hostWait; or returns nil
// and how long to defer the hook.
func (h *Handler) takeHostSlot(ctx context.Context, due dueHook, projectCap int) (*hostlimit.Slot, time.Duration) {
	if h.cfg.Hosts == nil {
		return noLimit, 0
	}
	return h.cfg.Hosts.Acquire(ctx, due.limitKey(), projectCap, hostWait)
}

// noLimit is the slot of a handler without a per-host bound.
var noLimit = &hostlimit.Slot{}

// sample is what a delivery teaches its flow's limit (hostlimit's
// Signal): an answer, a timeout, or a sign of overload (a 429 or 503
// answer, a connection error). A delivery cut short (shutdown) or never
// sent (no key to sign with, a refused URL: no exchange, no duration)
// teaches nothing.
func sample(res delivery.Result, err error) hostlimit.Sample {
	if err != nil || res.Duration == 0 {
		return hostlimit.Sample{}
	}
	s := hostlimit.Sample{Signal: hostlimit.Answered, Latency: res.Duration}
	switch {
	case res.TimedOut:
		s.Signal = hostlimit.TimedOut
	case res.StatusCode == 0, res.StatusCode == http.StatusTooManyRequests, res.StatusCode == http.StatusServiceUnavailable:
		s.Signal = hostlimit.Overloaded
	}
	return s
}

// resultMargin is the time a delivery's result needs, after the exchange,
// to be published and applied before the lease ends.
const resultMargin = 2 * time.Second

// leaseTooShort reports whether the hook's lease could end before a
// delivery started now is reported (short): then the scheduler would
// re-drive it while this delivery is still in flight, and the hook would
// arrive twice; and whether it has already ended (expired). The time
// needed is the delivery timeout plus resultMargin, but at most half the
// lease, so that a short lease (tests, a deployment that chose one) still
// lets the queue's first half deliver. A message of a scheduler that sends
// no lease duration is checked against expiry alone.
func (h *Handler) leaseTooShort(msg *eventv1.DueHook) (expired, short bool) {
	timeout := h.cfg.DeliveryTimeout
	if msg.GetListener() {
		timeout = h.cfg.ListenerTimeout
	}
	// An unknown lease (zero) makes the need zero: expiry alone.
	need := min(timeout+resultMargin, msg.GetLeaseDuration().AsDuration()/2)
	left := time.Until(msg.GetLeaseExpiresAt().AsTime())
	return left <= 0, left <= need
}

// deliver sends the hook, or fails the attempt without sending when the
// project has no key to sign with: the customer then sees why in the hook's
// failureError instead of receiving unsigned requests.
func (h *Handler) deliver(ctx context.Context, due dueHook, creds credential.Set) (delivery.Result, error) {
	if len(creds.Keys) == 0 {
		return noSigningKey(), nil
	}
	req := request(due, creds)
	done := h.cfg.Metrics.start(ctx)
	res, err := h.send(ctx, req, due.host)
	done(ctx, res, err)
	if err == nil && due.msg.GetAttempt() == 1 {
		h.cfg.Metrics.recordLateness(ctx, res.StartedAt, req.PostAt)
	}
	return res, err
}

// noSigningKey is the failed attempt of a project with no key to sign
// with: the customer then sees why in the hook's failureError instead of
// receiving unsigned requests.
func noSigningKey() delivery.Result {
	return delivery.Result{
		Outcome:   eventv1.Outcome_OUTCOME_FAILURE,
		Error:     "project has no active signing key",
		StartedAt: time.Now(),
	}
}

// request is the delivery of a hook with its project's credentials.
func request(due dueHook, creds credential.Set) delivery.Request {
	m := due.msg
	return delivery.Request{
		HookID:        due.hookText,
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
}
