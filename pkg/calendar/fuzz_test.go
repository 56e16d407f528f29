package calendar_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/calendar"
)

// fuzzStart is the startAt the fuzz target bounds valid schedules with:
// the week of New York's 2026 spring forward.
var fuzzStart = time.Date(2026, 3, 6, 0, 0, 0, 0, time.UTC)

// FuzzParseSchedule checks that Parse never panics and either refuses a
// body with problems that each name a schedule field, or accepts it with a
// timetable whose next 50 slots are each strictly later than the one
// before, are found again by NextAtOrAfter, and show the schedule's wall
// time or are the first instant after a gap. Seeds: below and
// testdata/fuzz/FuzzParseSchedule.
func FuzzParseSchedule(f *testing.F) {
	for _, seed := range []string{
		`{"every":"1m"}`,
		`{"every":"1d2h3m4s"}`,
		`{"frequency":"hourly","timezone":"Australia/Lord_Howe","time":{"minute":15}}`,
		`{"frequency":"daily","timezone":"America/New_York","time":{"hour":2,"minute":30}}`,
		`{"frequency":"daily","timezone":"America/Santiago","time":{"hour":0,"minute":0}}`,
		`{"frequency":"weekly","timezone":"Europe/London","time":{"hour":1,"minute":30},"daysOfWeek":["sun"]}`,
		`{"frequency":"monthly","timezone":"Pacific/Apia","time":{"hour":0,"minute":0},"daysOfMonth":[31,-1,29]}`,
		`{"frequency":"monthly","timezone":"Asia/Kathmandu","time":{"hour":23,"minute":59},"daysOfMonth":[30]}`,
		`{"every":"1h","frequency":"daily"}`,
		`{"frequency":"weekly","daysOfWeek":["fri ","fri "]}`,
		`{"Every":"1h","every":"1h"}`,
		`{"time":{"hour":1e99}}`,
		`[`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := calendar.Parse(body)
		if err != nil {
			var invalid *calendar.InvalidError
			require.True(t, errors.As(err, &invalid), "%v", err)
			require.NotEmpty(t, invalid.Problems)
			for _, p := range invalid.Problems {
				require.True(t, strings.HasPrefix(p.Field, "schedule"), "%q", p.Field)
				require.NotEmpty(t, p.Message)
			}
			return
		}
		tt, err := s.Between(fuzzStart, time.Time{})
		require.NoError(t, err)
		prev := fuzzStart.Add(-time.Nanosecond)
		for range 50 {
			slot, ok := tt.Next(prev)
			require.True(t, ok, "no slot after %s for %s", prev, body)
			require.True(t, slot.After(prev), "%s is not after %s for %s", slot, prev, body)
			again, ok := tt.NextAtOrAfter(slot)
			require.True(t, ok)
			require.Equal(t, slot, again)
			requireShowsWallTime(t, s, slot)
			prev = slot
		}
	})
}

// requireShowsWallTime checks that a calendar slot is the schedule's wall
// time in its zone or, for a wall time in a gap, the first instant after
// it (where a new offset starts).
func requireShowsWallTime(t *testing.T, s calendar.Schedule, slot time.Time) {
	t.Helper()
	if s.Location() == nil {
		return
	}
	local := slot.In(s.Location())
	spec := s.Spec().Time
	if local.Minute() == *spec.Minute && (spec.Hour == nil || local.Hour() == *spec.Hour) && local.Second() == 0 {
		return
	}
	start, _ := local.ZoneBounds()
	require.True(t, start.Equal(slot), "%s (%s) neither shows the schedule's time nor starts an offset", slot, local)
}
