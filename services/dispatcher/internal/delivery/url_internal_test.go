package delivery

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/dispatcher/internal/hostlimit"
)

// TestTargetsParseAsParseTarget holds the cache to parseTarget: the same
// target for a URL parsed anew or from the cache, the same error for an
// invalid one (never kept), and no more than maxTargets URLs kept.
func TestTargetsParseAsParseTarget(t *testing.T) {
	t.Parallel()
	var cache targets
	for _, raw := range []string{
		"https://example.com/hook",
		"https://Example.com:8443/a/b?c=d",
		"https://[2001:db8::1]/x",
		"https://example.com:/p",
	} {
		want, err := parseTarget(raw)
		require.NoError(t, err)
		for range 2 {
			got, err := cache.parse(raw)
			require.NoError(t, err)
			require.Equal(t, want, got, raw)
		}
	}
	for _, raw := range []string{"http://example.com/hook", "https://user@example.com/", "https://0x7f000001/", "%"} {
		_, want := parseTarget(raw)
		require.Error(t, want, raw)
		_, err := cache.parse(raw)
		require.EqualError(t, err, want.Error(), raw)
		_, kept := cache.parsed.Load(raw)
		require.False(t, kept, raw)
	}
	for i := range 3 * maxTargets {
		raw := fmt.Sprintf("https://host%d.example.com/hook", i)
		got, err := cache.parse(raw)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("host%d.example.com:443", i), got.addr)
	}
	kept := 0
	cache.parsed.Range(func(any, any) bool { kept++; return true })
	require.LessOrEqual(t, kept, maxTargets)
	require.Positive(t, kept)
}

// TestDestinationIsHostOf holds Destination to what the dispatcher used to
// parse for itself: the limit's host as hostlimit.Host has it, the URL's
// host as the request's Host header, and nothing for a URL that no
// delivery is sent to.
func TestDestinationIsHostOf(t *testing.T) {
	t.Parallel()
	c := &Client{targets: &targets{}}
	for _, tc := range []struct{ raw, host string }{
		{"https://example.com/hook", "example.com"},
		{"https://Example.COM:8443/a/b?c=d", "Example.COM:8443"},
		{"https://[2001:DB8::1]/x", "[2001:DB8::1]"},
		{"https://example.com:/p", "example.com"},
		{"https://example.com:443/p", "example.com:443"},
	} {
		for range 2 { // parsed, then from the cache
			host, limitHost := c.Destination(tc.raw)
			require.Equal(t, tc.host, host, tc.raw)
			require.Equal(t, hostlimit.Host(tc.raw), limitHost, tc.raw)
		}
	}
	for _, raw := range []string{"http://example.com/hook", "https://user@example.com/", "https://0x7f000001/", "%", ""} {
		host, limitHost := c.Destination(raw)
		require.Empty(t, host, raw)
		require.Empty(t, limitHost, raw)
	}
}
