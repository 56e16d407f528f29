package egress

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/url"
	"strings"
	"syscall"
)

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
