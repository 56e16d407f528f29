package calendar_test

import (
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/calendar"
)

func TestParsePostIn(t *testing.T) {
	t.Parallel()
	valid := map[string]time.Duration{
		"1s":           time.Second,
		"90s":          90 * time.Second,
		"1m":           time.Minute,
		"2h30m":        150 * time.Minute,
		"1d":           24 * time.Hour,
		"1d2h3m4s":     26*time.Hour + 3*time.Minute + 4*time.Second,
		"365d":         365 * 24 * time.Hour,
		"8760h":        365 * 24 * time.Hour,
		"0d0h0m1s":     time.Second,
		"00000000005s": 5 * time.Second,
	}
	for in, want := range valid {
		got, err := calendar.ParsePostIn(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	invalid := map[string]string{
		"":                      "must be a duration",
		"0s":                    "at least 1s",
		"0d":                    "at least 1s",
		"365d1s":                "at most 365d",
		"366d":                  "at most 365d",
		"99999999999999999999d": "at most 365d",
		"1h1d":                  "must be a duration",
		"1.5h":                  "must be a duration",
		"-1s":                   "must be a duration",
		"1 h":                   "must be a duration",
		"1H":                    "must be a duration",
		"1w":                    "must be a duration",
		"s":                     "must be a duration",
	}
	for in, want := range invalid {
		_, err := calendar.ParsePostIn(in)
		require.ErrorContains(t, err, want, in)
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}

func TestResolveLocal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, zone, wall, want string
	}{
		{"ordinary winter time", "America/New_York", "2025-01-15T09:00:00", "2025-01-15T14:00:00Z"},
		{"ordinary summer time", "America/New_York", "2025-07-15T09:00:00", "2025-07-15T13:00:00Z"},
		{"gap: 02:30 on spring-forward day becomes 03:00", "America/New_York", "2025-03-09T02:30:00", "2025-03-09T07:00:00Z"},
		{"gap: its first moment", "America/New_York", "2025-03-09T02:00:00", "2025-03-09T07:00:00Z"},
		{"just before the gap", "America/New_York", "2025-03-09T01:59:59", "2025-03-09T06:59:59Z"},
		{"fold: the earlier 01:30", "America/New_York", "2025-11-02T01:30:00", "2025-11-02T05:30:00Z"},
		{"just after the fold", "America/New_York", "2025-11-02T02:00:00", "2025-11-02T07:00:00Z"},
		{"gap in Europe", "Europe/Paris", "2026-03-29T02:15:00", "2026-03-29T01:00:00Z"},
		{"fold in Europe", "Europe/Paris", "2026-10-25T02:15:00", "2026-10-25T00:15:00Z"},
		{"half-hour DST gap", "Australia/Lord_Howe", "2025-10-05T02:10:00", "2025-10-04T15:30:00Z"},
		{"half-hour DST fold", "Australia/Lord_Howe", "2025-04-06T01:45:00", "2025-04-05T14:45:00Z"},
		{"a skipped day", "Pacific/Apia", "2011-12-30T12:00:00", "2011-12-30T10:00:00Z"},
		{"southern hemisphere gap", "America/Santiago", "2025-09-07T00:30:00", "2025-09-07T04:00:00Z"},
		{"fixed zone", "UTC", "2030-01-02T03:04:05", "2030-01-02T03:04:05Z"},
		{"far future rule", "America/New_York", "2090-03-12T02:30:00", "2090-03-12T07:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			wall, err := time.Parse("2006-01-02T15:04:05", tt.wall)
			require.NoError(t, err)
			got, err := calendar.ResolveLocal(wall, mustZone(t, tt.zone))
			require.NoError(t, err)
			require.Equal(t, tt.want, got.UTC().Format(time.RFC3339))
		})
	}
}

// postInGrammar is the oracle for postIn, written without regular
// expressions: up to four groups of ASCII digits, each followed by its
// unit, the units in the order d, h, m, s, at least one group. It returns
// the total in seconds (of any size), or false when s does not match.
func postInGrammar(s string) (*big.Int, bool) {
	units := []struct {
		letter byte
		secs   int64
	}{{'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}}
	total := new(big.Int)
	groups := 0
	for s != "" {
		digits := 0
		for digits < len(s) && s[digits] >= '0' && s[digits] <= '9' {
			digits++
		}
		if digits == 0 || digits == len(s) {
			return nil, false
		}
		next := -1
		for i, u := range units {
			if u.letter == s[digits] {
				next = i
			}
		}
		if next < 0 {
			return nil, false
		}
		n, _ := new(big.Int).SetString(s[:digits], 10)
		total.Add(total, n.Mul(n, big.NewInt(units[next].secs)))
		units = units[next+1:] // the next group must use a later unit
		s = s[digits+1:]
		groups++
	}
	return total, groups > 0
}

// canonical writes d the way a client would: each non-zero unit once.
func canonical(d time.Duration) string {
	secs := int64(d / time.Second)
	var b strings.Builder
	for _, u := range []struct {
		letter string
		secs   int64
	}{{"d", 86400}, {"h", 3600}, {"m", 60}, {"s", 1}} {
		if n := secs / u.secs; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.letter)
			secs -= n * u.secs
		}
	}
	return b.String()
}

// FuzzParsePostIn checks ParsePostIn against the grammar oracle: it never
// panics, accepts exactly the strings of the grammar whose total is within
// 1s..365d, returns that total, and its result written canonically parses
// back to itself. Seeds: testdata/fuzz/FuzzParsePostIn.
func FuzzParsePostIn(f *testing.F) {
	lo, hi := big.NewInt(int64(calendar.MinPostIn/time.Second)), big.NewInt(int64(calendar.MaxPostIn/time.Second))
	f.Fuzz(func(t *testing.T, s string) {
		d, err := calendar.ParsePostIn(s)
		total, matches := postInGrammar(s)
		inBounds := matches && total.Cmp(lo) >= 0 && total.Cmp(hi) <= 0
		if !inBounds {
			require.Error(t, err, "accepted %q as %s", s, d)
			require.Zero(t, d)
			return
		}
		require.NoError(t, err, "refused %q", s)
		require.Equal(t, total.Int64(), int64(d/time.Second), "%q", s)
		require.Zero(t, d%time.Second)
		require.GreaterOrEqual(t, d, calendar.MinPostIn)
		require.LessOrEqual(t, d, calendar.MaxPostIn)
		again, err := calendar.ParsePostIn(canonical(d))
		require.NoError(t, err, "canonical form %q of %q", canonical(d), s)
		require.Equal(t, d, again)
	})
}
