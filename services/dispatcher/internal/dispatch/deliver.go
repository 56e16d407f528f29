package dispatch

import (
	"context"
	"net/http"
	"time"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/dispatcher/internal/credential"
	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
	"github.com/sundial-run/sundial/services/dispatcher/internal/hostlimit"
)

// hostWait is how long a delivery waits for a slot on its busy flow
// before its hook is deferred. A deferral is not free: it costs a result,
// its write, a claim and a due message again, about what the delivery
// itself costs, and on a machine short of processor time each one makes
// the next slot later still. So a hook waits in memory for a slot as long
// as one is expected within a second (the flow's median answer and the
// waiters ahead: hostlimit), costing a goroutine; once it has held its
// pool slot as long as a slow delivery, the slot goes to the next hook as
// a slow delivery's does (slot.go), so other hosts' hooks do not wait
// behind it. A flow whose slots free slower than this is not waited for.
const hostWait = time.Second

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
func sample(res delivery.Result, err error, path string) hostlimit.Sample {
	if err != nil || res.Duration == 0 {
		return hostlimit.Sample{}
	}
	s := hostlimit.Sample{Signal: hostlimit.Answered, Latency: res.Duration, Path: path}
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
		Class:     eventv1.FailureClass_FAILURE_CLASS_REFUSED,
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
