package hostlimit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/dispatcher/internal/hostlimit"
)

func TestTryAcquireBoundsEachHost(t *testing.T) {
	t.Parallel()
	l := hostlimit.New(2)
	r1, ok := l.TryAcquire("a:443")
	require.True(t, ok)
	r2, ok := l.TryAcquire("a:443")
	require.True(t, ok)
	_, ok = l.TryAcquire("a:443")
	require.False(t, ok, "a third delivery to a busy host")

	// Another host is not affected.
	rb, ok := l.TryAcquire("b:443")
	require.True(t, ok)
	rb()

	r1()
	r1() // a second release changes nothing
	r3, ok := l.TryAcquire("a:443")
	require.True(t, ok)
	_, ok = l.TryAcquire("a:443")
	require.False(t, ok)
	r2()
	r3()
}

func TestNewAllowsAtLeastOne(t *testing.T) {
	t.Parallel()
	l := hostlimit.New(0)
	require.Equal(t, 1, l.Limit())
	release, ok := l.TryAcquire("a:443")
	require.True(t, ok)
	release()
}

func TestKey(t *testing.T) {
	t.Parallel()
	require.Equal(t, "a.example:443", hostlimit.Key("https://A.Example/x?y=1"))
	require.Equal(t, "a.example:443", hostlimit.Key("https://a.example:443/"))
	require.Equal(t, "127.0.0.1:8443", hostlimit.Key("https://127.0.0.1:8443/x"))
	require.Equal(t, "[::1]:443", hostlimit.Key("https://[::1]/"))
	require.Equal(t, "", hostlimit.Key("https://a b/%zz"))
}

func TestBackoffGrowsToACap(t *testing.T) {
	t.Parallel()
	require.Equal(t, 250*time.Millisecond, hostlimit.Backoff(0))
	require.Equal(t, 250*time.Millisecond, hostlimit.Backoff(1))
	require.Equal(t, 500*time.Millisecond, hostlimit.Backoff(2))
	require.Equal(t, time.Second, hostlimit.Backoff(3))
	require.Equal(t, 2*time.Second, hostlimit.Backoff(4))
	require.Equal(t, 2*time.Second, hostlimit.Backoff(50))
}
