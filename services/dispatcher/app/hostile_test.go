package app_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/dispatcher/internal/fixture"
)

// resultsByHook returns the attempt results on the results stream by hook
// id, waiting until there are n.
func resultsByHook(t *testing.T, js jetstream.JetStream, n int) map[string]*eventv1.AttemptResult {
	t.Helper()
	ctx := context.Background()
	stream, err := js.Stream(ctx, event.StreamResults)
	require.NoError(t, err)
	out := map[string]*eventv1.AttemptResult{}
	var next uint64 = 1
	require.Eventually(t, func() bool {
		info, err := stream.Info(ctx)
		require.NoError(t, err)
		for ; next <= info.State.LastSeq; next++ {
			msg, err := stream.GetMsg(ctx, next)
			require.NoError(t, err)
			rs, err := event.DecodeResults(msg.Header.Get(event.TypeHeader), msg.Data)
			require.NoError(t, err)
			for _, r := range rs {
				out[r.GetHookId()] = r
			}
		}
		return len(out) >= n
	}, 30*time.Second, 20*time.Millisecond)
	return out
}

func TestAppAHeaderBombFailsOnlyItsOwnHook(t *testing.T) {
	t.Parallel()
	// The outside pass: one hook answered with a 20 MB header, 40 others
	// to the same receiver (which offers HTTP/2) answered 200; over one
	// shared HTTP/2 connection 15 of the 40 were recorded failed.
	b := setup(t, nil)
	const others = 40
	var arrived atomic.Int64
	bombIn := make(chan struct{})
	othersIn := make(chan struct{})
	bombed := make(chan struct{})
	r := fixture.StartHTTP2Receiver(t, func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/bomb" {
			close(bombIn)
			// Once the others in flight beside it have arrived (the host
			// limit lets up to 15 go with it), or a second has passed.
			select {
			case <-othersIn:
			case <-time.After(time.Second):
			}
			w.Header().Set("X-Bomb", strings.Repeat("b", 20<<20))
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			close(bombed)
			return
		}
		if arrived.Add(1) == 15 {
			close(othersIn)
		}
		// Answered after the bomb, while it is on the wire.
		select {
		case <-bombed:
		case <-time.After(2 * time.Second):
		}
		w.WriteHeader(http.StatusOK)
	})
	start(t, b.cfg)

	projectID := fixture.InsertProject(t, b.pool, fixture.Project{ActiveKey: "whsec_app"})
	bomb := fixture.DueHook(projectID, r.URL+"/bomb", "/bomb")
	publishDue(t, b.js, bomb)
	// The others only once the bomb is on its way: published together,
	// they could take the flow's 16 slots first, and the bomb, finding
	// none within its wait, would be deferred (seen once in CI).
	select {
	case <-bombIn:
	case <-time.After(10 * time.Second):
		t.Fatal("the bomb's delivery never reached the receiver")
	}
	for range others {
		publishDue(t, b.js, fixture.DueHook(projectID, r.URL+"/hooks", "/hooks"))
	}

	// Each hook has a result: delivered, or deferred unsent (the flow's
	// limit, 16 at first, and its slow answers defer the rest: no
	// scheduler here hands them out again). A deferral is no attempt.
	results := resultsByHook(t, b.js, others+1)
	require.Len(t, results, others+1)
	failed, succeeded := 0, 0
	for id, res := range results {
		if id == bomb.GetHookId() {
			continue
		}
		switch res.GetOutcome() {
		case eventv1.Outcome_OUTCOME_SUCCESS:
			succeeded++
		case eventv1.Outcome_OUTCOME_DEFERRED:
		default:
			failed++
			t.Logf("answered 200, recorded %s: %s", res.GetOutcome(), res.GetError())
		}
	}
	t.Logf("header bomb through the dispatcher: %d of %d other hooks delivered beside it, %d recorded failed", succeeded, others, failed)
	require.Zero(t, failed)
	require.Positive(t, succeeded, "hooks were in flight beside the bomb")
	require.Equal(t, int64(succeeded), arrived.Load(), "every delivered hook reached the receiver, no deferred one did")
	require.Equal(t, eventv1.Outcome_OUTCOME_FAILURE, results[bomb.GetHookId()].GetOutcome())
	require.Equal(t, "response headers larger than 64 KiB", results[bomb.GetHookId()].GetError())
}
