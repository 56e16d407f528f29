package calendar

import (
	"fmt"
	"strings"
	"time"
)

// Describe says the schedule in words, as the dashboard shows it: "Every
// 15m", "Every hour at :30, UTC", "Daily at 09:00, Europe/Paris", "Weekdays at
// 09:00, Europe/Paris", "Mondays and Thursdays at 18:30, UTC", "Monthly on
// the 1st, 15th and last day at 06:00, Asia/Tokyo".
func (s Schedule) Describe() string {
	if s.every > 0 {
		return "Every " + *s.spec.Every
	}
	at := fmt.Sprintf("%02d:%02d, %s", s.hour, s.minute, s.loc)
	switch s.frequency {
	case Hourly:
		return fmt.Sprintf("Every hour at :%02d, %s", s.minute, s.loc)
	case Daily:
		return "Daily at " + at
	case Weekly:
		return s.weekdaysInWords() + " at " + at
	default:
		return "Monthly on the " + s.monthDaysInWords() + " at " + at
	}
}

// weekdayNames are the days' names, indexed by time.Weekday.
var weekdayNames = [7]string{"Sundays", "Mondays", "Tuesdays", "Wednesdays", "Thursdays", "Fridays", "Saturdays"}

func (s Schedule) weekdaysInWords() string {
	var days []string
	n := 0
	for d := time.Monday; ; d = (d + 1) % 7 { // Monday first, Sunday last
		if s.weekdays[d] {
			days = append(days, weekdayNames[d])
			n++
		}
		if d == time.Sunday {
			break
		}
	}
	weekdays := s.weekdays[time.Monday] && s.weekdays[time.Tuesday] && s.weekdays[time.Wednesday] &&
		s.weekdays[time.Thursday] && s.weekdays[time.Friday]
	weekend := s.weekdays[time.Saturday] && s.weekdays[time.Sunday]
	switch {
	case n == 7:
		return "Every day"
	case n == 5 && weekdays:
		return "Weekdays"
	case n == 2 && weekend:
		return "Weekends"
	}
	return inWords(days)
}

func (s Schedule) monthDaysInWords() string {
	var days []string
	for d := 1; d <= 31; d++ {
		if s.monthDays[d] {
			days = append(days, ordinal(d))
		}
	}
	if s.lastDay {
		days = append(days, "last")
	}
	return inWords(days) + " day"
}

// inWords joins "a", "b" and "c" as "a, b and c".
func inWords(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}
