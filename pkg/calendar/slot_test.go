package calendar_test

import (
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/calendar"
)

// mustTimetable checks a schedule written as JSON and bounds it by startAt
// and endAt (zero: none).
func mustTimetable(t *testing.T, schedule string, startAt, endAt time.Time) calendar.Timetable {
	t.Helper()
	s, err := calendar.Parse([]byte(schedule))
	require.NoError(t, err, schedule)
	tt, err := s.Between(startAt, endAt)
	require.NoError(t, err)
	return tt
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func formatSlots(slots []time.Time) []string {
	out := make([]string, len(slots))
	for i, s := range slots {
		out[i] = s.Format(time.RFC3339Nano)
	}
	return out
}

// TestCalendarSlotsAtTransitions lists, by hand from the tz database's
// transitions (zdump -v), the slots around gaps and folds: a slot in a gap
// runs at the first instant after it, a slot in a fold once at the earlier
// instant, and neither is found by adding 24 hours to the day before.
func TestCalendarSlotsAtTransitions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schedule, from, to string
		want                     []string
	}{
		{
			// EST->EDT at 2026-03-08T07:00Z: 02:00-03:00 never happens.
			"New York daily 02:30 across spring forward",
			`{"frequency":"daily","timezone":"America/New_York","time":{"hour":2,"minute":30}}`,
			"2026-03-07T00:00:00Z", "2026-03-10T00:00:00Z",
			[]string{"2026-03-07T07:30:00Z", "2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"},
		},
		{
			// EDT->EST at 2026-11-01T06:00Z: 01:00-02:00 happens twice.
			"New York daily 01:30 across fall back, once, the first (EDT)",
			`{"frequency":"daily","timezone":"America/New_York","time":{"hour":1,"minute":30}}`,
			"2026-10-31T00:00:00Z", "2026-11-03T00:00:00Z",
			[]string{"2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"},
		},
		{
			"New York hourly :30 across spring forward",
			`{"frequency":"hourly","timezone":"America/New_York","time":{"minute":30}}`,
			"2026-03-08T05:00:00Z", "2026-03-08T08:00:00Z",
			[]string{"2026-03-08T05:30:00Z", "2026-03-08T06:30:00Z", "2026-03-08T07:00:00Z", "2026-03-08T07:30:00Z"},
		},
		{
			// Wall times, each once: the second 01:30 (06:30Z) is not a slot.
			"New York hourly :30 across fall back",
			`{"frequency":"hourly","timezone":"America/New_York","time":{"minute":30}}`,
			"2026-11-01T04:00:00Z", "2026-11-01T08:00:00Z",
			[]string{"2026-11-01T04:30:00Z", "2026-11-01T05:30:00Z", "2026-11-01T07:30:00Z"},
		},
		{
			// +10:30->+11 at 2026-10-03T15:30Z: 02:00-02:30 never happens.
			"Lord Howe daily 02:15 in the half-hour gap",
			`{"frequency":"daily","timezone":"Australia/Lord_Howe","time":{"hour":2,"minute":15}}`,
			"2026-10-02T00:00:00Z", "2026-10-05T00:00:00Z",
			[]string{"2026-10-02T15:45:00Z", "2026-10-03T15:30:00Z", "2026-10-04T15:15:00Z"},
		},
		{
			// +11->+10:30 at 2026-04-04T15:00Z: 01:30-02:00 happens twice.
			"Lord Howe daily 01:45 in the half-hour fold",
			`{"frequency":"daily","timezone":"Australia/Lord_Howe","time":{"hour":1,"minute":45}}`,
			"2026-04-03T00:00:00Z", "2026-04-06T00:00:00Z",
			[]string{"2026-04-03T14:45:00Z", "2026-04-04T14:45:00Z", "2026-04-05T15:15:00Z"},
		},
		{
			// -04->-03 at 2026-09-06T04:00Z: midnight to 01:00 never happens.
			"Santiago daily 00:00 on the spring-forward night",
			`{"frequency":"daily","timezone":"America/Santiago","time":{"hour":0,"minute":0}}`,
			"2026-09-05T00:00:00Z", "2026-09-08T00:00:00Z",
			[]string{"2026-09-05T04:00:00Z", "2026-09-06T04:00:00Z", "2026-09-07T03:00:00Z"},
		},
		{
			// -03->-04 at 2026-04-05T03:00Z: 23:00-24:00 on the 4th happens twice.
			"Santiago daily 23:30 on the fall-back night",
			`{"frequency":"daily","timezone":"America/Santiago","time":{"hour":23,"minute":30}}`,
			"2026-04-03T12:00:00Z", "2026-04-07T00:00:00Z",
			[]string{"2026-04-04T02:30:00Z", "2026-04-05T02:30:00Z", "2026-04-06T03:30:00Z"},
		},
		{
			"Kathmandu +05:45",
			`{"frequency":"daily","timezone":"Asia/Kathmandu","time":{"hour":9,"minute":0}}`,
			"2026-06-01T00:00:00Z", "2026-06-03T00:00:00Z",
			[]string{"2026-06-01T03:15:00Z", "2026-06-02T03:15:00Z"},
		},
		{
			// 30 December 2011 never happened in Samoa: its 24 hourly slots
			// all resolve to 2011-12-30T10:00Z and run once.
			"Apia hourly across the skipped day",
			`{"frequency":"hourly","timezone":"Pacific/Apia","time":{"minute":0}}`,
			"2011-12-30T08:00:00Z", "2011-12-30T12:00:00Z",
			[]string{"2011-12-30T08:00:00Z", "2011-12-30T09:00:00Z", "2011-12-30T10:00:00Z", "2011-12-30T11:00:00Z"},
		},
		{
			"Apia weekly on the skipped Friday",
			`{"frequency":"weekly","timezone":"Pacific/Apia","time":{"hour":9,"minute":0},"daysOfWeek":["fri"]}`,
			"2011-12-20T00:00:00Z", "2012-01-10T00:00:00Z",
			[]string{"2011-12-23T19:00:00Z", "2011-12-30T10:00:00Z", "2012-01-05T19:00:00Z"},
		},
		{
			"monthly 31st: months without one are skipped",
			`{"frequency":"monthly","timezone":"UTC","time":{"hour":12,"minute":0},"daysOfMonth":[31]}`,
			"2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z",
			[]string{"2026-01-31T12:00:00Z", "2026-03-31T12:00:00Z", "2026-05-31T12:00:00Z", "2026-07-31T12:00:00Z",
				"2026-08-31T12:00:00Z", "2026-10-31T12:00:00Z", "2026-12-31T12:00:00Z"},
		},
		{
			"monthly last day and 29th, in a leap and a common February",
			`{"frequency":"monthly","timezone":"UTC","time":{"hour":12,"minute":0},"daysOfMonth":[-1,29]}`,
			"2027-02-01T00:00:00Z", "2028-03-01T00:00:00Z",
			[]string{"2027-02-28T12:00:00Z", "2027-03-29T12:00:00Z", "2027-03-31T12:00:00Z", "2027-04-29T12:00:00Z", "2027-04-30T12:00:00Z",
				"2027-05-29T12:00:00Z", "2027-05-31T12:00:00Z", "2027-06-29T12:00:00Z", "2027-06-30T12:00:00Z",
				"2027-07-29T12:00:00Z", "2027-07-31T12:00:00Z", "2027-08-29T12:00:00Z", "2027-08-31T12:00:00Z",
				"2027-09-29T12:00:00Z", "2027-09-30T12:00:00Z", "2027-10-29T12:00:00Z", "2027-10-31T12:00:00Z",
				"2027-11-29T12:00:00Z", "2027-11-30T12:00:00Z", "2027-12-29T12:00:00Z", "2027-12-31T12:00:00Z",
				"2028-01-29T12:00:00Z", "2028-01-31T12:00:00Z", "2028-02-29T12:00:00Z"},
		},
		{
			"monthly 31st and last day on the same date run once",
			`{"frequency":"monthly","timezone":"UTC","time":{"hour":0,"minute":0},"daysOfMonth":[31,-1]}`,
			"2026-01-01T00:00:00Z", "2026-03-01T00:00:00Z",
			[]string{"2026-01-31T00:00:00Z", "2026-02-28T00:00:00Z"},
		},
		{
			"weekly mon and fri",
			`{"frequency":"weekly","timezone":"Europe/London","time":{"hour":9,"minute":5},"daysOfWeek":["fri","mon"]}`,
			"2026-03-23T00:00:00Z", "2026-04-04T00:00:00Z",
			[]string{"2026-03-23T09:05:00Z", "2026-03-27T09:05:00Z", "2026-03-30T08:05:00Z", "2026-04-03T08:05:00Z"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tt := mustTimetable(t, tc.schedule, time.Time{}, time.Time{})
			got := tt.Slots(utc(tc.from), utc(tc.to), calendar.MaxSlots)
			require.Equal(t, tc.want, formatSlots(got))
		})
	}
}

func TestNextIsStrictlyAfterAndNextAtOrAfterIncludes(t *testing.T) {
	t.Parallel()
	tt := mustTimetable(t, `{"frequency":"daily","timezone":"America/New_York","time":{"hour":2,"minute":30}}`, time.Time{}, time.Time{})
	gapSlot := utc("2026-03-08T07:00:00Z")

	at, ok := tt.NextAtOrAfter(gapSlot)
	require.True(t, ok)
	require.Equal(t, gapSlot, at)
	next, ok := tt.Next(gapSlot)
	require.True(t, ok)
	require.Equal(t, utc("2026-03-09T06:30:00Z"), next)
	next, ok = tt.Next(gapSlot.Add(-time.Nanosecond))
	require.True(t, ok)
	require.Equal(t, gapSlot, next)
}

func TestCalendarBounds(t *testing.T) {
	t.Parallel()
	daily := `{"frequency":"daily","timezone":"UTC","time":{"hour":9,"minute":0}}`
	startAt, endAt := utc("2026-01-05T09:00:00Z"), utc("2026-01-07T09:00:00Z")
	tt := mustTimetable(t, daily, startAt, endAt)

	// startAt and endAt are both slots here, and both run.
	require.Equal(t, []string{"2026-01-05T09:00:00Z", "2026-01-06T09:00:00Z", "2026-01-07T09:00:00Z"},
		formatSlots(tt.Slots(utc("2020-01-01T00:00:00Z"), time.Time{}, 10)))
	_, ok := tt.Next(endAt)
	require.False(t, ok, "no slot after endAt")

	// to is exclusive, limit is honoured.
	require.Equal(t, []string{"2026-01-05T09:00:00Z"}, formatSlots(tt.Slots(startAt, utc("2026-01-06T09:00:00Z"), 10)))
	require.Len(t, tt.Slots(startAt, time.Time{}, 2), 2)
	require.Empty(t, tt.Slots(startAt, time.Time{}, 0))

	unbounded := mustTimetable(t, daily, time.Time{}, time.Time{})
	require.Len(t, unbounded.Slots(startAt, time.Time{}, 5000), calendar.MaxSlots)

	var zero calendar.Timetable
	_, ok = zero.NextAtOrAfter(startAt)
	require.False(t, ok, "the zero Timetable has no slots")
}

func TestBetweenRefusesBadBounds(t *testing.T) {
	t.Parallel()
	every, err := calendar.Parse([]byte(`{"every":"1h"}`))
	require.NoError(t, err)
	_, err = every.Between(time.Time{}, time.Time{})
	requireProblems(t, err, "startAt: is required with every")

	_, err = every.Between(utc("2026-01-02T00:00:00Z"), utc("2026-01-01T00:00:00Z"))
	requireProblems(t, err, "endAt: must not be before startAt")

	pastYear9999 := time.Date(10000, 1, 1, 4, 0, 0, 0, time.UTC)
	_, err = every.Between(pastYear9999, pastYear9999)
	requireProblems(t, err, "startAt: "+calendar.RangeProblem, "endAt: "+calendar.RangeProblem)
}

// TestSlotsEndWithTheYear9999: no slot is computed past the last instant
// of 9999 in UTC, where JSON's dates end, whatever the schedule.
func TestSlotsEndWithTheYear9999(t *testing.T) {
	t.Parallel()
	hourly := mustTimetable(t, `{"every":"1h"}`, utc("9999-12-31T22:00:00Z"), time.Time{})
	require.Equal(t, []string{"9999-12-31T22:00:00Z", "9999-12-31T23:00:00Z"},
		formatSlots(hourly.Slots(utc("9999-01-01T00:00:00Z"), time.Time{}, 10)))

	monthly := mustTimetable(t, `{"frequency":"monthly","timezone":"Pacific/Kiritimati","daysOfMonth":[31],"time":{"hour":23,"minute":0}}`,
		time.Time{}, time.Time{})
	require.Equal(t, []string{"9999-10-31T09:00:00Z", "9999-12-31T09:00:00Z"},
		formatSlots(monthly.Slots(utc("9999-10-01T00:00:00Z"), time.Time{}, 10)))
	_, ok := monthly.Next(utc("9999-12-31T09:00:00Z"))
	require.False(t, ok, "the next 31st is in 10000")
}

// TestEveryIsAnchoredAtStartAt checks that every's slots are startAt +
// k*every, k >= 0, whatever instant the search starts from.
func TestEveryIsAnchoredAtStartAt(t *testing.T) {
	t.Parallel()
	startAt := utc("2026-03-07T10:00:07.5Z")
	tt := mustTimetable(t, `{"every":"1h30m"}`, startAt, time.Time{})
	step := 90 * time.Minute

	tests := []struct {
		name     string
		from     time.Time
		want     time.Time
		strictly bool
	}{
		{"long before startAt", utc("2000-01-01T00:00:00Z"), startAt, false},
		{"at startAt", startAt, startAt, false},
		{"after startAt, strictly", startAt, startAt.Add(step), true},
		{"on a slot", startAt.Add(3 * step), startAt.Add(3 * step), false},
		{"on a slot, strictly", startAt.Add(3 * step), startAt.Add(4 * step), true},
		{"a nanosecond past a slot", startAt.Add(3*step + 1), startAt.Add(4 * step), false},
		{"a nanosecond before a slot", startAt.Add(3*step - 1), startAt.Add(3 * step), false},
		// every is a duration: across New York's spring forward (and any
		// other zone's) the slots stay 90 minutes apart.
		{"across DST, 24 slots on", startAt.Add(24*step - time.Minute), startAt.Add(24 * step), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got time.Time
			var ok bool
			if tc.strictly {
				got, ok = tt.Next(tc.from)
			} else {
				got, ok = tt.NextAtOrAfter(tc.from)
			}
			require.True(t, ok)
			require.Equal(t, tc.want.Format(time.RFC3339Nano), got.Format(time.RFC3339Nano))
		})
	}
}

// TestEveryFarFromStartAt searches millennia away from startAt, where
// nanoseconds overflow a time.Duration, and checks the slot's arithmetic
// with big integers.
func TestEveryFarFromStartAt(t *testing.T) {
	t.Parallel()
	startAt := utc("0001-01-01T00:00:00.000000001Z")
	every := 7*time.Hour + 13*time.Minute + 11*time.Second
	tt := mustTimetable(t, `{"every":"7h13m11s"}`, startAt, time.Time{})
	for _, at := range []time.Time{utc("1970-01-01T00:00:00Z"), utc("2026-06-01T12:34:56.789Z"), utc("9999-12-31T00:00:00Z")} {
		got, ok := tt.NextAtOrAfter(at)
		require.True(t, ok)
		since := nanosBetween(startAt, got)
		require.Zero(t, new(big.Int).Rem(since, big.NewInt(int64(every))).Sign(), "a whole number of intervals after startAt")
		require.False(t, got.Before(at))
		require.True(t, got.Add(-every).Before(at), "the first such slot")
	}
}

func nanosBetween(a, b time.Time) *big.Int {
	n := new(big.Int).Mul(big.NewInt(b.Unix()-a.Unix()), big.NewInt(int64(time.Second)))
	return n.Add(n, big.NewInt(int64(b.Nanosecond()-a.Nanosecond())))
}

func TestEveryEndAt(t *testing.T) {
	t.Parallel()
	startAt := utc("2026-01-01T00:00:00Z")
	tt := mustTimetable(t, `{"every":"1d"}`, startAt, startAt.Add(48*time.Hour))
	require.Equal(t, []string{"2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"},
		formatSlots(tt.Slots(startAt, time.Time{}, 100)))
}
