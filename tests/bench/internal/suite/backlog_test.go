package suite

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func TestBacklogIDsAreAscendingVersion7(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	prev := backlogID(now, 0)
	require.Equal(t, uuid.Version(7), prev.Version())
	require.Equal(t, uuid.RFC4122, prev.Variant())
	for _, i := range []int{1, 2, 255, 256, 1 << 20, 10_000_000} {
		id := backlogID(now, i)
		require.Equal(t, uuid.Version(7), id.Version())
		require.Equal(t, uuid.RFC4122, id.Variant())
		require.Greater(t, id.String(), prev.String(), "ids ascend with i")
		require.Equal(t, prev.String()[:14], id.String()[:14], "same instant")
		prev = id
	}
	sec, _ := prev.Time().UnixTime()
	require.Equal(t, now.Unix(), sec)
}
