// Package tztest holds releases of a tz database that differ in one zone,
// for tests of local times that follow the tz database: in Old,
// America/Mexico_City keeps summer time (UTC-5 from April to October), in
// New it stays on UTC-6 all year, as the real database changed in 2022;
// in Moved, named after every real release, it is on UTC-5 all year, an
// hour ahead of the real rules of today. gen.sh compiles the .zi sources
// into the archives.
package tztest

import (
	_ "embed" // the archives below
	"os"
	"path/filepath"
	"testing"

	"github.com/sundial-run/sundial/pkg/calendar"
)

// The releases' names: they sort before every real release.
const (
	OldVersion   = "1999a"
	NewVersion   = "1999b"
	MovedVersion = "2099a"
	// Zone is the one zone both releases hold.
	Zone = "America/Mexico_City"
)

var (
	//go:embed old.zip
	oldZip []byte
	//go:embed new.zip
	newZip []byte
	//go:embed moved.zip
	movedZip []byte
)

// Old is the release in which Zone keeps summer time.
func Old(t testing.TB) *calendar.Zones { return open(t, OldVersion, oldZip) }

// New is the release in which Zone does not.
func New(t testing.TB) *calendar.Zones { return open(t, NewVersion, newZip) }

// MovedFile writes Moved to a file for SUNDIAL_TZDATA_FILE and returns its
// path; its SUNDIAL_TZDATA_VERSION is MovedVersion.
func MovedFile(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "zoneinfo.zip")
	if err := os.WriteFile(path, movedZip, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func open(t testing.TB, version string, archive []byte) *calendar.Zones {
	t.Helper()
	z, err := calendar.OpenZones(version, archive)
	if err != nil {
		t.Fatal(err)
	}
	return z
}
