package calendar

import (
	"errors"
	"regexp"
	"strconv"
	"time"
)

// Bounds of a postIn duration (a hook's postIn, a sequence's every).
const (
	MinPostIn = time.Second
	MaxPostIn = 365 * 24 * time.Hour
)

var (
	postInPattern = regexp.MustCompile(`^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$`)
	unitLengths   = [4]time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second}
)

// ParsePostIn reads a postIn duration such as "1d12h" or "90s": days,
// hours, minutes and seconds, each optional but in that order, 1s to 365d.
// The error's text is a message for the client, without the field name.
func ParsePostIn(s string) (time.Duration, error) {
	m := postInPattern.FindStringSubmatch(s)
	if s == "" || m == nil {
		return 0, errors.New(`must be a duration of days, hours, minutes and seconds in that order, e.g. "1d12h" or "90s"`)
	}
	var total time.Duration
	for i, unit := range unitLengths {
		if m[i+1] == "" {
			continue
		}
		n, err := strconv.ParseInt(m[i+1], 10, 64)
		if err != nil || n > int64(MaxPostIn/unit) {
			return 0, errors.New("must be at most 365d")
		}
		total += time.Duration(n) * unit
	}
	switch {
	case total < MinPostIn:
		return 0, errors.New("must be at least 1s")
	case total > MaxPostIn:
		return 0, errors.New("must be at most 365d")
	}
	return total, nil
}
