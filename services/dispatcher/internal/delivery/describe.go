package delivery

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/sundial-run/sundial/pkg/egress"
)

// maxReason bounds the words of an unexpected error, which end up in the
// hook's failureError and the dashboard.
const maxReason = 200

// Describe puts a failed exchange in the words customers see in a hook's
// failureError (decisions.md): "timeout after 10s", "TLS: <reason>",
// "connection refused", "DNS: no such host <host>", "refused: destination
// <ip> is a loopback address", else "connection error: <short reason>".
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
	if reason, ok := tlsReason(err); ok {
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
		// Its message may go on about candidate authorities; the customer
		// needs the gist.
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

// shortReason is the innermost useful message: without the "Post <url>:"
// of net/http and the "dial tcp <addr>:" of net.
func shortReason(err error) string {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "the server closed the connection without an answer"
	}
	return clip(innerMessage(err))
}

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
