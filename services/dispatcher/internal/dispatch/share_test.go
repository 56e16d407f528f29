package dispatch_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/dispatcher/internal/dispatch"
	"github.com/sundial-run/sundial/services/dispatcher/internal/fixture"
	"github.com/sundial-run/sundial/services/dispatcher/internal/hostlimit"
)

// TestASlowProjectLeavesAPlaceForTheOthers: one project's receiver holds
// every delivery, and the project has more hooks than the dispatcher has
// slots and slow room. It gets its share of the pool (ProjectShare while
// it is alone) and its other hooks are deferred, not waited for; a hook of
// another project then finds a place at once, in the reserve no project
// alone takes, instead of waiting for the pool and being deferred in turn.
func TestASlowProjectLeavesAPlaceForTheOthers(t *testing.T) {
	t.Parallel()
	// One slot: its share (the slow room) stays under a new flow's host
	// limit (hostlimit.DefaultInitial), so that the share, not the host,
	// is what defers the slow project's other hooks.
	const concurrency = 1
	share := dispatch.ProjectShare(concurrency)
	require.Less(t, share, hostlimit.DefaultInitial)
	release := make(chan struct{})
	var held atomic.Int32
	b := setup(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			held.Add(1)
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		w.WriteHeader(http.StatusOK)
	})
	t.Cleanup(func() { close(release) })
	h := b.handlerWith(t, dispatch.Config{Concurrency: concurrency})
	slow := fixture.InsertProject(t, b.pool, fixture.Project{ActiveKey: "k"})
	other := fixture.InsertProject(t, b.pool, fixture.Project{ActiveKey: "k"})

	var wg sync.WaitGroup
	for range share + 4 {
		due := fixture.DueHook(slow, b.receiver.URL+"/slow", "/slow")
		wg.Go(func() {
			_ = h.Handle(context.Background(), fixture.Due(t, due))
		})
	}
	require.Eventually(t, func() bool { return held.Load() == int32(share) }, 10*time.Second, 10*time.Millisecond,
		"the slow project never had its share in flight")

	due := fixture.DueHook(other, b.receiver.URL+"/fast", "/fast")
	start := time.Now()
	require.NoError(t, b.handle(t, h, due))
	took := time.Since(start)
	fast := 0
	for _, r := range b.receiver.Received() {
		if r.Path == "/fast" {
			fast++
		}
	}
	require.Equal(t, 1, fast, "the other project's hook was delivered, not deferred")
	require.Less(t, took, time.Second, "the other project's hook waited for the slow one's deliveries")
	require.Equal(t, int32(share), held.Load(), "the slow project's hooks beyond its share were deferred, not sent")
	t.Logf("the other project's hook delivered in %s beside %d held deliveries", took, held.Load())
}
