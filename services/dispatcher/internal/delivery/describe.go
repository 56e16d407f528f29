package delivery

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/sundial-run/sundial/pkg/egress"
)

// Describe puts a failed exchange in the words customers see in a hook's
// failureError (docs/product.md, "Hooks"): "timeout after 10s",
// "TLS: <reason>", "connection refused", "DNS: no such host <host>",
// "refused: destination <ip> is a loopback address", else
// "connection error: <short reason>".
func Describe(err error, timeout time.Duration) string {
	var refused *egress.RefusedError
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case errors.As(err, &refused):
		return "refused: " + refused.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timeout after " + FormatDuration(timeout)
	case errors.As(err, &dnsErr):
		return describeDNS(dnsErr)
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	}
	if reason, ok := egress.TLSReason(err); ok {
		return "TLS: " + reason
	}
	return "connection error: " + shortReason(err)
}

func describeDNS(e *net.DNSError) string {
	if e.IsNotFound {
		return "DNS: no such host " + e.Name
	}
	return "DNS: " + e.Err + " looking up " + e.Name
}

// shortReason is the innermost useful message: without the "Post <url>:"
// of net/http and the "dial tcp <addr>:" of net.
func shortReason(err error) string {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "the server closed the connection without an answer"
	}
	return egress.Clip(egress.InnerMessage(err))
}

// FormatDuration writes d the way people do: "10s", "300ms", "1m30s", "2m".
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
