package retention

import (
	"context"
	"time"
)

// idleFactor paces the deletes by their own cost: after a statement that
// took d, the cleaner waits idleFactor x d when that is longer than Pause,
// so that it keeps the database busy at most 1/(1+idleFactor) of the time,
// a fifth, however slow the machine. A statement slowed by a busy database
// (deliveries at their peak) makes the cleaner wait longer, and the
// deliveries get the time back. On a fast machine a 1,000-hook statement
// takes 10-20 ms and the pause stays Pause (100 ms); on the benchmark's
// slowest, 46 ms at the fixed pause kept the cleaner busy a third of the
// time and raised the steady load's p99 1.6x (docs/benchmarks.md,
// "Retention").
const idleFactor = 4

// pauseAfter is the wait after a statement that took took: Pause, or
// idleFactor x took when longer, at most Interval (a pass's cap does not
// make the cleaner wait longer than a pass that found nothing would); no
// wait at all when Pause is 0, an operator's choice of full speed.
func (c *Cleaner) pauseAfter(took time.Duration) time.Duration {
	if c.cfg.Pause == 0 {
		return 0
	}
	return max(c.cfg.Pause, min(idleFactor*took, c.cfg.Interval))
}

// nextPass is the wait before the pass after p: Interval, or pauseAfter
// its last statement when p reached its cap (more may have expired).
func (c *Cleaner) nextPass(p Pass, took time.Duration, err error) time.Duration {
	if p.More && err == nil {
		return c.pauseAfter(took)
	}
	return c.cfg.Interval
}

// sleepCtx waits d; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
