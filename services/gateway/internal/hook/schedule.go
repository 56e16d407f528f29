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
	return t.UTC(), true
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

// parsePostAtLocal reads a wall-clock time in an IANA zone.
func parsePostAtLocal(s, zone string, p *problems) (time.Time, bool) {
	loc, err := loadZone(zone)
	if err != nil {
		p.add("timezone", "%s", err)
		return time.Time{}, false
	}
	if !postAtLocalPattern.MatchString(s) {
		p.add("postAtLocal", "must be a local date-time without offset, YYYY-MM-DDTHH:MM:SS")
		return time.Time{}, false
	}
	wall, err := time.Parse("2006-01-02T15:04:05", s)
	if err != nil {
		p.add("postAtLocal", "is not a valid date-time: %s", err)
		return time.Time{}, false
	}
	t, err := ResolveLocal(wall, loc)
	if err != nil {
		p.add("postAtLocal", "%s", err)
		return time.Time{}, false
	}
	return t, true
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
