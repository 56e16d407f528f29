// Package egress decides which network addresses a delivery (or a notification
// channel: chat and custom webhooks) may connect to.
//
// Hook URLs are written by customers, so without a guard a delivery could be
// aimed at the deployment's own network: a database on 10.0.0.5, an admin
// port on 127.0.0.1, the cloud metadata service that hands out credentials.
// The check runs in the dialer's Control hook, on the address actually being
// dialled after DNS resolution, so neither a DNS name pointing inside nor an
// odd spelling of an IP address in the URL gets around it.
//
// It also words a failed exchange for the people who see it (describe.go),
// the same for a hook's delivery and a channel's notification.
package egress

import (
	"fmt"
	"net/netip"
	"syscall"
)

// RefusedError says that a destination address is not allowed.
type RefusedError struct {
	Addr netip.Addr
	// Reason completes "destination <addr> is ...", e.g. "a loopback address".
	Reason string
}

func (e *RefusedError) Error() string {
	return "destination " + e.Addr.String() + " is " + e.Reason
}

// Guard refuses internal destinations unless the operator allows them.
type Guard struct {
	allowAll bool
	allow    []netip.Prefix
}

// NewGuard returns a Guard. allowAll turns the guard off (development and
// tests); allow lists networks accepted even though they are internal (an
// operator's own services on a private network).
func NewGuard(allowAll bool, allow []netip.Prefix) *Guard {
	return &Guard{allowAll: allowAll, allow: append([]netip.Prefix(nil), allow...)}
}

// Check returns nil when a delivery may connect to addr, else a *RefusedError.
func (g *Guard) Check(addr netip.Addr) error {
	if g.allowAll {
		return nil
	}
	// Prefix.Contains never matches an address with a zone (fe80::1%eth0).
	addr = addr.WithZone("")
	if g.allowed(addr) {
		return nil
	}
	if reason := Classify(addr); reason != "" {
		return &RefusedError{Addr: addr, Reason: reason}
	}
	return nil
}

func (g *Guard) allowed(addr netip.Addr) bool {
	for _, p := range g.allow {
		if p.Contains(addr) || p.Contains(addr.Unmap()) {
			return true
		}
	}
	return false
}

// Control is a net.Dialer Control hook: it runs after DNS resolution with
// the "ip:port" about to be connected, and refuses internal destinations.
func (g *Guard) Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		// Fail closed: an address that cannot be checked is not dialled.
		return fmt.Errorf("egress: cannot check destination %q: %w", address, err)
	}
	return g.Check(ap.Addr())
}

// MaxResponseHeaderBytes bounds the status line and headers of an answer
// from an untrusted destination (a delivery's receiver, a webhook or chat
// channel): Go's default is 10 MB, so a handful of hostile answers at once
// could make a process read hundreds of megabytes (docs/security.md, "One
// response, one delivery").
const MaxResponseHeaderBytes = 64 << 10
