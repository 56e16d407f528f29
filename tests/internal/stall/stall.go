// Package stall records when a test process was kept from running: a
// machine so loaded that a process waits whole seconds for a processor.
// Services stalled that long look dead to their peers (an AckWait passes
// without the in-progress acknowledgements that would restart it), and
// at-least-once delivery then delivers again what they held. Tests use it
// to tell such duplicates from ones a defect caused.
package stall

import (
	"sync"
	"testing"
	"time"
)

// tick is how often the watch asks to run; a wake-up later than that by
// at least Watch's threshold is a stall.
const tick = 20 * time.Millisecond

// A Stall is a time the process did not run: from At, for Length.
type Stall struct {
	At     time.Time
	Length time.Duration
}

// End is when the stall ended.
func (s Stall) End() time.Time { return s.At.Add(s.Length) }

// Watch records the stalls of at least its threshold until the test ends.
type Watch struct {
	threshold time.Duration
	mu        sync.Mutex
	stalls    []Stall
}

// Start watches for stalls of at least threshold until t ends.
func Start(t testing.TB, threshold time.Duration) *Watch {
	w := &Watch{threshold: threshold}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { w.run(done) })
	t.Cleanup(func() {
		close(done)
		wg.Wait()
	})
	return w
}

func (w *Watch) run(done <-chan struct{}) {
	t := time.NewTimer(tick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			// The timer's own time is when the runtime noticed it, which
			// a stalled process does late too: the wake-up is now.
			now := time.Now()
			if late := now.Sub(last) - tick; late >= w.threshold {
				w.mu.Lock()
				w.stalls = append(w.stalls, Stall{At: last.Add(tick), Length: late})
				w.mu.Unlock()
			}
			last = time.Now()
			t.Reset(tick)
		}
	}
}

// Between returns the stalls that overlap [from, to].
func (w *Watch) Between(from, to time.Time) []Stall {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Stall
	for _, s := range w.stalls {
		if s.At.Before(to) && s.End().After(from) {
			out = append(out, s)
		}
	}
	return out
}

// Longest is the longest stall seen so far, 0 if none.
func (w *Watch) Longest() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var longest time.Duration
	for _, s := range w.stalls {
		longest = max(longest, s.Length)
	}
	return longest
}
