package hook

import (
	"errors"
	"regexp"
	"strconv"
	"time"
)

// Bounds of postIn.
const (
	MinPostIn = time.Second
	MaxPostIn = 365 * 24 * time.Hour
)

var (
	postInPattern      = regexp.MustCompile(`^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$`)
	postAtLocalPattern = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$`)
	unitLengths        = [4]time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second}
)

// schedule sets when the hook is due from exactly one of postAt,
// postAtLocal (with timezone) and postIn.
func (r CreateRequest) schedule(n *New, p *problems) {
	if !r.oneSchedule(p) {
		return
	}
	switch {
	case r.PostAt != nil:
		if t, ok := parsePostAt(*r.PostAt, p); ok {
			n.PostAt = &t
		}
	case r.PostAtLocal != nil:
		if t, ok := parsePostAtLocal(*r.PostAtLocal, *r.Timezone, p); ok {
			n.PostAt = &t
		}
	default:
		if d, msg := ParsePostIn(*r.PostIn); msg != "" {
			p.add("postIn", "%s", msg)
		} else {
			n.PostIn = d
		}
	}
}

// oneSchedule reports whether exactly one way of scheduling was given, with
// timezone exactly when postAtLocal is.
func (r CreateRequest) oneSchedule(p *problems) bool {
	modes := []struct {
		field string
		set   bool
	}{{"postAt", r.PostAt != nil}, {"postAtLocal", r.PostAtLocal != nil}, {"postIn", r.PostIn != nil}}
	given := 0
	for _, m := range modes {
		if m.set {
			given++
		}
	}
	before := len(*p)
	if given == 0 {
		p.add("postAt", "one of postAt, postAtLocal (with timezone) or postIn is required")
	}
	for _, m := range modes {
		if given > 1 && m.set {
			p.add(m.field, "give only one of postAt, postAtLocal or postIn")
		}
	}
	switch {
	case r.Timezone != nil && r.PostAtLocal == nil:
		p.add("timezone", "is only used with postAtLocal")
	case r.Timezone == nil && r.PostAtLocal != nil:
		p.add("timezone", "is required with postAtLocal")
	}
	return len(*p) == before
}

// parsePostAt reads an RFC 3339 instant; the offset is required, so a
// time is never guessed to be in some zone.
func parsePostAt(s string, p *problems) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		p.add("postAt", "must be an RFC 3339 date-time with an offset, e.g. 2030-01-02T15:04:05Z")
		return time.Time{}, false
	}
	return inYearRange(t.UTC(), "postAt", p)
}

// Instants a hook may be scheduled at: those whose UTC year has the four
// digits RFC 3339 allows, so that every postAt can be shown again. An
// offset can push a valid-looking local year out ("9999-12-31T23:00:00-05:00").
var (
	earliestPostAt = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	latestPostAt   = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
)

func inYearRange(t time.Time, field string, p *problems) (time.Time, bool) {
	if t.Before(earliestPostAt) || !t.Before(latestPostAt) {
		p.add(field, "must fall between the years 0001 and 9999 in UTC")
		return time.Time{}, false
	}
	return t, true
}

// ParsePostIn reads a postIn duration such as "1d12h" or "90s". It returns
// a message for the client when the duration is malformed or out of bounds.
func ParsePostIn(s string) (time.Duration, string) {
	m := postInPattern.FindStringSubmatch(s)
	if s == "" || m == nil {
		return 0, `must be a duration of days, hours, minutes and seconds in that order, e.g. "1d12h" or "90s"`
	}
	var total time.Duration
	for i, unit := range unitLengths {
		if m[i+1] == "" {
			continue
		}
		n, err := strconv.ParseInt(m[i+1], 10, 64)
		if err != nil || n > int64(MaxPostIn/unit) {
			return 0, "must be at most 365d"
		}
		total += time.Duration(n) * unit
	}
	switch {
	case total < MinPostIn:
		return 0, "must be at least 1s"
	case total > MaxPostIn:
		return 0, "must be at most 365d"
	}
	return total, ""
}

// parsePostAtLocal reads a wall-clock time in an IANA zone, reporting a
// bad zone and a bad wall time together.
func parsePostAtLocal(s, zone string, p *problems) (time.Time, bool) {
	loc, zoneErr := loadZone(zone)
	if zoneErr != nil {
		p.add("timezone", "%s", zoneErr)
	}
	wall, ok := parseWall(s, p)
	if !ok || zoneErr != nil {
		return time.Time{}, false
	}
	t, err := ResolveLocal(wall, loc)
	if err != nil {
		p.add("postAtLocal", "%s", err)
		return time.Time{}, false
	}
	return inYearRange(t.UTC(), "postAtLocal", p)
}

// parseWall reads YYYY-MM-DDTHH:MM:SS exactly: no offset, no fraction.
func parseWall(s string, p *problems) (time.Time, bool) {
	if !postAtLocalPattern.MatchString(s) {
		p.add("postAtLocal", "must be a local date-time without offset, YYYY-MM-DDTHH:MM:SS")
		return time.Time{}, false
	}
	wall, err := time.Parse("2006-01-02T15:04:05", s)
	if err != nil {
		p.add("postAtLocal", "is not a valid date-time: %s", err)
		return time.Time{}, false
	}
	return wall, true
}

func loadZone(name string) (*time.Location, error) {
	if name == "" || name == "Local" {
		return nil, errors.New("must be an IANA time zone name, e.g. Europe/Paris")
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, errors.New("is not a known IANA time zone name, e.g. Europe/Paris")
	}
	return loc, nil
}
