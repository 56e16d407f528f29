package dispatch

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/dispatcher/internal/credential"
	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
)

// The listener's deliveries (docs/listener.md, "Routing"). A DueHook that
// says listener is not POSTed: the same request an HTTPS delivery would
// make (delivery.Client.Prepare: body, signed headers, async URLs) goes to
// the gateway holding a socket of the project's listener as a NATS
// request, and its answer becomes the attempt's result, published like any
// other. Nothing is sent to the domain, so the per-host limit does not
// apply; the dispatcher's overall bound on deliveries in flight does (the
// delivery pool runs this as any delivery).
//
// The result of an answer: ack is a success, nack a failure with the
// listener's error, accept an async wait with the listener's timeout,
// timeout (no answer from the listener within the gateway's 10 s) a failure
// "ack_timeout" (the error texts are event's: the scheduler keeps them out
// of the domain's circuit breaker). No HTTP exchange took place, so status_code is 0 (the API
// shows no statusCode) and there is no response excerpt. No gateway to
// answer (no responders, GONE, or no reply within ListenerTimeout) defers
// the hook: nothing was attempted, and the claim routes it again, to the
// listener if the project still listens, else held or to the domain.

// DefaultListenerTimeout is Config.ListenerTimeout's default: the
// gateway's 10 s wait for the listener, and 2 s for the reply to travel.
const DefaultListenerTimeout = 12 * time.Second

// listenerWait is how long a hook waits after its listener could not be
// reached: long enough for a reconnecting listener or the claim to see the
// presence change, short enough that a delivery is not noticeably late.
const listenerWait = time.Second

// maxListenerError bounds a nack's error text in the attempt (the gateway
// bounds it too).
const maxListenerError = 1024

// spanListener names the client span of a listener delivery.
const spanListener = "listener deliver"

// sendToListener delivers a hook to its project's listener; the listener
// not reached (or not routable from here) is a hook not sent now.
func (h *Handler) sendToListener(ctx context.Context, due dueHook, creds credential.Set) sent {
	if h.cfg.Listener == nil {
		return notSent(listenerWait, "no listener route configured")
	}
	if len(creds.Keys) == 0 {
		return sent{res: noSigningKey(), toListener: true}
	}
	req := request(due, creds)
	prepared := h.cfg.Sender.Prepare(req, time.Now())
	done := h.cfg.Metrics.start(ctx)
	answer, err := h.askListener(ctx, listenerDelivery(due, prepared))
	res, ok := listenerResult(answer, prepared.SentAt)
	if err != nil || !ok {
		done(ctx, res, errNotDelivered)
		return notSent(listenerWait, listenerUnreached(answer, err))
	}
	done(ctx, res, nil)
	// What the listener got; no HTTP answer came back.
	res.RequestHeaders = prepared.Recorded("")
	if due.msg.GetAttempt() == 1 {
		h.cfg.Metrics.recordLateness(ctx, res.StartedAt, req.PostAt)
	}
	return sent{res: res, toListener: true, connectionID: answer.GetConnectionId()}
}

// errNotDelivered tells the metrics that a listener delivery had no
// outcome to count (the hook is deferred).
var errNotDelivered = errors.New("listener not reached")

// askListener makes the request inside a client span.
func (h *Handler) askListener(ctx context.Context, d *eventv1.ListenerDelivery) (*eventv1.ListenerAnswer, error) {
	ctx, span := h.tracer.Start(ctx, spanListener, trace.WithSpanKind(trace.SpanKindClient))
	defer span.End()
	answer, err := h.cfg.Listener.Deliver(ctx, d)
	if err != nil {
		span.SetStatus(codes.Error, "listener not reached")
	}
	return answer, err
}

// listenerDelivery is the request of a prepared delivery: what the
// listener's hook message shows, and the HTTPS request byte for byte.
func listenerDelivery(due dueHook, p delivery.Prepared) *eventv1.ListenerDelivery {
	m := due.msg
	headers := make(map[string]string, len(p.Header))
	for name, values := range p.Header {
		headers[name] = strings.Join(values, ", ")
	}
	return &eventv1.ListenerDelivery{
		HookId:      due.hookText,
		ProjectId:   due.projectText,
		Attempt:     m.GetAttempt(),
		MaxAttempts: m.GetMaxAttempts(),
		Path:        m.GetPath(),
		Data:        m.GetData(),
		PostAt:      m.GetPostAt(),
		PostedAt:    timestamppb.New(p.SentAt),
		CreatedAt:   m.GetCreatedAt(),
		UpdatedAt:   m.GetUpdatedAt(),
		Timestamp:   p.SentAt.Unix(),
		AckUrl:      p.AckURL,
		NackUrl:     p.NackURL,
		Body:        p.Body,
		Headers:     headers,
	}
}

// listenerResult is the attempt's result of an answer, and false when the
// answer says nothing was delivered (GONE, or a kind this release does not
// know): then the hook is deferred.
func listenerResult(a *eventv1.ListenerAnswer, sentAt time.Time) (delivery.Result, bool) {
	res := delivery.Result{StartedAt: sentAt, Duration: time.Since(sentAt)}
	switch a.GetKind() {
	case eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_ACK:
		res.Outcome = eventv1.Outcome_OUTCOME_SUCCESS
	case eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_NACK:
		res.Outcome = eventv1.Outcome_OUTCOME_FAILURE
		res.Error = listenerError(a.GetError())
		res.Class = eventv1.FailureClass_FAILURE_CLASS_LISTENER
	case eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_ACCEPT:
		res.Outcome = eventv1.Outcome_OUTCOME_ASYNC
		res.AsyncTimeoutSeconds = max(a.GetAsyncTimeoutSeconds(), 0)
	case eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_TIMEOUT:
		res.Outcome = eventv1.Outcome_OUTCOME_FAILURE
		res.Error = event.ListenerAckTimeout
		res.Class = eventv1.FailureClass_FAILURE_CLASS_LISTENER
	default:
		return res, false
	}
	return res, true
}

// listenerError is a nack's error as the attempt records it: "listener:
// <error>", valid UTF-8, bounded.
func listenerError(text string) string {
	if text == "" {
		return event.ListenerErrorPrefix + "nack"
	}
	cut := len(text) > maxListenerError
	if cut {
		text = text[:maxListenerError]
	}
	return event.ListenerErrorPrefix + delivery.Excerpt([]byte(text), cut)
}

// listenerUnreached says why a listener delivery was deferred.
func listenerUnreached(a *eventv1.ListenerAnswer, err error) string {
	switch {
	case err != nil:
		return "listener not reached: " + err.Error()
	case a.GetKind() == eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_GONE:
		return "listener gone"
	}
	return "listener answer not understood: " + a.GetKind().String()
}

// listenerDelivery writes the one line of a listener delivery.
func (l deliveryLog) listenerDelivery(ctx context.Context, res delivery.Result, connectionID string) {
	extra := [5]slog.Attr{
		slog.String("route", "listener"),
		slog.String("outcome", outcomeName(res.Outcome)),
		slog.Int64("duration_ms", res.Duration.Milliseconds()),
		slog.String("connection_id", connectionID),
	}
	n := 4
	if res.Error != "" {
		extra[n] = slog.String("error", res.Error)
		n++
	}
	l.info(ctx, "delivery", extra[:n]...)
}
