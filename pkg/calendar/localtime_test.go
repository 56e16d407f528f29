package calendar_test

import (
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/calendar"
)

// wallLayout is postAtLocal's format.
const wallLayout = "2006-01-02T15:04:05"

// transitionCase is a wall-clock time and the UTC instant it must resolve
// to.
type transitionCase struct {
	name, wall, want string
}

// The expected instants below come from the tz database (2025b on the
// machine that wrote them), read with `zdump -v -c 2010,2028 <zone>`, and
// never from time.Date, whose answer for a gap is unspecified and in
// practice moves some gap times backwards (Santiago's 00:30 on its
// spring-forward night becomes 23:30 the evening before). Each zone gets,
// for two years: a time inside the gap, the gap's first instant and the
// first instant after it, the last moment before it, a time inside the fold
// (the earlier instant), the fold's edges, and ordinary times.
var transitionTables = []struct {
	zone  string
	cases []transitionCase
}{
	{"America/New_York", []transitionCase{
		// 2025: EST->EDT at 2025-03-09T07:00Z (02:00 -> 03:00 local),
		// EDT->EST at 2025-11-02T06:00Z (02:00 -> 01:00 local).
		{"2025 ordinary winter", "2025-01-15T09:00:00", "2025-01-15T14:00:00Z"},
		{"2025 ordinary summer", "2025-07-15T09:00:00", "2025-07-15T13:00:00Z"},
		{"2025 before the gap", "2025-03-09T01:59:59", "2025-03-09T06:59:59Z"},
		{"2025 gap start", "2025-03-09T02:00:00", "2025-03-09T07:00:00Z"},
		{"2025 inside the gap", "2025-03-09T02:30:00", "2025-03-09T07:00:00Z"},
		{"2025 gap end", "2025-03-09T02:59:59", "2025-03-09T07:00:00Z"},
		{"2025 first instant after the gap", "2025-03-09T03:00:00", "2025-03-09T07:00:00Z"},
		{"2025 after the gap", "2025-03-09T03:00:01", "2025-03-09T07:00:01Z"},
		{"2025 before the fold", "2025-11-02T00:59:59", "2025-11-02T04:59:59Z"},
		{"2025 fold start, earlier", "2025-11-02T01:00:00", "2025-11-02T05:00:00Z"},
		{"2025 inside the fold, earlier", "2025-11-02T01:30:00", "2025-11-02T05:30:00Z"},
		{"2025 fold end, earlier", "2025-11-02T01:59:59", "2025-11-02T05:59:59Z"},
		{"2025 after the fold", "2025-11-02T02:00:00", "2025-11-02T07:00:00Z"},
		// 2026: 2026-03-08T07:00Z and 2026-11-01T06:00Z.
		{"2026 ordinary winter", "2026-12-15T09:00:00", "2026-12-15T14:00:00Z"},
		{"2026 inside the gap", "2026-03-08T02:30:00", "2026-03-08T07:00:00Z"},
		{"2026 first instant after the gap", "2026-03-08T03:00:00", "2026-03-08T07:00:00Z"},
		{"2026 before the gap", "2026-03-08T01:59:59", "2026-03-08T06:59:59Z"},
		{"2026 inside the fold, earlier", "2026-11-01T01:30:00", "2026-11-01T05:30:00Z"},
		{"2026 after the fold", "2026-11-01T02:00:00", "2026-11-01T07:00:00Z"},
		// 2027: 2027-03-14T07:00Z.
		{"2027 inside the gap", "2027-03-14T02:15:00", "2027-03-14T07:00:00Z"},
	}},
	{"America/Santiago", []transitionCase{
		// Southern hemisphere, transitions at local midnight. 2025: -03->-04
		// at 2025-04-06T03:00Z (24:00 -> 23:00 on Saturday 5 April, so
		// 23:00-24:00 happens twice); -04->-03 at 2025-09-07T04:00Z
		// (00:00 -> 01:00 on Sunday 7 September: that hour never happens).
		{"2025 ordinary summer", "2025-01-15T12:00:00", "2025-01-15T15:00:00Z"},
		{"2025 ordinary winter", "2025-07-15T12:00:00", "2025-07-15T16:00:00Z"},
		{"2025 before the fold", "2025-04-05T22:59:59", "2025-04-06T01:59:59Z"},
		{"2025 fold start, earlier", "2025-04-05T23:00:00", "2025-04-06T02:00:00Z"},
		{"2025 inside the fold, earlier", "2025-04-05T23:30:00", "2025-04-06T02:30:00Z"},
		{"2025 fold end, earlier", "2025-04-05T23:59:59", "2025-04-06T02:59:59Z"},
		{"2025 after the fold", "2025-04-06T00:00:00", "2025-04-06T04:00:00Z"},
		{"2025 before the gap", "2025-09-06T23:59:59", "2025-09-07T03:59:59Z"},
		{"2025 gap start (midnight)", "2025-09-07T00:00:00", "2025-09-07T04:00:00Z"},
		{"2025 inside the gap", "2025-09-07T00:30:00", "2025-09-07T04:00:00Z"},
		{"2025 first instant after the gap", "2025-09-07T01:00:00", "2025-09-07T04:00:00Z"},
		{"2025 after the gap", "2025-09-07T01:00:01", "2025-09-07T04:00:01Z"},
		// 2026: 2026-04-05T03:00Z and 2026-09-06T04:00Z.
		{"2026 inside the fold, earlier", "2026-04-04T23:30:00", "2026-04-05T02:30:00Z"},
		{"2026 after the fold", "2026-04-05T00:00:00", "2026-04-05T04:00:00Z"},
		{"2026 inside the gap", "2026-09-06T00:30:00", "2026-09-06T04:00:00Z"},
		{"2026 gap start (midnight)", "2026-09-06T00:00:00", "2026-09-06T04:00:00Z"},
		{"2026 first instant after the gap", "2026-09-06T01:00:00", "2026-09-06T04:00:00Z"},
		{"2026 before the gap", "2026-09-05T23:59:59", "2026-09-06T03:59:59Z"},
	}},
	{"Europe/Paris", []transitionCase{
		// 2025: CET->CEST at 2025-03-30T01:00Z (02:00 -> 03:00), CEST->CET
		// at 2025-10-26T01:00Z (03:00 -> 02:00).
		{"2025 ordinary winter", "2025-01-15T09:00:00", "2025-01-15T08:00:00Z"},
		{"2025 ordinary summer", "2025-07-15T09:00:00", "2025-07-15T07:00:00Z"},
		{"2025 before the gap", "2025-03-30T01:59:59", "2025-03-30T00:59:59Z"},
		{"2025 gap start", "2025-03-30T02:00:00", "2025-03-30T01:00:00Z"},
		{"2025 inside the gap", "2025-03-30T02:30:00", "2025-03-30T01:00:00Z"},
		{"2025 first instant after the gap", "2025-03-30T03:00:00", "2025-03-30T01:00:00Z"},
		{"2025 fold start, earlier", "2025-10-26T02:00:00", "2025-10-26T00:00:00Z"},
		{"2025 inside the fold, earlier", "2025-10-26T02:30:00", "2025-10-26T00:30:00Z"},
		{"2025 fold end, earlier", "2025-10-26T02:59:59", "2025-10-26T00:59:59Z"},
		{"2025 after the fold", "2025-10-26T03:00:00", "2025-10-26T02:00:00Z"},
		// 2026: 2026-03-29T01:00Z and 2026-10-25T01:00Z.
		{"2026 inside the gap", "2026-03-29T02:15:00", "2026-03-29T01:00:00Z"},
		{"2026 first instant after the gap", "2026-03-29T03:00:00", "2026-03-29T01:00:00Z"},
		{"2026 before the gap", "2026-03-29T01:59:59", "2026-03-29T00:59:59Z"},
		{"2026 inside the fold, earlier", "2026-10-25T02:15:00", "2026-10-25T00:15:00Z"},
		{"2026 after the fold", "2026-10-25T03:00:00", "2026-10-25T02:00:00Z"},
	}},
	{"Europe/London", []transitionCase{
		// 2025: GMT->BST at 2025-03-30T01:00Z (01:00 -> 02:00), BST->GMT
		// at 2025-10-26T01:00Z (02:00 -> 01:00).
		{"2025 ordinary winter", "2025-01-15T09:00:00", "2025-01-15T09:00:00Z"},
		{"2025 ordinary summer", "2025-07-15T09:00:00", "2025-07-15T08:00:00Z"},
		{"2025 before the gap", "2025-03-30T00:59:59", "2025-03-30T00:59:59Z"},
		{"2025 gap start", "2025-03-30T01:00:00", "2025-03-30T01:00:00Z"},
		{"2025 inside the gap", "2025-03-30T01:30:00", "2025-03-30T01:00:00Z"},
		{"2025 first instant after the gap", "2025-03-30T02:00:00", "2025-03-30T01:00:00Z"},
		{"2025 fold start, earlier", "2025-10-26T01:00:00", "2025-10-26T00:00:00Z"},
		{"2025 inside the fold, earlier", "2025-10-26T01:30:00", "2025-10-26T00:30:00Z"},
		{"2025 after the fold", "2025-10-26T02:00:00", "2025-10-26T02:00:00Z"},
		// 2026: 2026-03-29T01:00Z and 2026-10-25T01:00Z.
		{"2026 inside the gap", "2026-03-29T01:30:00", "2026-03-29T01:00:00Z"},
		{"2026 first instant after the gap", "2026-03-29T02:00:00", "2026-03-29T01:00:00Z"},
		{"2026 inside the fold, earlier", "2026-10-25T01:30:00", "2026-10-25T00:30:00Z"},
		{"2026 fold end, earlier", "2026-10-25T01:59:59", "2026-10-25T00:59:59Z"},
		{"2026 after the fold", "2026-10-25T02:00:00", "2026-10-25T02:00:00Z"},
	}},
	{"Australia/Sydney", []transitionCase{
		// 2025: AEDT->AEST at 2025-04-05T16:00Z (03:00 -> 02:00 on 6 April),
		// AEST->AEDT at 2025-10-04T16:00Z (02:00 -> 03:00 on 5 October).
		{"2025 ordinary summer", "2025-01-15T09:00:00", "2025-01-14T22:00:00Z"},
		{"2025 ordinary winter", "2025-07-15T09:00:00", "2025-07-14T23:00:00Z"},
		{"2025 before the fold", "2025-04-06T01:59:59", "2025-04-05T14:59:59Z"},
		{"2025 fold start, earlier", "2025-04-06T02:00:00", "2025-04-05T15:00:00Z"},
		{"2025 inside the fold, earlier", "2025-04-06T02:30:00", "2025-04-05T15:30:00Z"},
		{"2025 after the fold", "2025-04-06T03:00:00", "2025-04-05T17:00:00Z"},
		{"2025 before the gap", "2025-10-05T01:59:59", "2025-10-04T15:59:59Z"},
		{"2025 inside the gap", "2025-10-05T02:30:00", "2025-10-04T16:00:00Z"},
		{"2025 first instant after the gap", "2025-10-05T03:00:00", "2025-10-04T16:00:00Z"},
		// 2026: 2026-04-04T16:00Z and 2026-10-03T16:00Z.
		{"2026 inside the fold, earlier", "2026-04-05T02:30:00", "2026-04-04T15:30:00Z"},
		{"2026 after the fold", "2026-04-05T03:00:00", "2026-04-04T17:00:00Z"},
		{"2026 inside the gap", "2026-10-04T02:30:00", "2026-10-03T16:00:00Z"},
		{"2026 gap start", "2026-10-04T02:00:00", "2026-10-03T16:00:00Z"},
		{"2026 first instant after the gap", "2026-10-04T03:00:00", "2026-10-03T16:00:00Z"},
	}},
	{"Australia/Lord_Howe", []transitionCase{
		// A 30-minute shift. 2025: +11->+10:30 at 2025-04-05T15:00Z (02:00
		// -> 01:30 on 6 April), +10:30->+11 at 2025-10-04T15:30Z (02:00 ->
		// 02:30 on 5 October).
		{"2025 ordinary summer", "2025-01-15T12:00:00", "2025-01-15T01:00:00Z"},
		{"2025 ordinary winter", "2025-07-15T12:00:00", "2025-07-15T01:30:00Z"},
		{"2025 before the fold", "2025-04-06T01:29:59", "2025-04-05T14:29:59Z"},
		{"2025 fold start, earlier", "2025-04-06T01:30:00", "2025-04-05T14:30:00Z"},
		{"2025 inside the fold, earlier", "2025-04-06T01:45:00", "2025-04-05T14:45:00Z"},
		{"2025 fold end, earlier", "2025-04-06T01:59:59", "2025-04-05T14:59:59Z"},
		{"2025 after the fold", "2025-04-06T02:00:00", "2025-04-05T15:30:00Z"},
		{"2025 before the gap", "2025-10-05T01:59:59", "2025-10-04T15:29:59Z"},
		{"2025 gap start", "2025-10-05T02:00:00", "2025-10-04T15:30:00Z"},
		{"2025 inside the gap", "2025-10-05T02:10:00", "2025-10-04T15:30:00Z"},
		{"2025 gap end", "2025-10-05T02:29:59", "2025-10-04T15:30:00Z"},
		{"2025 first instant after the gap", "2025-10-05T02:30:00", "2025-10-04T15:30:00Z"},
		// 2026: 2026-04-04T15:00Z and 2026-10-03T15:30Z.
		{"2026 inside the fold, earlier", "2026-04-05T01:45:00", "2026-04-04T14:45:00Z"},
		{"2026 after the fold", "2026-04-05T02:00:00", "2026-04-04T15:30:00Z"},
		{"2026 inside the gap", "2026-10-04T02:15:00", "2026-10-03T15:30:00Z"},
		{"2026 first instant after the gap", "2026-10-04T02:30:00", "2026-10-03T15:30:00Z"},
		{"2026 before the gap", "2026-10-04T01:59:59", "2026-10-03T15:29:59Z"},
	}},
	{"Pacific/Apia", []transitionCase{
		// Samoa crossed the date line: 29 December 2011 23:59:59 -10 was
		// followed by 31 December 00:00:00 +14 (2011-12-30T10:00Z), so the
		// whole of 30 December never happened there.
		{"2011 before the skipped day", "2011-12-29T23:59:59", "2011-12-30T09:59:59Z"},
		{"2011 skipped day, midnight", "2011-12-30T00:00:00", "2011-12-30T10:00:00Z"},
		{"2011 skipped day, noon", "2011-12-30T12:00:00", "2011-12-30T10:00:00Z"},
		{"2011 skipped day, last second", "2011-12-30T23:59:59", "2011-12-30T10:00:00Z"},
		{"2011 first instant after the skipped day", "2011-12-31T00:00:00", "2011-12-30T10:00:00Z"},
		// 2010: -11->-10 at 2010-09-26T11:00Z (00:00 -> 01:00).
		{"2010 inside the gap", "2010-09-26T00:30:00", "2010-09-26T11:00:00Z"},
		// The last transition: +14->+13 at 2021-04-03T14:00Z (04:00 -> 03:00).
		{"2021 inside the last fold, earlier", "2021-04-04T03:30:00", "2021-04-03T13:30:00Z"},
		{"2021 after the last fold", "2021-04-04T04:00:00", "2021-04-03T15:00:00Z"},
		// No DST since 2021: +13 all year, including the nights that used
		// to be transitions (first Sunday of April, last of September).
		{"2025 January", "2025-01-15T12:00:00", "2025-01-14T23:00:00Z"},
		{"2025 July", "2025-07-15T12:00:00", "2025-07-14T23:00:00Z"},
		{"2025 former spring-forward night", "2025-09-28T03:30:00", "2025-09-27T14:30:00Z"},
		{"2026 former fall-back night", "2026-04-05T03:30:00", "2026-04-04T14:30:00Z"},
		{"2026 former spring-forward night", "2026-09-27T03:30:00", "2026-09-26T14:30:00Z"},
	}},
	{"Africa/Cairo", []transitionCase{
		// DST resumed in 2023, with transitions at local midnight. 2025:
		// EET->EEST at 2025-04-24T22:00Z (00:00 -> 01:00 on Friday 25
		// April), EEST->EET at 2025-10-30T21:00Z (24:00 -> 23:00 on
		// Thursday 30 October).
		{"2025 ordinary winter", "2025-01-15T12:00:00", "2025-01-15T10:00:00Z"},
		{"2025 ordinary summer", "2025-07-15T12:00:00", "2025-07-15T09:00:00Z"},
		{"2025 before the gap", "2025-04-24T23:59:59", "2025-04-24T21:59:59Z"},
		{"2025 gap start (midnight)", "2025-04-25T00:00:00", "2025-04-24T22:00:00Z"},
		{"2025 inside the gap", "2025-04-25T00:30:00", "2025-04-24T22:00:00Z"},
		{"2025 first instant after the gap", "2025-04-25T01:00:00", "2025-04-24T22:00:00Z"},
		{"2025 before the fold", "2025-10-30T22:59:59", "2025-10-30T19:59:59Z"},
		{"2025 fold start, earlier", "2025-10-30T23:00:00", "2025-10-30T20:00:00Z"},
		{"2025 inside the fold, earlier", "2025-10-30T23:30:00", "2025-10-30T20:30:00Z"},
		{"2025 after the fold", "2025-10-31T00:00:00", "2025-10-30T22:00:00Z"},
		// 2026: 2026-04-23T22:00Z and 2026-10-29T21:00Z.
		{"2026 inside the gap", "2026-04-24T00:30:00", "2026-04-23T22:00:00Z"},
		{"2026 first instant after the gap", "2026-04-24T01:00:00", "2026-04-23T22:00:00Z"},
		{"2026 inside the fold, earlier", "2026-10-29T23:30:00", "2026-10-29T20:30:00Z"},
		{"2026 after the fold", "2026-10-30T00:00:00", "2026-10-29T22:00:00Z"},
		// 2027: the last Friday of April is the 30th (2027-04-29T22:00Z).
		{"2027 inside the gap", "2027-04-30T00:30:00", "2027-04-29T22:00:00Z"},
	}},
}

func TestResolveLocalAtTransitions(t *testing.T) {
	t.Parallel()
	for _, table := range transitionTables {
		loc := mustZone(t, table.zone)
		for _, tc := range table.cases {
			t.Run(table.zone+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				wall, err := time.Parse(wallLayout, tc.wall)
				require.NoError(t, err)
				got, err := calendar.ResolveLocal(wall, loc)
				require.NoError(t, err)
				require.Equal(t, tc.want, got.UTC().Format(time.RFC3339), "%s in %s", tc.wall, table.zone)
			})
		}
	}
}

// wallClock reads a zone's clocks minute by minute over a stretch of UTC
// with Time.In, which is unambiguous, and answers what a wall time resolves
// to without ever going from wall time to instant the way time.Date does.
type wallClock struct {
	instants []time.Time
	// shown is what the clocks show at each instant, as a UTC-fielded
	// time; maxShown its running maximum, which only grows, so that the
	// first instant showing a time or later can be found by binary search.
	shown, maxShown []time.Time
}

func newWallClock(loc *time.Location, from, to time.Time) wallClock {
	var c wallClock
	for t := from.Truncate(time.Minute); t.Before(to); t = t.Add(time.Minute) {
		local := t.In(loc)
		shown := time.Date(local.Year(), local.Month(), local.Day(), local.Hour(), local.Minute(), local.Second(), 0, time.UTC)
		highest := shown
		if n := len(c.maxShown); n > 0 && c.maxShown[n-1].After(shown) {
			highest = c.maxShown[n-1]
		}
		c.instants = append(c.instants, t)
		c.shown = append(c.shown, shown)
		c.maxShown = append(c.maxShown, highest)
	}
	return c
}

// resolve is the earliest instant whose clocks show wall (a fold's earlier
// instant) or, when none does (a gap), the earliest showing a later time.
// It assumes transitions on whole minutes, true of every zone since local
// mean time ended.
func (c wallClock) resolve(wall time.Time) time.Time {
	minute := wall.Truncate(time.Minute)
	i := sort.Search(len(c.maxShown), func(i int) bool { return !c.maxShown[i].Before(minute) })
	if i == 0 || i == len(c.instants) {
		panic("wallClock: " + wall.String() + " is outside the window")
	}
	if c.shown[i].Equal(minute) {
		return c.instants[i].Add(wall.Sub(minute))
	}
	return c.instants[i]
}

// TestResolveLocalAgreesWithTheClocks compares the resolver with wallClock
// at every minute (and a second past it) of the two days around each
// transition of the listed zones, and of a day in zones without any.
func TestResolveLocalAgreesWithTheClocks(t *testing.T) {
	t.Parallel()
	zones := []struct {
		name     string
		from, to int
	}{
		{"America/New_York", 2025, 2027}, {"America/Santiago", 2025, 2027},
		{"Europe/Paris", 2025, 2027}, {"Europe/London", 2025, 2027},
		{"Australia/Sydney", 2025, 2027}, {"Australia/Lord_Howe", 2025, 2027},
		{"Pacific/Apia", 2010, 2027}, {"Africa/Cairo", 2022, 2027},
		{"America/St_Johns", 2026, 2026}, {"Antarctica/Troll", 2026, 2026},
		{"Asia/Kolkata", 2026, 2026}, {"UTC", 2026, 2026},
	}
	for _, z := range zones {
		t.Run(z.name, func(t *testing.T) {
			t.Parallel()
			loc := mustZone(t, z.name)
			days := transitionsOf(loc, z.from, z.to)
			if len(days) == 0 {
				days = []time.Time{time.Date(z.from, 6, 1, 12, 0, 0, 0, time.UTC)}
			}
			for _, tr := range days {
				local := tr.In(loc)
				day := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, time.UTC)
				clock := newWallClock(loc, day.Add(-40*time.Hour), day.Add(50*time.Hour))
				for wall := day.Add(-12 * time.Hour); wall.Before(day.Add(36 * time.Hour)); wall = wall.Add(time.Minute) {
					for _, w := range []time.Time{wall, wall.Add(time.Second)} {
						got, err := calendar.ResolveLocal(w, loc)
						require.NoError(t, err)
						require.Equal(t, clock.resolve(w), got.UTC(), "%s in %s", w.Format(wallLayout), z.name)
					}
				}
			}
		})
	}
}

// transitionsOf lists the instants at which loc changes its offset from
// the start of year from to the end of year to, found with ZoneBounds.
func transitionsOf(loc *time.Location, from, to int) []time.Time {
	var out []time.Time
	end := time.Date(to+1, 1, 1, 0, 0, 0, 0, time.UTC)
	for t := time.Date(from, 1, 1, 0, 0, 0, 0, time.UTC); t.Before(end); {
		_, next := t.In(loc).ZoneBounds()
		if next.IsZero() || !next.Before(end) {
			break
		}
		out = append(out, next)
		t = next
	}
	return out
}
