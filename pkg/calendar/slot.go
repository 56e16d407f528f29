package calendar

import (
	"math/big"
	"time"
)

// MaxSlots bounds how many slots one call to Slots returns.
const MaxSlots = 1000

// maxScanDays bounds how many local days one search for a calendar slot
// looks at. Every calendar schedule has a slot at least every 62 days (a
// 31st: 31 January to 31 March); 400 leaves room for any of them, so
// running out means no slot (the zone cannot resolve one), not a rare one.
const maxScanDays = 400

// resolveSlack is how far before an instant a wall time can be and still
// resolve at or after it: a wall time resolves to itself minus an offset,
// or to the end of a gap at most one offset later, and offsets lie within
// -12h and +14h (-16h leaves room for old local mean times).
const resolveSlack = 16 * time.Hour

// Timetable is a schedule between its bounds: the slots at or after
// startAt and at or before endAt. Its zero value has no slots.
type Timetable struct {
	schedule Schedule
	startAt  time.Time
	endAt    time.Time
	valid    bool
}

// Between bounds s. startAt is the anchor of an every schedule (slots at
// startAt + k*every, k >= 0), required there; for a calendar, a zero
// startAt means no lower bound. A zero endAt means no end; endAt itself
// may be a slot.
func (s Schedule) Between(startAt, endAt time.Time) (Timetable, error) {
	var p problems
	if s.every > 0 && startAt.IsZero() {
		p.add("startAt", "is required with every: slots are counted from it")
	}
	if !startAt.IsZero() && !InRange(startAt) {
		p.add("startAt", RangeProblem)
	}
	if !endAt.IsZero() && !InRange(endAt) {
		p.add("endAt", RangeProblem)
	}
	if !startAt.IsZero() && !endAt.IsZero() && endAt.Before(startAt) {
		p.add("endAt", "must not be before startAt")
	}
	if err := p.err(); err != nil {
		return Timetable{}, err
	}
	return Timetable{schedule: s, startAt: startAt, endAt: endAt, valid: true}, nil
}

// Schedule is the timetable's schedule.
func (tt Timetable) Schedule() Schedule {
	return tt.schedule
}

// Next returns the first slot strictly after after, in UTC; false when
// there is none (past endAt). Calling Next with the slot it returned walks
// the slots one by one, each later than the one before: wall times that
// resolve to the same instant (all of a skipped day's hourly slots) run
// once.
func (tt Timetable) Next(after time.Time) (time.Time, bool) {
	return tt.NextAtOrAfter(after.Add(time.Nanosecond))
}

// NextAtOrAfter returns the first slot at or after at, in UTC; false when
// there is none (past endAt, or past the year 9999: InRange). A preview ("the next slots at or after max(now,
// startAt)") starts here.
func (tt Timetable) NextAtOrAfter(at time.Time) (time.Time, bool) {
	if !tt.valid {
		return time.Time{}, false
	}
	if at.Before(tt.startAt) {
		at = tt.startAt
	}
	var slot time.Time
	var ok bool
	if tt.schedule.every > 0 {
		slot, ok = tt.everyAtOrAfter(at), true
	} else {
		slot, ok = tt.schedule.calendarAtOrAfter(at)
	}
	if !ok || !InRange(slot) || (!tt.endAt.IsZero() && slot.After(tt.endAt)) {
		return time.Time{}, false
	}
	return slot, true
}

// Slots returns the slots at or after from and before to (a zero to: no
// upper bound), at most limit of them and at most MaxSlots.
func (tt Timetable) Slots(from, to time.Time, limit int) []time.Time {
	limit = min(limit, MaxSlots)
	var out []time.Time
	slot, ok := tt.NextAtOrAfter(from)
	for ; ok && len(out) < limit && (to.IsZero() || slot.Before(to)); slot, ok = tt.Next(slot) {
		out = append(out, slot)
	}
	return out
}

// everyAtOrAfter is startAt + k*every for the least k >= 0 reaching at
// (not before startAt). The count is worked out in big integers: instants
// centuries apart overflow a time.Duration.
func (tt Timetable) everyAtOrAfter(at time.Time) time.Time {
	start := tt.startAt
	gap := new(big.Int).Mul(big.NewInt(at.Unix()-start.Unix()), big.NewInt(int64(time.Second)))
	gap.Add(gap, big.NewInt(int64(at.Nanosecond()-start.Nanosecond())))
	every := big.NewInt(int64(tt.schedule.every))
	k, rem := new(big.Int).QuoRem(gap, every, new(big.Int))
	if rem.Sign() > 0 {
		k.Add(k, big.NewInt(1))
	}
	offset := k.Mul(k, every) // nanoseconds after startAt
	secs, nanos := new(big.Int).QuoRem(offset, big.NewInt(int64(time.Second)), new(big.Int))
	return time.Unix(start.Unix()+secs.Int64(), int64(start.Nanosecond())+nanos.Int64()).UTC()
}

// calendarAtOrAfter walks the schedule's wall times in order from two
// local days before at, resolving each in the zone with the postAtLocal
// rules, and returns the first that lands at or after at. Resolution keeps
// the order of wall times (a later wall time never resolves earlier), so
// the first found is the earliest.
func (s Schedule) calendarAtOrAfter(at time.Time) (time.Time, bool) {
	local := at.In(s.loc)
	day := time.Date(local.Year(), local.Month(), local.Day()-2, 0, 0, 0, 0, time.UTC)
	for i := range maxScanDays {
		date := day.AddDate(0, 0, i) // wall dates in UTC fields: no DST here
		for _, wall := range s.wallsOn(date) {
			if wall.Add(resolveSlack).Before(at) {
				continue // resolves before at: no need to ask the zone
			}
			if slot, err := ResolveLocal(wall, s.loc); err == nil && !slot.Before(at) {
				return slot.UTC(), true
			}
		}
	}
	return time.Time{}, false
}

// wallsOn lists the schedule's wall times on a local date (held in UTC
// fields), in order.
func (s Schedule) wallsOn(date time.Time) []time.Time {
	y, m, d := date.Date()
	switch s.frequency {
	case Hourly:
		walls := make([]time.Time, 24)
		for h := range walls {
			walls[h] = time.Date(y, m, d, h, s.minute, 0, 0, time.UTC)
		}
		return walls
	case Weekly:
		if !s.weekdays[date.Weekday()] {
			return nil
		}
	case Monthly:
		last := time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
		if !s.monthDays[d] && !(s.lastDay && d == last) {
			return nil
		}
	}
	return []time.Time{time.Date(y, m, d, s.hour, s.minute, 0, 0, time.UTC)}
}
