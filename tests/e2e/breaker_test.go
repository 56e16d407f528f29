package e2e

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	https "github.com/sundial-run/sundial/testkit/receiver"
	"github.com/sundial-run/sundial/tests/internal/apiclient"
)

// Circuit breaker and Retry-After (docs/security.md): real services, real
// HTTPS receivers.

// breakerSetup boots a suite whose scheduler opens a breaker after three
// failures in a row, pauses 1 s and then 2 s at most, and whose notifier
// polls often.
func breakerSetup(t *testing.T) *bundle {
	t.Helper()
	b := setup(t, options{without: map[string]bool{"scheduler": true, "notifier": true}})
	b.env["SUNDIAL_SCHEDULER_BREAKER_FAILURES"] = "3"
	b.env["SUNDIAL_SCHEDULER_BREAKER_SPAN"] = "0s"
	b.env["SUNDIAL_SCHEDULER_BREAKER_COOLDOWN"] = "1s"
	b.env["SUNDIAL_SCHEDULER_BREAKER_MAX_COOLDOWN"] = "2s"
	b.env["SUNDIAL_NOTIFIER_POLL_INTERVAL"] = "100ms"
	// These tests count a request for every attempt: the suite's 2 s lease
	// would let a loaded machine, slow to send and to apply a result,
	// deliver a hook again and find its first result stale, a request sent
	// with no attempt recorded.
	b.env["SUNDIAL_LEASE_DURATION"] = "30s"
	b.start(t, "scheduler")
	b.start(t, "notifier")
	return b
}

// attemptedHook is the API's view of a hook, as far as attempts go.
type attemptedHook struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
}

func attemptsOf(t *testing.T, api apiclient.Client, ids []string) (total int, each []attemptedHook) {
	t.Helper()
	for _, id := range ids {
		resp, raw := api.Do(t, http.MethodGet, "/v1/hooks/"+id, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, "GET /v1/hooks/%s: %s", id, raw)
		var out struct{ Data attemptedHook }
		require.NoError(t, json.Unmarshal(raw, &out))
		total += out.Data.Attempts
		each = append(each, out.Data)
	}
	return total, each
}

// endpointView is an endpoint as GET /v1/endpoints lists it.
type endpointView struct {
	Domain              string    `json:"domain"`
	State               string    `json:"state"`
	Cause               string    `json:"cause"`
	Reason              string    `json:"reason"`
	PausedAt            time.Time `json:"pausedAt"`
	PausedUntil         time.Time `json:"pausedUntil"`
	ConsecutiveFailures int       `json:"consecutiveFailures"`
}

func endpointOf(t *testing.T, api apiclient.Client, domain string) (endpointView, bool) {
	t.Helper()
	resp, raw := api.Do(t, http.MethodGet, "/v1/endpoints", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET /v1/endpoints: %s", raw)
	var out struct{ Data []endpointView }
	require.NoError(t, json.Unmarshal(raw, &out))
	for _, e := range out.Data {
		if e.Domain == domain {
			return e, true
		}
	}
	return endpointView{}, false
}

func scheduleAll(t *testing.T, api apiclient.Client, n int, req map[string]any) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = apiclient.Schedule[attemptedHook](t, api, req).ID
	}
	return ids
}

func TestFailingEndpointIsPausedAndItsHooksWaitWithoutAttempts(t *testing.T) {
	t.Parallel()
	b := breakerSetup(t)
	endpoint := newSwitchable(t, http.StatusInternalServerError)
	chat := newInbox(t)
	api, creds := b.newProject(t, "breaker", endpoint.Domain())
	b.setPlan(t, creds.ProjectID, 1_000_000)
	patchProject(t, api, map[string]any{"retryPolicy": map[string]any{
		"minRetries": 15, "delaySecs": 5, "strategy": "fixed"}})
	ch := createChannel(t, api, map[string]any{"name": "ops chat", "type": "chat", "url": chat.URL("/services/T0/B0/x")})
	require.Contains(t, ch.Events, "endpoint.paused", "a new channel receives pauses")

	// A receiver failing every request: three failures open the breaker,
	// and the API says so, with the reason.
	first := scheduleAll(t, api, 3, map[string]any{"path": "/orders/1", "postIn": "1s", "data": map[string]any{}})
	var paused endpointView
	require.Eventually(t, func() bool {
		var ok bool
		paused, ok = endpointOf(t, api, endpoint.Domain())
		return ok && paused.State == "paused"
	}, 30*time.Second, 50*time.Millisecond, "the endpoint is never paused")
	require.Equal(t, "failures", paused.Cause)
	require.Contains(t, paused.Reason, "HTTP 500")
	require.GreaterOrEqual(t, paused.ConsecutiveFailures, 3)
	atPause := int(endpoint.hits.Load())

	// Hooks due meanwhile, on other paths of the domain, wait: only probes
	// reach the receiver (one per pause's end: 1 s, then 2 s).
	later := scheduleAll(t, api, 5, map[string]any{"path": "/orders/2", "postIn": "1s", "data": map[string]any{}})
	require.Eventually(t, func() bool { return int(endpoint.hits.Load()) >= atPause+2 }, 30*time.Second, 20*time.Millisecond,
		"two probes expected")
	probes := int(endpoint.hits.Load()) - atPause
	laterAttempts, _ := attemptsOf(t, api, later)
	require.LessOrEqual(t, laterAttempts, probes, "a waiting hook spends no attempt; only the probes were sent")
	all := append(append([]string(nil), first...), later...)
	// A request's attempt is recorded a little after the receiver counts
	// it (results wait for their batch), so the attempts are read first:
	// never more than the requests counted after them, and level with them
	// once the last is recorded.
	var total, hits int
	require.Eventually(t, func() bool {
		total, _ = attemptsOf(t, api, all)
		hits = int(endpoint.hits.Load())
		return total >= hits
	}, 30*time.Second, 20*time.Millisecond, "a request sent has no attempt recorded")
	require.Equal(t, hits, total, "no attempt recorded without a request sent")

	// The receiver recovers: the next probe closes the breaker and every
	// hook is delivered.
	endpoint.status.Store(http.StatusOK)
	waitAllHooks(t, api, all, "completed", func(h notifiedHook) bool { return h.Status == "completed" })
	total, each := attemptsOf(t, api, all)
	require.Equal(t, int(endpoint.hits.Load()), total, "no attempt recorded without a request sent")
	for _, h := range each[len(first):] {
		require.LessOrEqual(t, h.Attempts, 1+probes, "hook %s", h.ID)
	}
	t.Logf("requests at the pause %d, probes while paused %d, later hooks' attempts while paused %d; in all %d requests, %d attempts",
		atPause, probes, laterAttempts, endpoint.hits.Load(), total)
	require.Eventually(t, func() bool {
		e, _ := endpointOf(t, api, endpoint.Domain())
		return e.State == "active"
	}, 10*time.Second, 50*time.Millisecond)

	// One alert for the pause however many probes failed, and one when it ended.
	sends := waitSends(t, api, ch.ID, 2)
	require.ElementsMatch(t, []string{"endpoint.paused", "endpoint.recovered"}, []string{sends[0].Kind, sends[1].Kind})
	texts := []string{chatText(t, chat.Received()[0]), chatText(t, chat.Received()[1])}
	t.Logf("pause messages:\n%s\n%s", texts[0], texts[1])
	require.Contains(t, texts[0]+texts[1], endpoint.Domain()+" paused")
}

// retryAfterReceiver answers its first request 429 with Retry-After: 2,
// then 200, and records when each request arrived.
type retryAfterReceiver struct {
	srv *https.Receiver
	mu  sync.Mutex
	got []time.Time
}

func newRetryAfterReceiver(t *testing.T) *retryAfterReceiver {
	t.Helper()
	r := &retryAfterReceiver{}
	r.srv = https.StartT(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		r.mu.Lock()
		r.got = append(r.got, time.Now())
		first := len(r.got) == 1
		r.mu.Unlock()
		if first {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	}), https.Options{})
	return r
}

func (r *retryAfterReceiver) arrivals() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.got...)
}

func TestRetryAfterPausesTheEndpointUntilThen(t *testing.T) {
	t.Parallel()
	b := breakerSetup(t)
	rcv := newRetryAfterReceiver(t)
	api, creds := b.newProject(t, "retry-after", rcv.srv.Addr())
	b.setPlan(t, creds.ProjectID, 1_000_000)
	patchProject(t, api, map[string]any{"retryPolicy": map[string]any{
		"minRetries": 5, "delaySecs": 5, "strategy": "fixed"}})

	limited := apiclient.Schedule[attemptedHook](t, api, map[string]any{"path": "/a", "postIn": "1s", "data": map[string]any{}})
	require.Eventually(t, func() bool { return len(rcv.arrivals()) >= 1 }, 30*time.Second, 10*time.Millisecond)
	answered := rcv.arrivals()[0]
	// Due while the endpoint is paused, on another path.
	others := scheduleAll(t, api, 3, map[string]any{"path": "/b", "postIn": "1s", "data": map[string]any{}})

	all := append([]string{limited.ID}, others...)
	waitAllHooks(t, api, all, "completed", func(h notifiedHook) bool { return h.Status == "completed" })
	got := rcv.arrivals()
	require.Len(t, got, 1+len(all), "one 429, then each hook once")
	for _, at := range got[1:] {
		require.GreaterOrEqual(t, at.Sub(answered), 2*time.Second, "no request before the Retry-After")
	}
	total, each := attemptsOf(t, api, all)
	require.Equal(t, len(got), total, "no attempt recorded without a request sent")
	t.Logf("429 at %s; next requests after %v", answered.Format(time.RFC3339Nano), func() []time.Duration {
		var ds []time.Duration
		for _, at := range got[1:] {
			ds = append(ds, at.Sub(answered).Round(time.Millisecond))
		}
		return ds
	}())
	require.Equal(t, 2, each[0].Attempts)
	e, ok := endpointOf(t, api, rcv.srv.Addr())
	require.True(t, ok, "the pause left its trace")
	require.Equal(t, "active", e.State)
}
