package project

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrInvalid matches every *InvalidError with errors.Is.
var ErrInvalid = errors.New("invalid project setting")

// InvalidError is a name or domain that cannot be accepted.
type InvalidError struct {
	Field   string // "name" or "domain"
	Message string
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Message }

// Is makes errors.Is(err, ErrInvalid) hold.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

func invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// ValidateName checks a project name (1 to 200 characters, no control
// characters) and returns it without surrounding spaces.
func ValidateName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", invalid("name", "must not be empty")
	case !utf8.ValidString(name):
		return "", invalid("name", "must be valid UTF-8")
	case utf8.RuneCountInString(name) > 200:
		return "", invalid("name", "at most 200 characters")
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return "", invalid("name", "must not contain control characters")
	}
	return name, nil
}

// ValidateDomain checks where a project's hooks go: a hostname or an IP
// literal, with an optional port, and nothing else (the scheme is always
// https, the path comes from each hook). An IPv6 literal is written in
// brackets, as in a URL. It returns the domain in lower case.
func ValidateDomain(domain string) (string, error) {
	d := strings.ToLower(strings.TrimSpace(domain))
	switch {
	case d == "":
		return "", invalid("domain", "must not be empty")
	case strings.Contains(d, "://"):
		return "", invalid("domain", "%q: give the host without a scheme (https is implied)", domain)
	case strings.ContainsAny(d, "/?#"):
		return "", invalid("domain", "%q: give the host without a path (each hook has its own)", domain)
	case strings.Contains(d, "@"):
		return "", invalid("domain", "%q: must not contain user information", domain)
	case len(d) > 253:
		return "", invalid("domain", "at most 253 characters")
	}
	host, port, hasPort, err := splitHostPort(d)
	if err != nil {
		return "", invalid("domain", "%q: %s", domain, err)
	}
	if err := checkPort(port, hasPort); err != nil {
		return "", invalid("domain", "%q: %s", domain, err)
	}
	if err := checkHost(host); err != nil {
		return "", invalid("domain", "%q: %s", domain, err)
	}
	return d, nil
}

// splitHostPort splits host[:port]; the host of an IPv6 literal keeps its
// brackets so checkHost knows it was one.
func splitHostPort(d string) (host, port string, hasPort bool, err error) {
	if strings.HasPrefix(d, "[") {
		end := strings.IndexByte(d, ']')
		if end < 0 {
			return "", "", false, errors.New("missing ] after the IPv6 address")
		}
		host, rest := d[:end+1], d[end+1:]
		if rest == "" {
			return host, "", false, nil
		}
		if !strings.HasPrefix(rest, ":") {
			return "", "", false, errors.New("unexpected text after the IPv6 address")
		}
		return host, rest[1:], true, nil
	}
	switch strings.Count(d, ":") {
	case 0:
		return d, "", false, nil
	case 1:
		host, port, _ := strings.Cut(d, ":")
		return host, port, true, nil
	default:
		return "", "", false, errors.New("an IPv6 address must be written in brackets, e.g. [2001:db8::1]:8443")
	}
}

func checkPort(port string, hasPort bool) error {
	if !hasPort {
		return nil
	}
	n, err := strconv.Atoi(port)
	if err != nil || strings.TrimLeft(port, "0123456789") != "" || n < 1 || n > 65535 {
		return fmt.Errorf("port %q: want a number from 1 to 65535", port)
	}
	return nil
}

func checkHost(host string) error {
	if strings.HasPrefix(host, "[") {
		addr, err := netip.ParseAddr(strings.Trim(host, "[]"))
		if err != nil || !addr.Is6() || addr.Zone() != "" {
			return fmt.Errorf("%s is not an IPv6 address", host)
		}
		return nil
	}
	if addr, err := netip.ParseAddr(host); err == nil && addr.Is4() {
		return nil
	}
	return checkHostname(host)
}

// checkHostname applies the DNS hostname rules: dot-separated labels of 1
// to 63 letters, digits and hyphens, no hyphen at either end of a label, and
// a last label that is not all digits (that would be a malformed IPv4).
func checkHostname(host string) error {
	if host == "" {
		return errors.New("the host is missing")
	}
	labels := strings.Split(host, ".")
	for _, label := range labels {
		if err := checkLabel(label); err != nil {
			return fmt.Errorf("host %q: %w", host, err)
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return fmt.Errorf("host %q is neither a hostname nor an IPv4 address", host)
	}
	return nil
}

func checkLabel(label string) error {
	if label == "" || len(label) > 63 {
		return errors.New("each dot-separated part must be 1 to 63 characters")
	}
	if label[0] == '-' || label[len(label)-1] == '-' {
		return errors.New("a part must not begin or end with a hyphen")
	}
	for _, r := range label {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return fmt.Errorf("character %q is not allowed (letters, digits, hyphens and dots only)", r)
		}
	}
	return nil
}
