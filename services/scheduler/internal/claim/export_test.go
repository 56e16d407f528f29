package claim

import "time"

// SkewClock makes w's local clock run skew ahead of the real one (and of
// the database's); call it before Run.
func (w *Window) SkewClock(skew time.Duration) {
	w.now = func() time.Time { return time.Now().Add(skew) }
}
