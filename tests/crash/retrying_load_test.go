package crash

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// retryingLoad creates hooks due soon from several clients, each retrying
// a create answered 503 with the same Idempotency-Key until it is answered
// 201.
type retryingLoad struct {
	quit     chan struct{}
	quitOnce sync.Once
	wg       sync.WaitGroup

	mu    sync.Mutex
	stats loadStats
}

// loadStats is what the clients saw.
type loadStats struct {
	// created maps each hook answered 201 to when its last try was sent
	// and when it was answered.
	created    map[string][2]time.Time
	refused    int
	maxLatency time.Duration
	errs       []string
}

// startRetryingLoad starts `clients` clients, each sending a create of a
// hook due soon every `every`, until stopped or the test ends.
func (b *bundle) startRetryingLoad(t *testing.T, clients int, every time.Duration) *retryingLoad {
	return b.startRetryingLoadOf(t, clients, every, func(int) map[string]any { return dueSoon() })
}

// startRetryingLoadOf is startRetryingLoad whose clients send req(n) as
// their n-th create (n from 1).
func (b *bundle) startRetryingLoadOf(t *testing.T, clients int, every time.Duration, req func(n int) map[string]any) *retryingLoad {
	l := &retryingLoad{quit: make(chan struct{}), stats: loadStats{created: map[string][2]time.Time{}}}
	for c := range clients {
		l.wg.Go(func() { l.client(b, c, every, req) })
	}
	t.Cleanup(l.end)
	return l
}

// end stops the clients and waits for them; it may be called again.
func (l *retryingLoad) end() {
	l.quitOnce.Do(func() { close(l.quit) })
	l.wg.Wait()
}

func (l *retryingLoad) client(b *bundle, c int, every time.Duration, newReq func(n int) map[string]any) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	var (
		req map[string]any
		key string
	)
	// A stop while a create is still unanswered keeps retrying it (for a
	// bounded time): its first try may have committed, and only its
	// answer tells whether the projects hold a hook the test expects.
	var stopAt <-chan time.Time
	for n := 0; ; {
		select {
		case <-l.quit:
			if key == "" {
				return
			}
			if stopAt == nil {
				stopAt = time.After(30 * time.Second)
			}
		default:
		}
		select {
		case <-stopAt:
			return
		case <-tick.C:
		}
		if key == "" {
			n++
			req, key = newReq(n), fmt.Sprintf("retry-%d-%d", c, n)
		}
		sent := time.Now()
		resp, raw, err := b.api(0).SendHeader(http.MethodPost, "/v1/hooks", req, http.Header{"Idempotency-Key": {key}})
		if l.record(b, sent, resp, raw, err) {
			key = ""
		}
	}
}

// record notes one answer and reports whether the create is done with
// (answered 201, or failed in a way that retrying would not mend).
func (l *retryingLoad) record(b *bundle, sent time.Time, resp *http.Response, raw []byte, err error) bool {
	answered := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stats.maxLatency = max(l.stats.maxLatency, answered.Sub(sent))
	switch {
	case err != nil:
		l.stats.errs = append(l.stats.errs, err.Error())
		return true
	case resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "":
		l.stats.refused++
		return false
	case resp.StatusCode != http.StatusCreated:
		l.stats.errs = append(l.stats.errs, fmt.Sprintf("POST /v1/hooks answered %d (Retry-After %q): %s",
			resp.StatusCode, resp.Header.Get("Retry-After"), raw))
		return true
	}
	var out struct{ Data hook }
	if err := json.Unmarshal(raw, &out); err != nil || out.Data.ID == "" {
		l.stats.errs = append(l.stats.errs, fmt.Sprintf("201 without a hook: %s", raw))
		return true
	}
	b.accept(out.Data)
	l.stats.created[out.Data.ID] = [2]time.Time{sent, answered}
	return true
}

func (l *retryingLoad) snapshot() loadStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

// stop ends the load and returns what the clients saw.
func (l *retryingLoad) stop(t *testing.T) loadStats {
	t.Helper()
	l.end()
	return l.snapshot()
}

// answeredBefore lists the hooks answered 201 before at.
func (s loadStats) answeredBefore(at time.Time) map[string]bool {
	ids := map[string]bool{}
	for id, times := range s.created {
		if times[1].Before(at) {
			ids[id] = true
		}
	}
	return ids
}

// createdAfter lists the hooks whose answered try was sent after at.
func (s loadStats) createdAfter(at time.Time) map[string]bool {
	ids := map[string]bool{}
	for id, times := range s.created {
		if times[0].After(at) {
			ids[id] = true
		}
	}
	return ids
}

// firstCreatedAfter is when the first create sent after at was answered
// 201.
func (s loadStats) firstCreatedAfter(at time.Time) (time.Time, bool) {
	var first time.Time
	for _, times := range s.created {
		if times[0].After(at) && (first.IsZero() || times[1].Before(first)) {
			first = times[1]
		}
	}
	return first, !first.IsZero()
}
