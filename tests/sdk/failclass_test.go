package sdk

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sundial "github.com/sundial-run/sundial/sdk"
)

// TestFailureClassesAndPolicyThroughTheSDK: real deliveries through the
// gateway, scheduler and dispatcher, every exchange checked against the
// OpenAPI document. Each failed attempt shows its class on the attempt and
// the hook; the project's failure policy fails a 404 at once and pauses
// the endpoint on a 410, while a class it leaves out (a 500) is retried.
func TestFailureClassesAndPolicyThroughTheSDK(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	ctx := b.ctx
	mux := http.NewServeMux()
	mux.HandleFunc("/missing", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNotFound) })
	mux.HandleFunc("/busy", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	mux.HandleFunc("/gone", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusGone) })
	b.receive(mux)

	p, err := b.client.Project.Get(ctx)
	require.NoError(t, err)
	require.Equal(t, "retry", p.FailurePolicy["410"], "every class is retried by default")
	_, err = b.client.Project.Update(ctx, sundial.ProjectPatch{FailurePolicy: map[string]string{"listener": "pause"}})
	apiErr := requireAPIError(t, err, http.StatusBadRequest, sundial.CodeInvalidRequest)
	require.Contains(t, apiErr.Fields(), "failurePolicy.listener")
	p, err = b.client.Project.Update(ctx, sundial.ProjectPatch{FailurePolicy: map[string]string{"4xx": "fail", "410": "pause"}})
	require.NoError(t, err)
	require.Equal(t, "fail", p.FailurePolicy["4xx"])
	require.Equal(t, "pause", p.FailurePolicy["410"])
	require.Equal(t, "retry", p.FailurePolicy["5xx"])

	schedule := func(path string) string {
		h, err := b.client.Hooks.Schedule(ctx, sundial.ScheduleHookRequest{Path: path, Data: map[string]any{}, PostAt: time.Now()})
		require.NoError(t, err)
		return h.ID
	}
	// The 404 fails at once, with retries left.
	missing := schedule("/missing")
	b.waitStatus(t, missing, sundial.StatusFailed)
	h, err := b.client.Hooks.Get(ctx, missing)
	require.NoError(t, err)
	require.Equal(t, 1, h.Attempts)
	require.Equal(t, "4xx", h.FailureClass)
	as, err := b.client.Hooks.Attempts(ctx, missing)
	require.NoError(t, err)
	require.Len(t, as, 1)
	require.Equal(t, "4xx", as[0].FailureClass)
	require.Equal(t, 404, as[0].StatusCode)

	// The 500 is retried, as before there were policies.
	busy := schedule("/busy")
	b.waitStatus(t, busy, sundial.StatusRetry)
	h, err = b.client.Hooks.Get(ctx, busy)
	require.NoError(t, err)
	require.Equal(t, "5xx", h.FailureClass)

	// The 410 fails the hook and pauses the endpoint until it is resumed.
	gone := schedule("/gone")
	b.waitStatus(t, gone, sundial.StatusFailed)
	h, err = b.client.Hooks.Get(ctx, gone)
	require.NoError(t, err)
	require.Equal(t, "410", h.FailureClass)
	eps, err := b.client.Endpoints.List(ctx)
	require.NoError(t, err)
	require.Len(t, eps, 1)
	require.Equal(t, "paused", eps[0].State)
	require.Equal(t, "failure_policy", eps[0].Cause)
	require.Contains(t, eps[0].Reason, "410")
	ep, err := b.client.Endpoints.Resume(ctx, b.receiver.Addr())
	require.NoError(t, err)
	require.True(t, ep.ResumeRequested)
	require.Eventually(t, func() bool {
		eps, err := b.client.Endpoints.List(ctx)
		require.NoError(t, err)
		return len(eps) == 1 && eps[0].State == "active"
	}, 20*time.Second, 50*time.Millisecond, "the endpoint is resumed")
}
