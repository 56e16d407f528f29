package calendar

import (
	"archive/zip"
	"bytes"
	_ "embed" // the tz database below
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The tz database every wall time is resolved with: one IANA release,
// embedded, never the machine's zone files, so that every gateway and
// scheduler turns a wall time into the same instant (tzdata/README.md).
var (
	//go:embed tzdata/zoneinfo.zip
	embeddedZones []byte
	//go:embed tzdata/VERSION
	embeddedVersion string
)

// Zones is a release of the tz database: its zones by IANA name.
type Zones struct {
	// Version is the release's name, such as "2025c". Releases sort by
	// it: a year, then a letter.
	Version string
	files   map[string]*zip.File
	mu      sync.Mutex
	loaded  map[string]*time.Location
}

// Embedded is the release Sundial is built with.
var Embedded = mustOpenZones(strings.TrimSpace(embeddedVersion), embeddedZones)

// current is the process's release: Embedded unless Use chose another.
var current atomic.Pointer[Zones]

func init() { current.Store(Embedded) }

// Current is the release this process resolves wall times with.
func Current() *Zones { return current.Load() }

// Use makes z the release LoadZone, New and Parse resolve with, for the
// whole process, as time.Local is: a service calls it once, at start,
// before it serves (its SUNDIAL_TZDATA_FILE).
func Use(z *Zones) { current.Store(z) }

// versionPattern is a release's name: a year and one or more letters.
var versionPattern = regexp.MustCompile(`^\d{4}[a-z]+$`)

// CheckVersion reports whether version names a release.
func CheckVersion(version string) error {
	if !versionPattern.MatchString(version) {
		return fmt.Errorf("%q is not a tz database release name, e.g. 2026a", version)
	}
	return nil
}

// CheckSetting checks a service's SUNDIAL_TZDATA_FILE and
// SUNDIAL_TZDATA_VERSION: both empty (the embedded release), or a file and
// its release's name.
func CheckSetting(path, version string) error {
	switch {
	case path == "" && version == "":
		return nil
	case path == "" || version == "":
		return errors.New("SUNDIAL_TZDATA_FILE and SUNDIAL_TZDATA_VERSION: set both or neither")
	}
	if err := CheckVersion(version); err != nil {
		return fmt.Errorf("SUNDIAL_TZDATA_VERSION: %w", err)
	}
	return nil
}

// UseSetting makes the release of a service's SUNDIAL_TZDATA_FILE and
// SUNDIAL_TZDATA_VERSION, which its Config's Validate has checked
// (CheckSetting), the process's (Use); without a file, the process keeps
// the embedded release.
func UseSetting(path, version string) error {
	if path == "" {
		return nil
	}
	z, err := ReadZonesFile(path, version)
	if err != nil {
		return fmt.Errorf("SUNDIAL_TZDATA_FILE: %w", err)
	}
	Use(z)
	return nil
}

// ReadZonesFile opens the release named version in the zip archive at
// path (as Go's lib/time/zoneinfo.zip).
func ReadZonesFile(path, version string) (*Zones, error) {
	if err := CheckVersion(version); err != nil {
		return nil, err
	}
	archive, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tz database %s: %w", version, err)
	}
	return OpenZones(version, archive)
}

// OpenZones reads a release from a zip archive of compiled zone files
// (TZif), named by their IANA names, as Go's zoneinfo.zip.
func OpenZones(version string, archive []byte) (*Zones, error) {
	r, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		return nil, fmt.Errorf("tz database %s: %w", version, err)
	}
	z := &Zones{Version: version, files: make(map[string]*zip.File, len(r.File)), loaded: map[string]*time.Location{}}
	for _, f := range r.File {
		z.files[f.Name] = f
	}
	return z, nil
}

func mustOpenZones(version string, archive []byte) *Zones {
	z, err := OpenZones(version, archive)
	if err != nil {
		panic(err)
	}
	return z
}

// Load returns the zone of an IANA name. "Local" and "" are refused: they
// would mean the server's zone, which a client cannot know.
func (z *Zones) Load(name string) (*time.Location, error) {
	if name == "" || name == "Local" {
		return nil, errors.New("must be an IANA time zone name, e.g. Europe/Paris")
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	if loc, ok := z.loaded[name]; ok {
		return loc, nil
	}
	f, ok := z.files[name]
	if !ok {
		return nil, errors.New("is not a known IANA time zone name, e.g. Europe/Paris")
	}
	loc, err := readZone(name, f)
	if err != nil {
		return nil, fmt.Errorf("cannot be read from tz database %s: %w", z.Version, err)
	}
	z.loaded[name] = loc
	return loc, nil
}

// maxZoneFile bounds a compiled zone file; the largest is a few KiB.
const maxZoneFile = 1 << 20

func readZone(name string, f *zip.File) (*time.Location, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxZoneFile))
	if err != nil {
		return nil, err
	}
	return time.LoadLocationFromTZData(name, data)
}

// LoadZone loads an IANA time zone of the process's release by name.
func LoadZone(name string) (*time.Location, error) { return Current().Load(name) }
