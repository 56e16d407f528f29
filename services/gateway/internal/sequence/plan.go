package sequence

import (
	"time"

	"github.com/sundial-run/sundial/pkg/calendar"
)

// Preview bounds (decisions: Sequences).
const (
	DefaultPreviewCount = 10
	MaxPreviewCount     = 100
)

// plan is the status and next slot of a sequence (re)planned at now: the
// first slot at or after max(now, startAt), or none (ended). A paused
// sequence stays paused with no slot: resume plans it.
func plan(s calendar.Schedule, startAt time.Time, endAt *time.Time, now time.Time, paused bool) (string, *time.Time) {
	if paused {
		return StatusPaused, nil
	}
	tt, err := timetable(s, startAt, endAt)
	if err != nil {
		// endAt before a defaulted startAt (the creation time): no slot.
		return StatusEnded, nil
	}
	next, ok := tt.NextAtOrAfter(now)
	if !ok {
		return StatusEnded, nil
	}
	return StatusActive, &next
}

func timetable(s calendar.Schedule, startAt time.Time, endAt *time.Time) (calendar.Timetable, error) {
	var end time.Time
	if endAt != nil {
		end = *endAt
	}
	return s.Between(startAt, end)
}

// PreviewRequest is the body of POST /v1/sequences/preview.
type PreviewRequest struct {
	Schedule *calendar.Spec `json:"schedule"`
	StartAt  *string        `json:"startAt"`
	EndAt    *string        `json:"endAt"`
	Count    *int           `json:"count"`
}

// RunTimes validates the request and returns the schedule's next slots at
// or after max(now, startAt), not after endAt. Nothing is stored or read:
// now is the caller's clock. Problems are an *InvalidError naming fields.
func (r PreviewRequest) RunTimes(now time.Time) ([]time.Time, error) {
	var p problems
	s := validSchedule(r.Schedule, &p)
	start, end := validBounds(r.StartAt, r.EndAt, &p)
	count := validCount("count", r.Count, &p)
	if err := p.err(); err != nil {
		return nil, err
	}
	var startAt time.Time
	if start != nil {
		startAt = *start
	}
	tt, err := timetable(s, startAt, end)
	if err != nil {
		addCalendarProblems(err, &p)
		return nil, p.err()
	}
	return runTimes(tt, now, count), nil
}

// ValidCount checks a preview's count parameter (nil: the default).
func ValidCount(count *int) (int, error) {
	var p problems
	n := validCount("count", count, &p)
	return n, p.err()
}

func validCount(field string, count *int, p *problems) int {
	if count == nil {
		return DefaultPreviewCount
	}
	if *count < 1 || *count > MaxPreviewCount {
		p.add(field, "must be from 1 to %d", MaxPreviewCount)
		return 0
	}
	return *count
}

// runTimes are the next count slots at or after now (and startAt, which
// the timetable applies), in UTC; never nil, so the answer is a list.
func runTimes(tt calendar.Timetable, now time.Time, count int) []time.Time {
	out := tt.Slots(now, time.Time{}, count)
	if out == nil {
		out = []time.Time{}
	}
	return out
}
