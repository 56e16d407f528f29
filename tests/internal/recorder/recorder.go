// Package recorder is the crash suites' HTTPS receiver: it records every
// arrival for the checker (tests/internal/checker) and answers 200, and can
// hold the first requests until released, so that deliveries are in flight
// when a process dies.
package recorder

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	https "github.com/sundial-run/sundial/testkit/receiver"
	"github.com/sundial-run/sundial/tests/internal/checker"
)

// Receiver is an HTTPS endpoint that records every arrival for the checker
// and answers 200. It can hold the first `hold` requests until released, so
// that deliveries are in flight when a process dies.
type Receiver struct {
	srv    *https.Receiver
	CAFile string

	hold    int
	held    chan struct{} // closed once `hold` requests are waiting
	release chan struct{} // closed to let the held requests answer

	mu       sync.Mutex
	arrivals []checker.Arrival
	ids      map[string]bool
	blocked  []string
	released bool
}

// Start runs a Receiver, stopped when t ends, that holds the first hold
// requests (none when 0).
func Start(t *testing.T, hold int) *Receiver {
	t.Helper()
	r := &Receiver{
		hold:    hold,
		held:    make(chan struct{}),
		release: make(chan struct{}),
		ids:     map[string]bool{},
	}
	if hold == 0 {
		close(r.held)
	}
	r.srv = https.StartT(t, http.HandlerFunc(r.serve), https.Options{})
	// Shutting down waits for running handlers: release the held ones first.
	t.Cleanup(r.Release)
	r.CAFile = https.CAFile(t)
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	// The clock is read first: anything later would only hide an early
	// delivery.
	at := time.Now()
	raw, _ := io.ReadAll(req.Body)
	var body struct {
		PostAt time.Time `json:"postAt"`
	}
	_ = json.Unmarshal(raw, &body) // a zero PostAt shows in the checker
	ts, _ := strconv.ParseInt(req.Header.Get("Sundial-Timestamp"), 10, 64)
	id := req.Header.Get("Sundial-Id")

	r.mu.Lock()
	r.arrivals = append(r.arrivals, checker.Arrival{ID: id, At: at, PostAt: body.PostAt, Timestamp: ts})
	r.ids[id] = true
	block := !r.released && len(r.blocked) < r.hold
	if block {
		r.blocked = append(r.blocked, id)
		if len(r.blocked) == r.hold {
			close(r.held)
		}
	}
	r.mu.Unlock()
	if block {
		<-r.release
	}
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, `{"ok":true}`)
}

// Held is closed once `hold` requests are waiting.
func (r *Receiver) Held() <-chan struct{} { return r.held }

// Release lets the held requests answer (to a caller that may be gone);
// from then on none is held, so Blocked is the requests held until then.
func (r *Receiver) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.released {
		r.released = true
		close(r.release)
	}
}

// Domain is the receiver's host:port, the project's domain.
func (r *Receiver) Domain() string { return r.srv.Addr() }

// Arrivals returns a copy of every arrival so far.
func (r *Receiver) Arrivals() []checker.Arrival {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]checker.Arrival(nil), r.arrivals...)
}

// Distinct is the number of different ids that arrived.
func (r *Receiver) Distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ids)
}

// Blocked returns the ids of the held requests.
func (r *Receiver) Blocked() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.blocked...)
}

// Counts returns how many times each id arrived.
func (r *Receiver) Counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.ids))
	for _, a := range r.arrivals {
		out[a.ID]++
	}
	return out
}
