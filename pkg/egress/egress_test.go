package egress_test

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/egress"
)

// Decimal, hex and short IPv4 spellings ("2130706433", "0x7f.1", "127.1")
// never reach the guard as text: the dialer hands it a resolved address, so
// the table is of addresses.
func TestCheckRefusesInternalAddresses(t *testing.T) {
	t.Parallel()
	guard := egress.NewGuard(false, nil)
	refused := map[string]string{
		"127.0.0.1":          "a loopback address",
		"127.255.0.9":        "a loopback address",
		"10.1.2.3":           "a private address",
		"172.16.0.1":         "a private address",
		"172.31.255.254":     "a private address",
		"192.168.1.1":        "a private address",
		"100.64.0.1":         "a shared address (100.64.0.0/10)",
		"169.254.1.1":        "a link-local address",
		"169.254.169.254":    "a cloud metadata address",
		"169.254.170.2":      "a cloud metadata address",
		"100.100.100.200":    "a cloud metadata address",
		"0.0.0.0":            "an unspecified address",
		"0.1.2.3":            `a "this network" address (0.0.0.0/8)`,
		"224.0.0.1":          "a multicast address",
		"239.255.255.250":    "a multicast address",
		"255.255.255.255":    "a broadcast address",
		"240.0.0.1":          "a reserved address",
		"::1":                "a loopback address",
		"::":                 "an unspecified address",
		"fe80::1":            "a link-local address",
		"fc00::1":            "a private address",
		"fd12:3456::1":       "a private address",
		"fd00:ec2::254":      "a cloud metadata address",
		"ff02::1":            "a multicast address",
		"64:ff9b:1::a00:1":   "a local-use NAT64 address",
		"::ffff:127.0.0.1":   "an IPv4-mapped form of 127.0.0.1, a loopback address",
		"::ffff:10.0.0.1":    "an IPv4-mapped form of 10.0.0.1, a private address",
		"::127.0.0.1":        "an IPv4-compatible form of 127.0.0.1, a loopback address",
		"64:ff9b::7f00:1":    "a NAT64 form of 127.0.0.1, a loopback address",
		"64:ff9b::a9fe:a9fe": "a NAT64 form of 169.254.169.254, a cloud metadata address",
		"2002:7f00:1::":      "a 6to4 form of 127.0.0.1, a loopback address",
		"2002:c0a8:101::1":   "a 6to4 form of 192.168.1.1, a private address",
		// Teredo: server 65.54.227.120, client 127.0.0.1 stored inverted.
		"2001:0:4136:e378:8000:63bf:80ff:fffe": "a Teredo form of 127.0.0.1, a loopback address",
	}
	for s, reason := range refused {
		t.Run(s, func(t *testing.T) {
			t.Parallel()
			addr := netip.MustParseAddr(s)
			err := guard.Check(addr)
			var re *egress.RefusedError
			require.ErrorAs(t, err, &re)
			require.Equal(t, reason, re.Reason)
			require.Equal(t, "destination "+addr.String()+" is "+reason, err.Error())
		})
	}
}

func TestCheckAllowsPublicAddresses(t *testing.T) {
	t.Parallel()
	guard := egress.NewGuard(false, nil)
	for _, s := range []string{
		"93.184.216.34", "8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "11.0.0.1",
		"2606:4700::1111", "2a00:1450:4001::200e",
		"::ffff:93.184.216.34", "64:ff9b::808:808", "2002:5db8:d822::1",
		// Teredo whose client (inverted last 32 bits) is 93.184.216.34.
		"2001:0:4136:e378:8000:63bf:a247:27dd",
	} {
		t.Run(s, func(t *testing.T) {
			t.Parallel()
			require.NoError(t, guard.Check(netip.MustParseAddr(s)))
		})
	}
}

func TestAllowPrivateAllowsEverything(t *testing.T) {
	t.Parallel()
	guard := egress.NewGuard(true, nil)
	for _, s := range []string{"127.0.0.1", "10.0.0.1", "169.254.169.254", "::1", "fe80::1%eth0", "64:ff9b::7f00:1"} {
		require.NoError(t, guard.Check(netip.MustParseAddr(s)), s)
	}
}

func TestAllowCIDRs(t *testing.T) {
	t.Parallel()
	guard := egress.NewGuard(false, []netip.Prefix{
		netip.MustParsePrefix("127.0.0.0/8"),
		netip.MustParsePrefix("10.20.0.0/16"),
		netip.MustParsePrefix("fd00:1::/32"),
	})
	for _, s := range []string{"127.0.0.1", "127.9.9.9", "::ffff:127.0.0.1", "10.20.3.4", "fd00:1::5"} {
		require.NoError(t, guard.Check(netip.MustParseAddr(s)), s)
	}
	// Outside the allowed networks the usual rules apply.
	for _, s := range []string{"10.21.0.1", "192.168.0.1", "169.254.169.254", "::1", "fd00:2::1"} {
		require.Error(t, guard.Check(netip.MustParseAddr(s)), s)
	}
}

func TestCheckIgnoresZones(t *testing.T) {
	t.Parallel()
	guard := egress.NewGuard(false, []netip.Prefix{netip.MustParsePrefix("fe80::/64")})
	require.NoError(t, guard.Check(netip.MustParseAddr("fe80::1%eth0")))
	require.Error(t, egress.NewGuard(false, nil).Check(netip.MustParseAddr("fe80::1%eth0")))
}

func TestControlChecksTheDialledAddress(t *testing.T) {
	t.Parallel()
	guard := egress.NewGuard(false, nil)
	var re *egress.RefusedError
	require.ErrorAs(t, guard.Control("tcp4", "127.0.0.1:443", nil), &re)
	require.ErrorAs(t, guard.Control("tcp6", "[::ffff:7f00:1]:443", nil), &re)
	require.NoError(t, guard.Control("tcp4", "93.184.216.34:443", nil))
	require.NoError(t, guard.Control("tcp6", "[2606:4700::1111]:443", nil))

	// An address it cannot read is refused, never waved through.
	err := guard.Control("tcp", "localhost:443", nil)
	require.Error(t, err)
	require.False(t, errors.As(err, &re))
}
