// Package tztest holds two releases of a tz database that differ in one
// zone, for tests of local times that follow the tz database: in Old,
// America/Mexico_City keeps summer time (UTC-5 from April to October), in
// New it stays on UTC-6 all year, as the real database changed in 2022.
// gen.sh compiles old.zi and new.zi into the archives.
package tztest

import (
	_ "embed" // the archives below
	"testing"

	"github.com/sundial-run/sundial/pkg/calendar"
)

// The releases' names: they sort before every real release.
const (
	OldVersion = "1999a"
	NewVersion = "1999b"
	// Zone is the one zone both releases hold.
	Zone = "America/Mexico_City"
)

var (
	//go:embed old.zip
	oldZip []byte
	//go:embed new.zip
	newZip []byte
)

// Old is the release in which Zone keeps summer time.
func Old(t testing.TB) *calendar.Zones { return open(t, OldVersion, oldZip) }

// New is the release in which Zone does not.
func New(t testing.TB) *calendar.Zones { return open(t, NewVersion, newZip) }

func open(t testing.TB, version string, archive []byte) *calendar.Zones {
	t.Helper()
	z, err := calendar.OpenZones(version, archive)
	if err != nil {
		t.Fatal(err)
	}
	return z
}
