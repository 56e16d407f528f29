package calendar

import "time"

// The instants Sundial stores and computes: those whose UTC year has the
// four digits RFC 3339 allows, 0001 to 9999, so that every one it accepts
// or works out can be written back in JSON. An offset can push a
// valid-looking local year out ("9999-12-31T23:00:00-05:00").
var (
	earliest = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	end      = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
)

// InRange reports whether t falls in the years 0001 to 9999 in UTC.
func InRange(t time.Time) bool {
	return !t.Before(earliest) && t.Before(end)
}

// RangeProblem is the message for an instant outside InRange, without the
// field's name.
const RangeProblem = "must fall between the years 0001 and 9999 in UTC"
