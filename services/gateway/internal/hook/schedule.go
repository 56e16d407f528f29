package hook

import (
	"regexp"
	"time"

	"github.com/sundial-run/sundial/pkg/calendar"
)

var postAtLocalPattern = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$`)

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
		if t, wall, ok := parsePostAtLocal(*r.PostAtLocal, *r.Timezone, p); ok {
			n.PostAt, n.Local = &t, &LocalTime{Wall: wall, Zone: *r.Timezone}
		}
	default:
		if d, err := calendar.ParsePostIn(*r.PostIn); err != nil {
			p.add("postIn", "%s", err)
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

// inYearRange keeps t when it is an instant a hook may be scheduled at
// (calendar.InRange), so that every postAt can be shown again.
func inYearRange(t time.Time, field string, p *problems) (time.Time, bool) {
	if !calendar.InRange(t) {
		p.add(field, calendar.RangeProblem)
		return time.Time{}, false
	}
	return t, true
}

// parsePostAtLocal reads a wall-clock time in an IANA zone, reporting a
// bad zone and a bad wall time together, and returns the instant and the
// wall time.
func parsePostAtLocal(s, zone string, p *problems) (time.Time, time.Time, bool) {
	loc, zoneErr := calendar.LoadZone(zone)
	if zoneErr != nil {
		p.add("timezone", "%s", zoneErr)
	}
	wall, ok := parseWall(s, p)
	if !ok || zoneErr != nil {
		return time.Time{}, time.Time{}, false
	}
	t, err := calendar.ResolveLocal(wall, loc)
	if err != nil {
		p.add("postAtLocal", "%s", err)
		return time.Time{}, time.Time{}, false
	}
	t, ok = inYearRange(t.UTC(), "postAtLocal", p)
	return t, wall, ok
}

// parseWall reads YYYY-MM-DDTHH:MM:SS exactly: no offset, no fraction.
func parseWall(s string, p *problems) (time.Time, bool) {
	if !postAtLocalPattern.MatchString(s) {
		p.add("postAtLocal", "must be a local date-time without offset, YYYY-MM-DDTHH:MM:SS")
		return time.Time{}, false
	}
	wall, err := time.Parse(wallLayout, s)
	if err != nil {
		p.add("postAtLocal", "is not a valid date-time: %s", err)
		return time.Time{}, false
	}
	return wall, true
}
