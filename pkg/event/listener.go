package event

import "strings"

// The listener's request and reply on core NATS (docs/listener.md,
// "Routing"; eventv1.ListenerDelivery and eventv1.ListenerAnswer). Not a
// stream: a request nobody answers is a deferred delivery.

// ListenerDeliverPrefix starts the subject of a project's listener
// deliveries; ListenerDeliverSubject is the whole subject.
const ListenerDeliverPrefix = "sundial.listen.deliver."

// ListenerQueue is the queue group of the gateways holding a project's
// listener sockets: each request reaches exactly one of them.
const ListenerQueue = "sundial-listen"

// ListenerDeliverSubject is the subject a dispatcher sends a project's
// listener deliveries to: sundial.listen.deliver.<projectID>.
func ListenerDeliverSubject(projectID string) string {
	return ListenerDeliverPrefix + projectID
}

// The errors of a listener's failed attempts, as the dispatcher reports
// them: a nack is "listener: <the listener's error>", no answer within the
// gateway's wait ListenerAckTimeout. The scheduler tells them apart by
// these (IsListenerFailure): they say nothing of the project's domain, so
// they do not move its circuit breaker.
const (
	ListenerErrorPrefix = "listener: "
	ListenerAckTimeout  = "ack_timeout"
)

// IsListenerFailure reports whether a failed attempt's error is a
// listener's (nack or ack timeout).
func IsListenerFailure(errText string) bool {
	return errText == ListenerAckTimeout || strings.HasPrefix(errText, ListenerErrorPrefix)
}
