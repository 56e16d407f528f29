// Package calendar holds Sundial's contract for time: how a wall-clock time
// in an IANA zone becomes an instant (the postAtLocal rules: a time in a DST
// gap runs at the first instant after the gap, a time in a fold at the
// earlier instant), how postIn durations are written, and a sequence's
// schedule: its JSON shape, its validation and the instants of its slots.
// The gateway validates and previews with it and the scheduler finds due
// slots with it, so both read the same rules from one place.
package calendar
