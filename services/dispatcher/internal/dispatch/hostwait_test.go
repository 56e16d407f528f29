package dispatch_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/dispatcher/internal/fixture"
)

// TestHandleDefersAHostsHooksUntilItsRetryAfter: a 429 with Retry-After
// makes the dispatcher that read it defer its next hook to that host,
// without a request, for what is left of the wait; another project's hook
// to the same host is sent.
func TestHandleDefersAHostsHooksUntilItsRetryAfter(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	b := setup(t, func(w http.ResponseWriter, _ *http.Request) {
		if requests.Add(1) == 1 {
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	first := b.dueHook(t, fixture.Project{ActiveKey: "k"})
	require.NoError(t, b.handle(t, b.handler, first))
	res := fixture.LastResult(t, b.js)
	require.NotNil(t, res)
	require.EqualValues(t, http.StatusTooManyRequests, res.GetStatusCode())
	require.Equal(t, 3*time.Second, res.GetRetryAfter().AsDuration())

	next := fixture.DueHook(uuid.MustParse(first.GetProjectId()), first.GetUrl(), first.GetPath())
	require.NoError(t, b.handle(t, b.handler, next))
	require.EqualValues(t, 1, requests.Load(), "no request to the host during its Retry-After")
	deferred := fixture.LastResult(t, b.js)
	requireDeferred(t, next, deferred.AttemptResult)
	require.Equal(t, next.GetHookId(), deferred.GetHookId())
	require.Greater(t, deferred.GetDeferFor().AsDuration(), time.Second, "deferred for what is left of the wait")
	require.LessOrEqual(t, deferred.GetDeferFor().AsDuration(), 3*time.Second)

	other := b.dueHook(t, fixture.Project{ActiveKey: "k2"})
	require.NoError(t, b.handle(t, b.handler, other))
	require.EqualValues(t, 2, requests.Load(), "another project's wait is its own")
	require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, fixture.LastResult(t, b.js).GetOutcome())
}
