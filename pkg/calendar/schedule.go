package calendar

import (
	"fmt"
	"time"
)

// Frequency is how often a calendar schedule comes round.
type Frequency string

// The calendar frequencies.
const (
	Hourly  Frequency = "hourly"
	Daily   Frequency = "daily"
	Weekly  Frequency = "weekly"
	Monthly Frequency = "monthly"
)

// MinEvery is the shortest every a schedule may have: a sequence runs
// steps that create hooks, which a second-by-second schedule would flood.
const MinEvery = time.Minute

// LastDay in daysOfMonth stands for the last day of each month.
const LastDay = -1

// Spec is a schedule as the API and the config file write it: either
// {"every": "<postIn duration>"} or a calendar {"frequency", "timezone",
// "time": {"hour", "minute"}, "daysOfWeek" | "daysOfMonth"}. Pointers and
// nil slices tell an absent field from a zero one, so that a field given
// where it has no meaning is refused rather than ignored. New checks it.
type Spec struct {
	Every       *string   `json:"every,omitempty"`
	Frequency   *string   `json:"frequency,omitempty"`
	Timezone    *string   `json:"timezone,omitempty"`
	Time        *TimeSpec `json:"time,omitempty"`
	DaysOfWeek  []string  `json:"daysOfWeek,omitempty"`
	DaysOfMonth []int     `json:"daysOfMonth,omitempty"`
}

// TimeSpec is the local time of day of a calendar slot (hourly: the minute
// past each hour).
type TimeSpec struct {
	Hour   *int `json:"hour,omitempty"`
	Minute *int `json:"minute,omitempty"`
}

// dayNames are daysOfWeek's values, indexed by time.Weekday.
var dayNames = [7]string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// Schedule is a checked Spec, ready to compute slots (see Timetable).
type Schedule struct {
	spec      Spec
	every     time.Duration
	frequency Frequency
	loc       *time.Location
	hour      int
	minute    int
	weekdays  [7]bool  // by time.Weekday
	monthDays [32]bool // by day of the month, 1-31
	lastDay   bool
}

// New checks spec and returns its Schedule, its zone from the process's
// tz database release. Every problem is reported, as an *InvalidError
// whose fields start with "schedule".
func New(spec Spec) (Schedule, error) { return Current().New(spec) }

// New is New with the zone from the release z.
func (z *Zones) New(spec Spec) (Schedule, error) {
	s := Schedule{spec: spec}
	var p problems
	switch {
	case spec.Every != nil:
		s.every = spec.checkEvery(&p)
	case spec.Frequency != nil:
		spec.checkCalendar(z, &s, &p)
	default:
		p.add("schedule", "must have either every or frequency")
	}
	if err := p.err(); err != nil {
		return Schedule{}, err
	}
	return s, nil
}

// Spec returns the schedule as it was given.
func (s Schedule) Spec() Spec {
	return s.spec
}

// Every is the interval of an every schedule, zero for a calendar.
func (s Schedule) Every() time.Duration {
	return s.every
}

// Frequency is a calendar schedule's frequency, empty for every.
func (s Schedule) Frequency() Frequency {
	return s.frequency
}

// Location is a calendar schedule's zone, nil for every.
func (s Schedule) Location() *time.Location {
	return s.loc
}

func (spec Spec) checkEvery(p *problems) time.Duration {
	d, err := ParsePostIn(*spec.Every)
	switch {
	case err != nil:
		p.add("schedule.every", "%s", err)
	case d < MinEvery:
		p.add("schedule.every", "must be at least 1m")
	}
	given := []struct {
		field string
		set   bool
	}{
		{"schedule.frequency", spec.Frequency != nil},
		{"schedule.timezone", spec.Timezone != nil},
		{"schedule.time", spec.Time != nil},
		{"schedule.daysOfWeek", spec.DaysOfWeek != nil},
		{"schedule.daysOfMonth", spec.DaysOfMonth != nil},
	}
	for _, g := range given {
		if g.set {
			p.add(g.field, "is not used with every (give either every or a calendar frequency)")
		}
	}
	return d
}

func (spec Spec) checkCalendar(z *Zones, s *Schedule, p *problems) {
	s.frequency = Frequency(*spec.Frequency)
	known := true
	switch s.frequency {
	case Hourly, Daily, Weekly, Monthly:
	default:
		known = false
		p.add("schedule.frequency", `must be one of "hourly", "daily", "weekly", "monthly"`)
	}
	switch {
	case spec.Timezone == nil:
		p.add("schedule.timezone", "is required with frequency")
	default:
		loc, err := z.Load(*spec.Timezone)
		if err != nil {
			p.add("schedule.timezone", "%s", err)
		}
		s.loc = loc
	}
	spec.checkTime(s, known, p)
	if known {
		spec.checkDaysOfWeek(s, p)
		spec.checkDaysOfMonth(s, p)
	}
}

func (spec Spec) checkTime(s *Schedule, known bool, p *problems) {
	if spec.Time == nil {
		if s.frequency == Hourly {
			p.add("schedule.time", `is required: {"minute": 0-59} past each hour`)
		} else {
			p.add("schedule.time", `is required: {"hour": 0-23, "minute": 0-59}`)
		}
		return
	}
	switch h := spec.Time.Hour; {
	case h != nil && s.frequency == Hourly:
		p.add("schedule.time.hour", "is not used with hourly (give the minute past each hour)")
	case h == nil && known && s.frequency != Hourly:
		p.add("schedule.time.hour", "is required with %s", s.frequency)
	case h != nil && (*h < 0 || *h > 23):
		p.add("schedule.time.hour", "must be 0-23")
	case h != nil:
		s.hour = *h
	}
	switch m := spec.Time.Minute; {
	case m == nil:
		p.add("schedule.time.minute", "is required")
	case *m < 0 || *m > 59:
		p.add("schedule.time.minute", "must be 0-59")
	default:
		s.minute = *m
	}
}

func (spec Spec) checkDaysOfWeek(s *Schedule, p *problems) {
	switch {
	case spec.DaysOfWeek == nil && s.frequency == Weekly:
		p.add("schedule.daysOfWeek", `is required with weekly, e.g. ["mon", "fri"]`)
		return
	case spec.DaysOfWeek == nil:
		return
	case s.frequency != Weekly:
		p.add("schedule.daysOfWeek", "is only used with weekly")
		return
	case len(spec.DaysOfWeek) == 0:
		p.add("schedule.daysOfWeek", "must list at least one day")
		return
	}
	// Only the first bad entry is reported, so a huge list cannot make a
	// huge answer.
	for i, name := range spec.DaysOfWeek {
		field := fmt.Sprintf("schedule.daysOfWeek[%d]", i)
		day, ok := weekdayOf(name)
		switch {
		case !ok:
			p.add(field, "unknown day %q (use mon, tue, wed, thu, fri, sat, sun)", name)
			return
		case s.weekdays[day]:
			p.add(field, "%q is listed twice", name)
			return
		}
		s.weekdays[day] = true
	}
}

func weekdayOf(name string) (time.Weekday, bool) {
	for d, n := range dayNames {
		if n == name {
			return time.Weekday(d), true
		}
	}
	return 0, false
}

func (spec Spec) checkDaysOfMonth(s *Schedule, p *problems) {
	switch {
	case spec.DaysOfMonth == nil && s.frequency == Monthly:
		p.add("schedule.daysOfMonth", "is required with monthly, e.g. [1, 15, -1] (-1: the last day)")
		return
	case spec.DaysOfMonth == nil:
		return
	case s.frequency != Monthly:
		p.add("schedule.daysOfMonth", "is only used with monthly")
		return
	case len(spec.DaysOfMonth) == 0:
		p.add("schedule.daysOfMonth", "must list at least one day")
		return
	}
	for i, day := range spec.DaysOfMonth {
		field := fmt.Sprintf("schedule.daysOfMonth[%d]", i)
		switch {
		case day == LastDay && s.lastDay, day >= 1 && day <= 31 && s.monthDays[day]:
			p.add(field, "%d is listed twice", day)
			return
		case day == LastDay:
			s.lastDay = true
		case day >= 1 && day <= 31:
			s.monthDays[day] = true
		default:
			p.add(field, "must be 1-31, or -1 for the last day of the month")
			return
		}
	}
}
