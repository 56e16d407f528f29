package app_test

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/dispatcher/internal/fixture"
)

// blockingHost is a receiver that holds every request until released and
// counts how many it holds at once.
type blockingHost struct {
	*fixture.Receiver
	release  chan struct{}
	inFlight atomic.Int64
	mu       sync.Mutex
	peak     int64
}

func startBlockingHost(t *testing.T) *blockingHost {
	t.Helper()
	h := &blockingHost{release: make(chan struct{})}
	h.Receiver = fixture.StartReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		h.enter()
		defer h.inFlight.Add(-1)
		select {
		case <-h.release:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusOK)
	})
	return h
}

func (h *blockingHost) enter() {
	n := h.inFlight.Add(1)
	h.mu.Lock()
	h.peak = max(h.peak, n)
	h.mu.Unlock()
}

func (h *blockingHost) maxInFlight() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.peak
}

func TestAppKeepsASlowHostFromStarvingOthers(t *testing.T) {
	t.Parallel()
	b := setup(t, nil) // b.receiver answers at once
	slow := startBlockingHost(t)
	cfg := b.cfg
	cfg.Concurrency = 4
	cfg.HostConcurrency = 2
	// Longer than the test's waits: the slow host must stay blocked, not
	// be freed by the delivery timeout.
	cfg.DeliveryTimeout = 15 * time.Second
	start(t, cfg)
	// Registered after start, so it runs before the app is stopped.
	t.Cleanup(func() { close(slow.release) })

	projectID := fixture.InsertProject(t, b.pool, fixture.Project{ActiveKey: "k"})
	const perHost = 8
	// The slow host's hooks go first: without a per-host bound they would
	// take all four slots.
	for range perHost {
		publishDue(t, b.js, fixture.DueHook(projectID, slow.URL+"/slow", "/slow"))
	}
	slow.WaitFor(t, 2)
	for range perHost {
		publishDue(t, b.js, fixture.DueHook(projectID, b.receiver.URL+"/fast", "/fast"))
	}

	require.Len(t, b.receiver.WaitFor(t, perHost), perHost)
	require.Len(t, slow.Received(), 2, "the slow host got more than its limit")
	require.EqualValues(t, 2, slow.inFlight.Load())
	require.EqualValues(t, 2, slow.maxInFlight())
}
