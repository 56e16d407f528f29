package egress

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
)

// Wording is what a service puts before the descriptions that the services
// word differently; the zero Wording puts nothing.
type Wording struct {
	// RefusedPrefix goes before a refused destination ("destination
	// 10.0.0.1 is a private address").
	RefusedPrefix string
	// ClosedPrefix goes before "the server closed the connection without
	// an answer".
	ClosedPrefix string
}

// Describe puts a failed exchange in the words people see (a hook's
// failureError, a channel's health): "timeout after 10s", "TLS: <reason>",
// "connection refused", "DNS: no such host <host>", "destination <ip> is a
// loopback address", "the server closed the connection without an answer",
// else "connection error: <short reason>". It never names a URL: net/http's
// errors hold the full one. timeout is the limit the exchange ran under.
func (w Wording) Describe(err error, timeout time.Duration) string {
	var refused *RefusedError
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case errors.As(err, &refused):
		return w.RefusedPrefix + refused.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timeout after " + FormatDuration(timeout)
	case errors.As(err, &dnsErr):
		return describeDNS(dnsErr)
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	}
	if reason, ok := TLSReason(err); ok {
		return "TLS: " + reason
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return w.ClosedPrefix + "the server closed the connection without an answer"
	}
	return "connection error: " + Clip(InnerMessage(err))
}

func describeDNS(e *net.DNSError) string {
	if e.IsNotFound {
		return "DNS: no such host " + e.Name
	}
	return "DNS: " + e.Err + " looking up " + e.Name
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

// MaxReason bounds a described error, so that a server's long message does
// not fill an attempt's record.
const MaxReason = 200

// TLSReason recognises a failed TLS handshake and gives its reason without
// the library's "tls:" and "x509:" prefixes.
func TLSReason(err error) (string, bool) {
	var unknownAuthority x509.UnknownAuthorityError
	var verification *tls.CertificateVerificationError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var recordHeader tls.RecordHeaderError
	switch {
	case errors.As(err, &unknownAuthority):
		// Its message may go on about candidate authorities; people need
		// the gist.
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
	if msg := InnerMessage(err); strings.Contains(msg, "tls: ") {
		return Clip(trimLibraryPrefixes(msg)), true
	}
	return "", false
}

func trimLibraryPrefixes(s string) string {
	s = strings.ReplaceAll(s, "tls: ", "")
	return strings.ReplaceAll(s, "x509: ", "")
}

// InnerMessage is the innermost useful message of a network error: without
// the "Post <url>:" of net/http (which would show a URL's secrets) and the
// "dial tcp <addr>:" of net.
func InnerMessage(err error) string {
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

// Clip cuts s to MaxReason bytes (keeping it valid UTF-8) and says so.
func Clip(s string) string {
	if len(s) <= MaxReason {
		return s
	}
	return strings.ToValidUTF8(s[:MaxReason], "") + "..."
}
