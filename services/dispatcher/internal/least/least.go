// Package least remembers the least of a series of durations over the
// last two windows of a fixed length: the base that a latency is judged
// against, re-measured within two windows when what it measures moves (a
// receiver in a slower region, a machine given more work), yet not lost
// to one quiet moment. The dispatcher's per-host limits and its delivery
// pool both judge their latencies by it.
package least

import "time"

// Window is the least of the durations noted in the current window and
// the one before. The zero value is not usable: set Length.
type Window struct {
	// Length is how long a window lasts.
	Length time.Duration
	// cur and prev are the least of the current and the previous window
	// (0: none noted), start when the current began.
	cur, prev time.Duration
	start     time.Time
}

// Note counts d, observed at now, starting a new window when the current
// one is over. A duration of 0 counts as a microsecond, so that 0 can
// mean "none".
func (w *Window) Note(d time.Duration, now time.Time) {
	if w.start.IsZero() {
		w.start = now
	}
	if now.Sub(w.start) >= w.Length {
		w.prev, w.cur, w.start = w.cur, 0, now
	}
	if w.cur == 0 || d < w.cur {
		w.cur = max(d, time.Microsecond)
	}
}

// Least is the least duration noted in the current and the previous
// window, 0 if none.
func (w *Window) Least() time.Duration {
	switch {
	case w.prev == 0:
		return w.cur
	case w.cur == 0:
		return w.prev
	}
	return min(w.cur, w.prev)
}
