package claim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

func TestReleaseAtWaitsTheDatabaseClocksRemainder(t *testing.T) {
	t.Parallel()
	received := time.Now()
	// The database clock is an hour off the local one: only differences
	// of its readings count.
	dbNow := received.Add(time.Hour)
	for name, tc := range map[string]struct {
		dueIn time.Duration
		want  time.Duration
	}{
		"not yet due":  {dueIn: 150 * time.Millisecond, want: 150 * time.Millisecond},
		"due now":      {dueIn: 0, want: 0},
		"already late": {dueIn: -time.Second, want: 0},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := releaseAt(received, dbNow.Add(tc.dueIn), dbNow)
			require.Equal(t, tc.want, got.Sub(received))
		})
	}
}

func TestHoldIsWhatIsLeftUntilTheRelease(t *testing.T) {
	t.Parallel()
	now := time.Now()
	require.Equal(t, 150*time.Millisecond, holdAt(now, now.Add(150*time.Millisecond)))
	require.Zero(t, holdAt(now, now))
	require.Zero(t, holdAt(now, now.Add(-time.Second)), "a release already past holds nothing")
}

func TestLatestDBNowIsTheLastReadingOfAClaim(t *testing.T) {
	t.Parallel()
	now := time.Now()
	rows := []store.ClaimDueHooksRow{{DbNow: now}, {DbNow: now.Add(7 * time.Millisecond)}, {DbNow: now.Add(time.Millisecond)}}
	require.Equal(t, now.Add(7*time.Millisecond), latestDBNow(rows))
}
