package egress

import (
	"fmt"
	"net/netip"
)

type rule struct {
	prefix netip.Prefix
	reason string
}

func rules(reason string, prefixes ...string) []rule {
	out := make([]rule, len(prefixes))
	for i, p := range prefixes {
		out[i] = rule{prefix: netip.MustParsePrefix(p), reason: reason}
	}
	return out
}

// The first matching rule names the reason, so the specific ranges (the
// metadata services, the unspecified and broadcast addresses) come before
// the ranges that contain them.
var ipv4Rules = concat(
	// AWS, GCP, Azure, OpenStack; AWS ECS task metadata; Alibaba Cloud.
	rules("a cloud metadata address", "169.254.169.254/32", "169.254.170.2/32", "100.100.100.200/32"),
	rules("an unspecified address", "0.0.0.0/32"),
	rules(`a "this network" address (0.0.0.0/8)`, "0.0.0.0/8"),
	rules("a broadcast address", "255.255.255.255/32"),
	rules("a loopback address", "127.0.0.0/8"),
	rules("a private address", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"),
	rules("a shared address (100.64.0.0/10)", "100.64.0.0/10"),
	rules("a link-local address", "169.254.0.0/16"),
	rules("a multicast address", "224.0.0.0/4"),
	rules("a reserved address", "240.0.0.0/4"),
)

var ipv6Rules = concat(
	// AWS's IPv6 instance metadata service.
	rules("a cloud metadata address", "fd00:ec2::254/128"),
	rules("an unspecified address", "::/128"),
	rules("a loopback address", "::1/128"),
	rules("a link-local address", "fe80::/10"),
	rules("a private address", "fc00::/7"),
	rules("a site-local address", "fec0::/10"),
	rules("a multicast address", "ff00::/8"),
	// RFC 8215: NAT64 prefixes for use inside one network.
	rules("a local-use NAT64 address", "64:ff9b:1::/48"),
)

func concat(groups ...[]rule) []rule {
	var out []rule
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// IPv6 ranges that carry an IPv4 address, and where: a packet sent to one of
// them may reach that IPv4 address through a translator or relay.
var (
	ipv4Compatible = netip.MustParsePrefix("::/96")
	nat64          = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour      = netip.MustParsePrefix("2002::/16")
	teredo         = netip.MustParsePrefix("2001::/32")
)

// Classify returns why addr is not a public destination ("a loopback
// address", ...), or "" when it is one. It ignores any allow-list.
func Classify(addr netip.Addr) string {
	addr = addr.WithZone("")
	if addr.Is4In6() {
		return embedded("an IPv4-mapped form", addr.Unmap())
	}
	if addr.Is4() {
		return match(ipv4Rules, addr)
	}
	if r := match(ipv6Rules, addr); r != "" {
		return r
	}
	b := addr.As16()
	switch {
	case ipv4Compatible.Contains(addr):
		return embedded("an IPv4-compatible form", netip.AddrFrom4([4]byte(b[12:16])))
	case nat64.Contains(addr):
		return embedded("a NAT64 form", netip.AddrFrom4([4]byte(b[12:16])))
	case sixToFour.Contains(addr):
		return embedded("a 6to4 form", netip.AddrFrom4([4]byte(b[2:6])))
	case teredo.Contains(addr):
		// The Teredo client's IPv4 address is stored with every bit inverted.
		return embedded("a Teredo form", netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}))
	}
	return ""
}

func match(rs []rule, addr netip.Addr) string {
	for _, r := range rs {
		if r.prefix.Contains(addr) {
			return r.reason
		}
	}
	return ""
}

// embedded refuses an IPv6 address when the IPv4 address inside it would be.
func embedded(form string, v4 netip.Addr) string {
	r := match(ipv4Rules, v4)
	if r == "" {
		return ""
	}
	return fmt.Sprintf("%s of %s, %s", form, v4, r)
}
