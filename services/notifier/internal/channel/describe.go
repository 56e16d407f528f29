package channel

import (
	"context"
	"errors"
	"io"
	"net"
	"net/textproto"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/sundial-run/sundial/pkg/egress"
)

// describe puts a failed exchange in the words a user sees in a channel's
// health: "timeout after 10s", "TLS: <reason>", "connection refused",
// "DNS: no such host <host>", "destination <ip> is a loopback address",
// "SMTP 550 mailbox unavailable", else "connection error: <short reason>".
// It never names a URL: net/http's errors hold the full one.
func describe(err error, timeout time.Duration) string {
	var refused *egress.RefusedError
	var dnsErr *net.DNSError
	var netErr net.Error
	var smtpErr *textproto.Error
	switch {
	case errors.As(err, &refused):
		return refused.Error()
	case errors.As(err, &smtpErr):
		return describeSMTP(smtpErr)
	case errors.Is(err, context.Canceled):
		return "stopped before the send finished"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timeout after " + formatDuration(timeout)
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return "DNS: no such host " + dnsErr.Name
		}
		return "DNS: " + dnsErr.Err + " looking up " + dnsErr.Name
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset by the server"
	}
	if reason, ok := egress.TLSReason(err); ok {
		return "TLS: " + reason
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "the server closed the connection without an answer"
	}
	return "connection error: " + egress.Clip(egress.InnerMessage(err))
}

// enhancedCode is the RFC 3463 status ("5.1.1 ") many servers put before
// their words; the basic code already says as much.
var enhancedCode = regexp.MustCompile(`^[245]\.\d{1,3}\.\d{1,3}\s+`)

func describeSMTP(e *textproto.Error) string {
	msg := enhancedCode.ReplaceAllString(strings.TrimSpace(e.Msg), "")
	return egress.Clip("SMTP " + strconv.Itoa(e.Code) + " " + oneLine(msg))
}

// oneLine replaces control characters (line breaks above all) with spaces.
func oneLine(s string) string {
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s))
}

// formatDuration writes d the way people do: "10s", "300ms", "1m30s", "2m".
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
