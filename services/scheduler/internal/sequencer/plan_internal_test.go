package sequencer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/calendar"
)

func timetableOf(t *testing.T, schedule string, start time.Time) calendar.Timetable {
	t.Helper()
	s, err := calendar.Parse([]byte(schedule))
	require.NoError(t, err)
	tt, err := s.Between(start, time.Time{})
	require.NoError(t, err)
	return tt
}

func utc(s string) time.Time {
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return at
}

// TestPlanFollowsTheCalendarAcrossAGap: the due slots of a calendar
// schedule are its own (02:30 New York runs at 03:00 EDT on the
// spring-forward day), and the next slot is the first after now.
func TestPlanFollowsTheCalendarAcrossAGap(t *testing.T) {
	t.Parallel()
	tt := timetableOf(t, `{"frequency": "daily", "timezone": "America/New_York", "time": {"hour": 2, "minute": 30}}`,
		utc("2026-03-01T00:00:00Z"))

	p := plan(due{timetable: tt, nextRunAt: utc("2026-03-07T07:30:00Z"), catchUp: catchUpLatest, overlap: "allow"},
		utc("2026-03-08T08:00:00Z"))

	require.Equal(t, []slotRun{
		{slot: utc("2026-03-07T07:30:00Z"), skipReason: reasonCatchUp},
		{slot: utc("2026-03-08T07:00:00Z")},
	}, p.runs)
	require.Equal(t, utc("2026-03-09T06:30:00Z"), p.next)
	require.False(t, p.ended)
	require.False(t, p.behind)
}

// TestPlanOverlapsWithinOneScan: with catchUp all and overlap skip, the
// first missed slot starts and the others overlap it.
func TestPlanOverlapsWithinOneScan(t *testing.T) {
	t.Parallel()
	start := utc("2026-01-01T00:00:00Z")
	tt := timetableOf(t, `{"every": "1m"}`, start)

	p := plan(due{timetable: tt, nextRunAt: start, catchUp: catchUpAll, overlap: overlapSkip}, start.Add(150*time.Second))

	require.Equal(t, []slotRun{
		{slot: start},
		{slot: start.Add(time.Minute), skipReason: reasonOverlap},
		{slot: start.Add(2 * time.Minute), skipReason: reasonOverlap},
	}, p.runs)
	require.Equal(t, start.Add(3*time.Minute), p.next)
}

// TestPlanOfAStaleNextSlot: a next slot that is not due (nothing between
// it and now) records nothing and moves to the first slot after now.
func TestPlanOfAStaleNextSlot(t *testing.T) {
	t.Parallel()
	start := utc("2026-01-01T00:00:00Z")
	tt := timetableOf(t, `{"every": "1h"}`, start)

	p := plan(due{timetable: tt, nextRunAt: start.Add(90 * time.Minute), catchUp: catchUpLatest}, start.Add(100*time.Minute))

	require.Empty(t, p.runs)
	require.Equal(t, start.Add(2*time.Hour), p.next)
}
