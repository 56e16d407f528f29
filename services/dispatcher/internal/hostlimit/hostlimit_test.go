package hostlimit_test

import (
	"context"
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

func TestAcquireWaitsForAFreedSlot(t *testing.T) {
	t.Parallel()
	l := hostlimit.New(1)
	busy, ok := l.TryAcquire("a:443")
	require.True(t, ok)

	got := make(chan bool)
	go func() {
		release, ok := l.Acquire(context.Background(), "a:443", time.Minute)
		if ok {
			release()
		}
		got <- ok
	}()
	// The waiter is registered once the host counts it; then the freed
	// slot goes to it.
	require.Eventually(t, func() bool { return l.Waiting("a:443") == 1 }, 10*time.Second, time.Millisecond)
	busy()
	require.True(t, <-got, "the waiter took the freed slot")
	require.Zero(t, l.Hosts(), "an idle host is forgotten")
}

func TestAcquireGivesUpAfterItsWaitOrWithItsContext(t *testing.T) {
	t.Parallel()
	l := hostlimit.New(1)
	busy, ok := l.TryAcquire("a:443")
	require.True(t, ok)

	_, ok = l.Acquire(context.Background(), "a:443", 10*time.Millisecond)
	require.False(t, ok, "the host stayed busy for the whole wait")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, ok = l.Acquire(ctx, "a:443", time.Minute)
	require.False(t, ok, "a cancelled context stops the wait")

	// Another host never waits for this one.
	other, ok := l.Acquire(context.Background(), "b:443", time.Minute)
	require.True(t, ok)
	other()
	busy()
	require.Zero(t, l.Hosts())
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
