package delivery

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
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
