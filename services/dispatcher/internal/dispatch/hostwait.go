package dispatch

import (
	"sync"
	"time"

	"github.com/google/uuid"
)

// hostWaits are the waits receivers asked this dispatcher for with
// Retry-After (a 429 or 503). The scheduler pauses the endpoint when it
// records that answer, but hooks it handed out before then would still be
// sent early; so the dispatcher that read the answer defers its own next
// hooks to that host until the wait is over. Keyed as the scheduler's pause
// is, by project and host.
type hostWaits struct {
	mu    sync.Mutex
	until map[hostWaitKey]time.Time
}

type hostWaitKey struct {
	project uuid.UUID
	host    string
}

// maxHostWaits is how many waits are kept before the ones over are
// dropped: the map holds one entry per host that asked for a wait still
// running, and an expired one is forgotten at the next insert past this.
const maxHostWaits = 1024

// left is how much of a wait for host remains at now; 0 when none.
func (w *hostWaits) left(project uuid.UUID, host string, now time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	until, ok := w.until[hostWaitKey{project, host}]
	if !ok || !now.Before(until) {
		return 0
	}
	return until.Sub(now)
}

// hold records that host asked to be left alone until until.
func (w *hostWaits) hold(project uuid.UUID, host string, until time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.until == nil {
		w.until = map[hostWaitKey]time.Time{}
	}
	if len(w.until) >= maxHostWaits {
		now := time.Now()
		for k, u := range w.until {
			if !now.Before(u) {
				delete(w.until, k)
			}
		}
	}
	k := hostWaitKey{project, host}
	if until.After(w.until[k]) {
		w.until[k] = until
	}
}
