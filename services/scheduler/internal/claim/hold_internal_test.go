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
			got := dbClock{local: received, db: dbNow}.releaseAt(dbNow.Add(tc.dueIn))
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
	rows := []store.ClaimHooksRow{{DbNow: now}, {DbNow: now.Add(7 * time.Millisecond)}, {DbNow: now.Add(time.Millisecond)}}
	require.Equal(t, now.Add(7*time.Millisecond), latestDBNow(rows))
}

// Of a claim's rows, the one whose reading came closest before its arrival
// bounds the database clock: a row sent before the commit, not the last
// reading with the whole answer's arrival after it.
func TestAnswerClockTakesTheTightestRow(t *testing.T) {
	t.Parallel()
	db := time.Now().Add(time.Hour) // only differences of its readings count
	local := time.Now()
	rows := []store.ClaimHooksRow{{DbNow: db}, {DbNow: db.Add(2 * time.Millisecond)}, {DbNow: db.Add(3 * time.Millisecond)}}
	// Rows 0 and 1 arrived with the statement running, 0.5 and 0.2 ms
	// after their readings; row 2 with the commit, 9 ms after its own.
	arrived := []time.Time{local.Add(500 * time.Microsecond), local.Add(2200 * time.Microsecond), local.Add(12 * time.Millisecond)}
	received := local.Add(12100 * time.Microsecond)

	clock := answerClock(rows, arrived, received)
	require.Equal(t, dbClock{local: arrived[1], db: rows[1].DbNow}, clock)
	due := db.Add(150 * time.Millisecond)
	require.Equal(t, arrived[1].Add(148*time.Millisecond), clock.releaseAt(due))
	// The whole answer's arrival with the last reading: 8.9 ms later.
	require.Equal(t, received.Add(147*time.Millisecond), answerClock(rows, nil, received).releaseAt(due))
	require.Equal(t, 8900*time.Microsecond, answerClock(rows, nil, received).releaseAt(due).Sub(clock.releaseAt(due)))

	// Arrivals that do not match the rows one for one are not paired.
	require.Equal(t, dbClock{local: received, db: rows[2].DbNow}, answerClock(rows, arrived[:2], received))
}
