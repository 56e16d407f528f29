package quota_test

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/quota"
)

func TestHardCap(t *testing.T) {
	t.Parallel()
	require.Equal(t, int64(200_000), quota.HardCap(100_000, 200))
	require.Equal(t, int64(3), quota.HardCap(2, 150))
	require.Equal(t, int64(1), quota.HardCap(1, 199), "rounded down")
	require.Equal(t, int64(7), quota.HardCap(7, 100))
	require.Equal(t, int64(math.MaxInt64), quota.HardCap(math.MaxInt64, 200), "saturates instead of overflowing")
}

func TestUsageHeaders(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 31, 23, 59, 58, 500_000_000, time.UTC)
	u := quota.Usage{Limit: 10, Used: 12, HardCap: 20, ResetsAt: time.Date(2030, 2, 1, 0, 0, 0, 0, time.UTC), Now: now}
	require.Zero(t, u.Remaining(), "never negative past the quota")
	require.Equal(t, int64(2), u.RetryAfter(), "rounded up")

	h := http.Header{}
	u.SetHeaders(h, "Sundial")
	require.Equal(t, http.Header{
		"Sundial-HookQuota-Limit":     {"10"},
		"Sundial-HookQuota-Usage":     {"12"},
		"Sundial-HookQuota-Remaining": {"0"},
		"Sundial-HookQuota-Resets-At": {"2030-02-01T00:00:00Z"},
	}, h, "spelled as documented")

	u.Now = u.ResetsAt.Add(time.Second)
	require.Equal(t, int64(1), u.RetryAfter(), "at least one second")
}
