package retry

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Retry-After (RFC 9110, 10.2.3): a receiver answering 429 or 503 may say
// how long to wait, in seconds or as an HTTP-date. The dispatcher reads it
// (ParseRetryAfter) and reports it in the AttemptResult; the scheduler pauses
// the endpoint until then and retries the hook no sooner
// (docs/security.md, "Circuit breaker and Retry-After"). Both bound it with
// BoundRetryAfter: a receiver cannot stop its deliveries for longer than
// MaxRetryAfter with one answer, nor make Sundial spin with a zero.
const (
	MinRetryAfter = time.Second
	MaxRetryAfter = time.Hour
)

// RetryAfterStatus reports whether an answer's status is one whose
// Retry-After Sundial honours: 429 Too Many Requests and 503 Service
// Unavailable.
func RetryAfterStatus(code int) bool {
	return code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable
}

// ParseRetryAfter reads a Retry-After value received at now: delay-seconds
// or an HTTP-date. It returns the wait, bounded by BoundRetryAfter, and
// false when the value is missing or unreadable.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			// More digits than an int64: as long as the bound.
			return MaxRetryAfter, true
		}
		if n > int64(MaxRetryAfter/time.Second) {
			return MaxRetryAfter, true
		}
		return BoundRetryAfter(time.Duration(n) * time.Second), true
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return BoundRetryAfter(at.Sub(now)), true
}

// BoundRetryAfter brings a wait into [MinRetryAfter, MaxRetryAfter].
func BoundRetryAfter(d time.Duration) time.Duration {
	return min(max(d, MinRetryAfter), MaxRetryAfter)
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
