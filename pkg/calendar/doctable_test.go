package calendar_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/calendar"
)

// sequencesDoc holds the "What runs when around DST" table, between the
// markers below.
const (
	sequencesDoc   = "../../docs/sequences.md"
	dstTableBegin  = "<!-- dst-table:begin (generated: TestDSTTableInDocs) -->"
	dstTableEnd    = "<!-- dst-table:end -->"
	dstTableHeader = "| Zone | Schedule | Local day | What happens | Runs at (local) | Runs at (UTC) |\n|---|---|---|---|---|---|\n"
)

// dstRow is a schedule on a day with a transition; the table shows the
// slots whose local date (as the wall clocks read at 12:00) is that day,
// within the local hours from and to.
type dstRow struct {
	zone, label, schedule string
	day                   string // YYYY-MM-DD, local
	what                  string
	from, to              int // local hours
}

var dstRows = []dstRow{
	{"America/New_York", "daily 02:30", `{"frequency":"daily","timezone":"America/New_York","time":{"hour":2,"minute":30}}`,
		"2026-03-08", "spring forward, 02:00 becomes 03:00: 02:30 does not exist", 0, 24},
	{"America/New_York", "daily 01:30", `{"frequency":"daily","timezone":"America/New_York","time":{"hour":1,"minute":30}}`,
		"2026-03-08", "spring forward: 01:30 is before the gap", 0, 24},
	{"America/New_York", "daily 02:30", `{"frequency":"daily","timezone":"America/New_York","time":{"hour":2,"minute":30}}`,
		"2026-11-01", "fall back, 02:00 becomes 01:00: 02:30 happens once", 0, 24},
	{"America/New_York", "daily 01:30", `{"frequency":"daily","timezone":"America/New_York","time":{"hour":1,"minute":30}}`,
		"2026-11-01", "fall back: 01:30 happens twice, runs once, the first time", 0, 24},
	{"America/New_York", "hourly at :30", `{"frequency":"hourly","timezone":"America/New_York","time":{"minute":30}}`,
		"2026-03-08", "spring forward (00:00-04:00 shown)", 0, 4},
	{"America/New_York", "hourly at :30", `{"frequency":"hourly","timezone":"America/New_York","time":{"minute":30}}`,
		"2026-11-01", "fall back (00:00-03:00 shown): the second 01:30 is not a slot", 0, 3},
	{"Australia/Lord_Howe", "daily 02:15", `{"frequency":"daily","timezone":"Australia/Lord_Howe","time":{"hour":2,"minute":15}}`,
		"2026-10-04", "30-minute spring forward, 02:00 becomes 02:30", 0, 24},
	{"Australia/Lord_Howe", "daily 01:45", `{"frequency":"daily","timezone":"Australia/Lord_Howe","time":{"hour":1,"minute":45}}`,
		"2026-04-05", "30-minute fall back, 02:00 becomes 01:30: 01:45 happens twice", 0, 24},
	{"America/Santiago", "daily 00:00", `{"frequency":"daily","timezone":"America/Santiago","time":{"hour":0,"minute":0}}`,
		"2026-09-06", "spring forward at midnight, 00:00 becomes 01:00: midnight does not exist", 0, 24},
	{"America/Santiago", "daily 23:30", `{"frequency":"daily","timezone":"America/Santiago","time":{"hour":23,"minute":30}}`,
		"2026-04-04", "fall back at midnight, 24:00 becomes 23:00: 23:30 happens twice", 0, 24},
	{"Asia/Kathmandu", "daily 09:00", `{"frequency":"daily","timezone":"Asia/Kathmandu","time":{"hour":9,"minute":0}}`,
		"2026-03-08", "no DST, offset +05:45", 0, 24},
}

// dstTable renders dstRows from the engine's slots.
func dstTable(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(dstTableHeader)
	for _, r := range dstRows {
		tt := mustTimetable(t, r.schedule, time.Time{}, time.Time{})
		loc := tt.Schedule().Location()
		wall, err := time.Parse("2006-01-02", r.day)
		require.NoError(t, err)
		// Not time.ParseInLocation: Santiago's midnight is in a gap.
		day, err := calendar.ResolveLocal(wall, loc)
		require.NoError(t, err)
		var local, inUTC []string
		// The window is generous in UTC; the slots are then picked by the
		// local date and hour they show.
		for _, slot := range tt.Slots(day.Add(-24*time.Hour), day.Add(48*time.Hour), calendar.MaxSlots) {
			l := slot.In(loc)
			if l.Format("2006-01-02") != r.day || l.Hour() < r.from || l.Hour() >= r.to {
				continue
			}
			local = append(local, l.Format("15:04 MST"))
			inUTC = append(inUTC, slot.UTC().Format("Jan 2 15:04"))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", r.zone, r.label, wall.Format("Mon Jan 2 2006"), r.what,
			strings.Join(local, ", "), strings.Join(inUTC, ", "))
	}
	return b.String()
}

// TestDSTTableInDocs keeps docs/sequences.md's table equal to what the
// engine computes; on a difference it prints the table to paste.
func TestDSTTableInDocs(t *testing.T) {
	t.Parallel()
	want := dstTable(t)
	doc, err := os.ReadFile(sequencesDoc)
	require.NoError(t, err)
	_, rest, found := strings.Cut(string(doc), dstTableBegin+"\n")
	require.True(t, found, "%s lacks %q", sequencesDoc, dstTableBegin)
	got, _, found := strings.Cut(rest, dstTableEnd)
	require.True(t, found, "%s lacks %q", sequencesDoc, dstTableEnd)
	require.Equal(t, want, got, "docs/sequences.md's DST table differs from the engine; the engine's:\n%s", want)
}
