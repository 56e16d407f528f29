package auththrottle

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestBlocksAnAddressPastItsFailuresUntilTheWindowEnds(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	th := New(Options{Failures: 3, Now: c.now})
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	for range 3 {
		_, blocked := th.Blocked(a)
		require.False(t, blocked)
		th.Failed(a)
	}
	c.t = c.t.Add(20 * time.Second)
	left, blocked := th.Blocked(a)
	require.True(t, blocked)
	require.Equal(t, 40*time.Second, left)
	_, blocked = th.Blocked(b)
	require.False(t, blocked, "another address is not affected")

	c.t = c.t.Add(40 * time.Second)
	_, blocked = th.Blocked(a)
	require.False(t, blocked, "the window ended")
	th.Failed(a)
	_, blocked = th.Blocked(a)
	require.False(t, blocked, "a new window counts from one")
}

func TestCountsIPv6PerSlash64(t *testing.T) {
	t.Parallel()
	th := New(Options{Failures: 2})
	th.Failed(netip.MustParseAddr("2001:db8:1:2::1"))
	th.Failed(netip.MustParseAddr("2001:db8:1:2:ffff::9"))
	_, blocked := th.Blocked(netip.MustParseAddr("2001:db8:1:2::77"))
	require.True(t, blocked, "the same /64")
	_, blocked = th.Blocked(netip.MustParseAddr("2001:db8:1:3::1"))
	require.False(t, blocked, "another /64")
	th.Failed(netip.MustParseAddr("::ffff:192.0.2.9"))
	th.Failed(netip.MustParseAddr("192.0.2.9"))
	_, blocked = th.Blocked(netip.MustParseAddr("192.0.2.9"))
	require.True(t, blocked, "an IPv4-mapped address is its IPv4 address")
}

func TestRemembersABoundedNumberOfAddresses(t *testing.T) {
	t.Parallel()
	th := New(Options{Failures: 1, Addresses: 2})
	a, b, c := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("192.0.2.3")
	th.Failed(a)
	th.Failed(b)
	th.Failed(a) // a is now the most recent
	th.Failed(c) // forgets b, the least recently failing
	require.Len(t, th.entries, 2)
	for addr, want := range map[netip.Addr]bool{a: true, b: false, c: true} {
		_, blocked := th.Blocked(addr)
		require.Equal(t, want, blocked, "%s", addr)
	}
}

func TestNilThrottlesNothing(t *testing.T) {
	t.Parallel()
	var th *Throttle
	th.Failed(netip.MustParseAddr("192.0.2.1"))
	_, blocked := th.Blocked(netip.MustParseAddr("192.0.2.1"))
	require.False(t, blocked)
}

func TestAKeyThatAuthenticatedIsKnownForADay(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	th := New(Options{KnownKeys: 2, Now: c.now})
	require.False(t, th.Known("sk_a"))
	th.Succeeded("sk_a")
	require.True(t, th.Known("sk_a"))
	require.False(t, th.Known("sk_b"), "another key is not")

	c.t = c.t.Add(KnownFor - time.Second)
	require.True(t, th.Known("sk_a"))
	c.t = c.t.Add(time.Second)
	require.False(t, th.Known("sk_a"), "a day after it last authenticated")
	th.Succeeded("sk_a")
	require.True(t, th.Known("sk_a"), "authenticating again renews it")

	th.Succeeded("sk_b")
	th.Succeeded("sk_c")
	require.False(t, th.Known("sk_a"), "the least recent of three forgotten, at two at most")
	require.True(t, th.Known("sk_b"))
	require.True(t, th.Known("sk_c"))

	var none *Throttle
	none.Succeeded("sk_a")
	require.False(t, none.Known("sk_a"))
}
