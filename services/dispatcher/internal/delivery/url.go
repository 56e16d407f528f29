package delivery

import (
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sundial-run/sundial/services/dispatcher/internal/hostlimit"
)

// target is where a delivery goes.
type target struct {
	// addr is the host and port dialled (443 unless the URL names one).
	addr string
	// host is the Host header: the URL's host, with its port if it has one.
	host string
	// serverName is the name the certificate must hold: the host without
	// port or brackets.
	serverName string
	// requestURI is the path and query as sent on the request line.
	requestURI string
	// limitHost is the host the URL's deliveries count against
	// (hostlimit.HostOf): its lower-cased host and port.
	limitHost string
}

// maxTargets bounds the URLs a targets cache keeps.
const maxTargets = 1024

// targets keeps the targets of the URLs lately delivered to: a project's
// deliveries go to a few URLs, and parsing each delivery's URL again (with
// its host and port joined, and its request line) was a visible share of
// the dispatcher's CPU in a burst
// (docs/benchmarks.md, "The delivery's HTTP/1.1 exchange"). A target
// depends on nothing but its URL's text (no address is resolved here: the
// dial resolves and checks it). Bounded: when it has maxTargets URLs, it
// forgets them all and starts again, so with the longest URLs a hook may
// have (a 253-byte domain, a 2,048-byte path) it holds about 6 MiB at
// most. Safe for concurrent use.
type targets struct {
	parsed sync.Map // URL -> target
	count  atomic.Int64
}

// parse is parseTarget, from the cache when raw was parsed lately. An
// invalid URL is not kept.
func (c *targets) parse(raw string) (target, error) {
	if t, ok := c.parsed.Load(raw); ok {
		return t.(target), nil
	}
	t, err := parseTarget(raw)
	if err != nil {
		return target{}, err
	}
	if c.count.Add(1) > maxTargets {
		c.parsed.Clear()
		c.count.Store(1)
	}
	c.parsed.Store(raw, t)
	return t, nil
}

// Destination is where a delivery to rawURL goes, as the dispatcher logs
// and limits it: host is the Host header (the URL's host, with its port if
// it has one), limitHost the host its deliveries count against
// (hostlimit.HostOf). Both are "" for a URL no delivery is sent to (Send
// fails it). From the targets cache, so a hook's URL is parsed once for
// its limit, its log line and its request.
func (c *Client) Destination(rawURL string) (host, limitHost string) {
	t, err := c.targets.parse(rawURL)
	if err != nil {
		return "", ""
	}
	return t.host, t.limitHost
}

// parseTarget accepts only absolute https URLs: a delivery always uses
// HTTPS.
func parseTarget(raw string) (target, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return target{}, errors.New("invalid URL")
	}
	if u.Scheme != "https" || u.Host == "" || u.User != nil {
		return target{}, errors.New("invalid URL: want https://host/path")
	}
	name := u.Hostname()
	if legacyIPv4(name) {
		// Some resolvers (glibc's inet_aton) read these as addresses; the
		// guard would still check the result, but a URL that only some
		// machines understand is refused outright.
		return target{}, errors.New("invalid URL: host " + name + " is an IPv4 address in a legacy spelling")
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	host := strings.TrimSuffix(u.Host, ":")
	return target{addr: net.JoinHostPort(name, port), host: host, serverName: name, requestURI: u.RequestURI(),
		limitHost: hostlimit.HostOf(u)}, nil
}

// legacyIPv4 reports whether host is an IPv4 address in one of the forms
// inet_aton accepts besides the dotted quad of four decimals: one to four
// parts, each decimal, octal (leading 0) or hex (0x), e.g. 2130706433,
// 0x7f000001, 0177.0.0.1, 127.1 and 0.
func legacyIPv4(host string) bool {
	if _, err := netip.ParseAddr(host); err == nil {
		return false
	}
	host = strings.TrimSuffix(host, ".")
	parts := strings.Split(host, ".")
	if len(parts) > 4 {
		return false
	}
	for _, p := range parts {
		if !inetNumber(p) {
			return false
		}
	}
	return true
}

// inetNumber reports whether s is a number as inet_aton reads it.
func inetNumber(s string) bool {
	digits, base := s, 10
	switch {
	case len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X"):
		digits, base = s[2:], 16
	case len(s) > 1 && s[0] == '0':
		digits, base = s[1:], 8
	}
	if digits == "" {
		return false
	}
	_, err := strconv.ParseUint(digits, base, 64)
	return err == nil
}
