package calendar

import (
	"fmt"
	"strings"
)

// Problem is one thing wrong with a schedule. Field is the dotted JSON path
// of the field at fault, starting at "schedule" ("schedule.time.hour",
// "schedule.daysOfWeek[2]"), so that a 400 can name it as it was sent.
type Problem struct {
	Field   string
	Message string
}

func (p Problem) String() string {
	return p.Field + ": " + p.Message
}

// InvalidError lists every problem found in a schedule, in field order.
type InvalidError struct {
	Problems []Problem
}

func (e *InvalidError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return strings.Join(parts, "; ")
}

// problems collects what validation finds.
type problems []Problem

func (p *problems) add(field, format string, args ...any) {
	*p = append(*p, Problem{Field: field, Message: fmt.Sprintf(format, args...)})
}

// err is nil when nothing was found, else an *InvalidError.
func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return &InvalidError{Problems: p}
}
