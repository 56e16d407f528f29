package channel

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/textproto"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/sundial-run/sundial/pkg/egress"
)

// maxReason bounds the words of an unexpected error, which end up in the
// send's record and the dashboard.
const maxReason = 200

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
	if reason, ok := tlsReason(err); ok {
		return "TLS: " + reason
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "the server closed the connection without an answer"
	}
	return "connection error: " + clip(innerMessage(err))
}

// enhancedCode is the RFC 3463 status ("5.1.1 ") many servers put before
// their words; the basic code already says as much.
var enhancedCode = regexp.MustCompile(`^[245]\.\d{1,3}\.\d{1,3}\s+`)

func describeSMTP(e *textproto.Error) string {
	msg := enhancedCode.ReplaceAllString(strings.TrimSpace(e.Msg), "")
	return clip("SMTP " + strconv.Itoa(e.Code) + " " + oneLine(msg))
}

// tlsReason recognises a failed TLS handshake and gives its reason without
// the library's "tls:" and "x509:" prefixes.
func tlsReason(err error) (string, bool) {
	var unknownAuthority x509.UnknownAuthorityError
	var verification *tls.CertificateVerificationError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var recordHeader tls.RecordHeaderError
	switch {
	case errors.As(err, &unknownAuthority):
		return "certificate signed by unknown authority", true
	case errors.As(err, &hostname):
		return trimLibraryPrefixes(hostname.Error()), true
	case errors.As(err, &invalid):
		return trimLibraryPrefixes(invalid.Error()), true
	case errors.As(err, &verification):
		return trimLibraryPrefixes(verification.Err.Error()), true
	case errors.As(err, &recordHeader):
		return "the server did not answer with TLS", true
	}
	if msg := innerMessage(err); strings.Contains(msg, "tls: ") {
		return clip(trimLibraryPrefixes(msg)), true
	}
	return "", false
}

func trimLibraryPrefixes(s string) string {
	s = strings.ReplaceAll(s, "tls: ", "")
	return strings.ReplaceAll(s, "x509: ", "")
}

// innerMessage is the innermost useful message: without the "Post <url>:"
// of net/http (which would show a chat URL's token) and the "dial tcp
// <addr>:" of net.
func innerMessage(err error) string {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op != "remote error" {
		err = opErr.Err
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}

func clip(s string) string {
	if len(s) <= maxReason {
		return s
	}
	return strings.ToValidUTF8(s[:maxReason], "") + "..."
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
