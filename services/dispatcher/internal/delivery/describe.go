package delivery

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/sundial-run/sundial/pkg/egress"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
)

// wording is the dispatcher's: customers have always read "refused: ..."
// for a refused destination and counted a connection closed without an
// answer among the connection errors.
var wording = egress.Wording{RefusedPrefix: "refused: ", ClosedPrefix: "connection error: "}

// Describe puts a failed exchange in the words customers see in a hook's
// failureError (docs/product.md, "Hooks"): "timeout after 10s",
// "TLS: <reason>", "connection refused", "DNS: no such host <host>",
// "refused: destination <ip> is a loopback address",
// "response headers larger than 64 KiB", else
// "connection error: <short reason>".
func Describe(err error, timeout time.Duration) string {
	if errors.Is(err, errHeadersTooLarge) { // conn.go
		return tooLargeHeaders
	}
	return wording.Describe(err, timeout)
}

// tooLargeHeaders is the failure of an answer whose headers went over
// MaxResponseHeaderBytes.
const tooLargeHeaders = "response headers larger than 64 KiB"

// Classify is the failure class of a failed exchange (docs/choices.md,
// "Failure classes"), decided as Describe words it, in the same order: a
// refused destination, a timeout (a lookup that timed out included), a
// name that did not resolve, a failed TLS handshake, headers over the
// bound; any other error of the exchange is a connection's.
func Classify(err error) eventv1.FailureClass {
	var refused *egress.RefusedError
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case errors.Is(err, errHeadersTooLarge):
		return eventv1.FailureClass_FAILURE_CLASS_TOO_LARGE
	case errors.As(err, &refused):
		return eventv1.FailureClass_FAILURE_CLASS_REFUSED
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return eventv1.FailureClass_FAILURE_CLASS_TIMEOUT
	case errors.As(err, &dnsErr):
		return eventv1.FailureClass_FAILURE_CLASS_DNS
	}
	if _, ok := egress.TLSReason(err); ok {
		return eventv1.FailureClass_FAILURE_CLASS_TLS
	}
	return eventv1.FailureClass_FAILURE_CLASS_CONNECT
}
