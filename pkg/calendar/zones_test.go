package calendar_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/calendar"
)

func TestTheEmbeddedTZDatabaseIsAKnownRelease(t *testing.T) {
	t.Parallel()
	require.Regexp(t, `^\d{4}[a-z]$`, calendar.Embedded.Version)
	paris, err := calendar.LoadZone("Europe/Paris")
	require.NoError(t, err)
	again, err := calendar.LoadZone("Europe/Paris")
	require.NoError(t, err)
	require.Same(t, paris, again, "a zone is read from the archive once")
	_, offset := time.Date(2030, 7, 1, 12, 0, 0, 0, time.UTC).In(paris).Zone()
	require.Equal(t, 2*3600, offset)

	for _, name := range []string{"", "Local", "Mars/Olympus_Mons", "../etc/passwd"} {
		_, err := calendar.LoadZone(name)
		require.Error(t, err, name)
	}
}

func TestOpenZonesRefusesWhatIsNotAnArchive(t *testing.T) {
	t.Parallel()
	_, err := calendar.OpenZones("2099z", []byte("not a zip"))
	require.ErrorContains(t, err, "2099z")
}

func TestATZDataSettingIsAFileAndItsRelease(t *testing.T) {
	t.Parallel()
	require.NoError(t, calendar.CheckSetting("", ""), "the embedded release")
	require.NoError(t, calendar.CheckSetting("/etc/zoneinfo.zip", "2026a"))
	require.ErrorContains(t, calendar.CheckSetting("/etc/zoneinfo.zip", ""), "set both or neither")
	require.ErrorContains(t, calendar.CheckSetting("", "2026a"), "set both or neither")
	require.ErrorContains(t, calendar.CheckSetting("/etc/zoneinfo.zip", "latest"), "SUNDIAL_TZDATA_VERSION")

	_, err := calendar.ReadZonesFile(filepath.Join(t.TempDir(), "missing.zip"), "2026a")
	require.ErrorContains(t, err, "2026a")
	z, err := calendar.ReadZonesFile("tzdata/zoneinfo.zip", "2099a")
	require.NoError(t, err)
	require.Equal(t, "2099a", z.Version)
	_, err = z.Load("Asia/Tokyo")
	require.NoError(t, err)
}

// Go's tz database is "slim": its zone files leave the rules to each
// zone's TZ string, for which Go cuts the zone bounds at every year's
// edge. A wall time near one resolves as it would with every transition
// listed.
func TestLocalTimesAroundTheYearsEdgeResolveInSlimZones(t *testing.T) {
	t.Parallel()
	santiago, err := calendar.LoadZone("America/Santiago")
	require.NoError(t, err)
	for _, c := range []struct{ wall, want string }{
		{"2024-12-31T09:00:00", "2024-12-31T12:00:00Z"}, // summer time, -03
		{"2025-01-01T09:00:00", "2025-01-01T12:00:00Z"},
		{"2041-01-01T00:30:00", "2041-01-01T03:30:00Z"},
		{"2025-09-07T00:30:00", "2025-09-07T04:00:00Z"}, // in the gap: its end
	} {
		wall, err := time.Parse("2006-01-02T15:04:05", c.wall)
		require.NoError(t, err)
		got, err := calendar.ResolveLocal(wall, santiago)
		require.NoError(t, err)
		require.Equal(t, c.want, got.UTC().Format(time.RFC3339), c.wall)
	}
}
