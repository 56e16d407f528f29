package clientaddr

import (
	"net/http"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClientAddr(t *testing.T) {
	t.Parallel()
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	cases := []struct {
		name, peer, xff string
		trusted         []netip.Prefix
		want            string
	}{
		{"no proxies: the peer, header ignored", "192.0.2.7:5000", "198.51.100.1", nil, "192.0.2.7"},
		{"untrusted peer: header ignored", "192.0.2.7:5000", "198.51.100.1", proxies, "192.0.2.7"},
		{"trusted peer: the right-most untrusted hop", "10.0.0.2:5000", "203.0.113.9, 198.51.100.1, 10.0.0.3", proxies, "198.51.100.1"},
		{"trusted peer without header: the peer", "10.0.0.2:5000", "", proxies, "10.0.0.2"},
		{"a malformed hop stops the walk", "10.0.0.2:5000", "198.51.100.1, junk, 10.0.0.3", proxies, "10.0.0.3"},
		{"IPv6 peer", "[2001:db8::1]:443", "", nil, "2001:db8::1"},
	}
	for _, c := range cases {
		r := &http.Request{RemoteAddr: c.peer, Header: http.Header{}}
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		require.Equal(t, netip.MustParseAddr(c.want), Of(r, c.trusted), c.name)
	}
}
