package calendar_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/calendar"
)

// oracleCase is one calendar schedule over a window, as testdata/oracle.py
// reads it.
type oracleCase struct {
	Name        string   `json:"name"`
	Zone        string   `json:"zone"`
	Frequency   string   `json:"frequency"`
	Hour        int      `json:"hour"`
	Minute      int      `json:"minute"`
	DaysOfWeek  []string `json:"daysOfWeek,omitempty"`
	DaysOfMonth []int    `json:"daysOfMonth,omitempty"`
	From        int64    `json:"from"`
	To          int64    `json:"to"`
}

func (c oracleCase) spec() calendar.Spec {
	spec := calendar.Spec{Frequency: &c.Frequency, Timezone: &c.Zone, Time: &calendar.TimeSpec{Minute: &c.Minute},
		DaysOfWeek: c.DaysOfWeek, DaysOfMonth: c.DaysOfMonth}
	if c.Frequency != "hourly" {
		spec.Time.Hour = &c.Hour
	}
	return spec
}

// oracleSchedules are the schedules each zone is checked with: the times
// that fall in gaps and folds in some zone (02:30, 02:00, 01:30, 00:00),
// one that never does (09:00), and the month days that some months lack.
func oracleSchedules() []oracleCase {
	var out []oracleCase
	for _, m := range []int{0, 30} {
		out = append(out, oracleCase{Name: fmt.Sprintf("hourly :%02d", m), Frequency: "hourly", Minute: m})
	}
	for _, hm := range [][2]int{{2, 30}, {2, 15}, {2, 0}, {1, 30}, {0, 0}, {9, 0}} {
		out = append(out, oracleCase{Name: fmt.Sprintf("daily %02d:%02d", hm[0], hm[1]), Frequency: "daily", Hour: hm[0], Minute: hm[1]})
	}
	out = append(out, oracleCase{Name: "weekly mon,fri 02:30", Frequency: "weekly", Hour: 2, Minute: 30, DaysOfWeek: []string{"mon", "fri"}})
	for _, days := range [][]int{{31}, {-1}, {29}, {1}, {31, -1, 1}} {
		for _, hm := range [][2]int{{2, 30}, {0, 0}} {
			out = append(out, oracleCase{Name: fmt.Sprintf("monthly %v %02d:%02d", days, hm[0], hm[1]), Frequency: "monthly",
				Hour: hm[0], Minute: hm[1], DaysOfMonth: days})
		}
	}
	return out
}

func oracleCases() []oracleCase {
	windows := []struct {
		zones    []string
		from, to time.Time
	}{
		{[]string{"America/New_York", "Europe/London", "Australia/Lord_Howe", "Asia/Kathmandu", "Pacific/Apia", "America/Santiago"},
			time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2029, 1, 1, 0, 0, 0, 0, time.UTC)},
		// Past the last transition a zone file lists, where a zone's TZ
		// string rules (and Go's zone bounds are cut at each year's edge).
		{[]string{"America/New_York", "Europe/London", "America/Santiago", "Australia/Lord_Howe"},
			time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2042, 1, 1, 0, 0, 0, 0, time.UTC)},
		// Samoa skipped 30 December 2011 entirely.
		{[]string{"Pacific/Apia"}, time.Date(2011, 12, 1, 0, 0, 0, 0, time.UTC), time.Date(2012, 2, 1, 0, 0, 0, 0, time.UTC)},
	}
	var out []oracleCase
	for _, w := range windows {
		for _, zone := range w.zones {
			for _, c := range oracleSchedules() {
				c.Zone, c.From, c.To = zone, w.from.Unix(), w.to.Unix()
				c.Name = fmt.Sprintf("%s %d %s", zone, w.from.Year(), c.Name)
				out = append(out, c)
			}
		}
	}
	return out
}

// runOracle computes every case's slots with testdata/oracle.py, in one
// run of python3. Python is part of this repository's test machine (see
// docs/sequences.md); without it this test fails rather than skip, since
// a skipped oracle would hide exactly the bugs it is for.
func runOracle(t *testing.T, cases []oracleCase) map[string][]int64 {
	t.Helper()
	python, err := exec.LookPath("python3")
	require.NoError(t, err, "the calendar oracle needs python3 (3.9 or later, for zoneinfo) on PATH")
	in, err := json.Marshal(map[string]any{"cases": cases})
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), python, "testdata/oracle.py")
	// The oracle reads the same tz database as the engine, the embedded
	// release, not the machine's: the test compares rules, not releases.
	cmd.Env = append(os.Environ(), "PYTHONTZPATH="+embeddedZoneDir(t))
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "testdata/oracle.py failed: %s", stderr.String())
	var out map[string][]int64
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &out))
	require.Len(t, out, len(cases))
	return out
}

// embeddedZoneDir writes the embedded release's zone files into a folder,
// as Python's zoneinfo reads a tz database.
func embeddedZoneDir(t *testing.T) string {
	t.Helper()
	r, err := zip.OpenReader("tzdata/zoneinfo.zip")
	require.NoError(t, err)
	defer r.Close()
	dir := t.TempDir()
	for _, f := range r.File {
		path := filepath.Join(dir, filepath.FromSlash(f.Name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		rc, err := f.Open()
		require.NoError(t, err)
		data, err := io.ReadAll(rc)
		require.NoError(t, err)
		require.NoError(t, rc.Close())
		require.NoError(t, os.WriteFile(path, data, 0o644))
	}
	return dir
}

// TestSlotsAgreeWithTheOracle compares every slot the engine finds over
// each window with the oracle's, one by one, gap and fold slots included.
func TestSlotsAgreeWithTheOracle(t *testing.T) {
	t.Parallel()
	cases := oracleCases()
	want := runOracle(t, cases)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			expected := want[c.Name]
			require.NotEmpty(t, expected, "the oracle found no slot")
			s, err := calendar.New(c.spec())
			require.NoError(t, err)
			tt, err := s.Between(time.Time{}, time.Time{})
			require.NoError(t, err)
			from, to := time.Unix(c.From, 0), time.Unix(c.To, 0)
			var got []int64
			slot, ok := tt.NextAtOrAfter(from)
			for ; ok && slot.Before(to) && len(got) <= len(expected); slot, ok = tt.Next(slot) {
				got = append(got, slot.Unix())
			}
			requireSameSlots(t, expected, got)
		})
	}
}

// requireSameSlots reports the first slot that differs, with its
// neighbours, rather than a diff of thousands of lines.
func requireSameSlots(t *testing.T, want, got []int64) {
	t.Helper()
	for i := range max(len(want), len(got)) {
		if i < len(want) && i < len(got) && want[i] == got[i] {
			continue
		}
		lo, hi := max(i-2, 0), i+3
		require.Failf(t, "slots differ", "at slot %d: oracle %v, engine %v", i, formatRange(want, lo, hi), formatRange(got, lo, hi))
	}
}

func formatRange(secs []int64, lo, hi int) []string {
	var out []string
	for i := lo; i < hi && i < len(secs); i++ {
		out = append(out, time.Unix(secs[i], 0).UTC().Format(time.RFC3339))
	}
	return out
}
