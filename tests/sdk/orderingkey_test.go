package sdk

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sundial "github.com/sundial-run/sundial/sdk"
)

// TestOrderingKeysThroughTheSDK: with the real scheduler and dispatcher, a
// key's hooks arrive one at a time in their order; under OrderingHold one
// that fails for good holds its key, which ListHeld shows, and the key's
// next hook arrives only once Resume has freed it.
func TestOrderingKeysThroughTheSDK(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	var (
		mu      sync.Mutex
		arrived []string
	)
	b.receive(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrived = append(arrived, r.URL.Path)
		mu.Unlock()
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	seen := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(arrived)
	}
	p, err := b.client.Project.Update(b.ctx, sundial.ProjectPatch{
		OrderingOnFailure: sundial.Ptr(sundial.OrderingHold),
		// A 400 fails the hook at once, instead of after its retries.
		FailurePolicy: map[string]string{"4xx": "fail"},
	})
	require.NoError(t, err)
	require.Equal(t, sundial.OrderingHold, p.OrderingOnFailure)

	// One postAt: the batch's order decides.
	const key = "account/42"
	at := time.Now()
	hooks, err := b.client.Hooks.ScheduleBatch(b.ctx, sundial.ScheduleHooksRequest{Hooks: []sundial.ScheduleHookRequest{
		{Path: "/first", Data: map[string]any{}, PostAt: at, OrderingKey: key},
		{Path: "/fail", Data: map[string]any{}, PostAt: at, OrderingKey: key},
		{Path: "/after", Data: map[string]any{}, PostAt: at, OrderingKey: key},
	}})
	require.NoError(t, err)
	for _, h := range hooks {
		require.Equal(t, key, h.OrderingKey)
	}

	b.waitStatus(t, hooks[1].ID, sundial.StatusFailed)
	held, err := b.client.OrderingKeys.Get(b.ctx, key)
	require.NoError(t, err)
	require.Equal(t, sundial.OrderingKey{Key: key, HeadHookID: &hooks[1].ID, Held: true, Unfinished: 1}, held)
	require.Equal(t, []string{"/first", "/fail"}, seen(), "in order, and nothing after the failed hook")
	page, err := b.client.OrderingKeys.ListHeld(b.ctx, sundial.ListOrderingKeysParams{})
	require.NoError(t, err)
	require.Equal(t, []sundial.OrderingKey{held}, page.Data)

	resumed, err := b.client.OrderingKeys.Resume(b.ctx, key)
	require.NoError(t, err)
	require.False(t, resumed.Held)
	b.waitStatus(t, hooks[2].ID, sundial.StatusCompleted)
	require.Equal(t, []string{"/first", "/fail", "/after"}, seen())

	_, err = b.client.OrderingKeys.Resume(b.ctx, key)
	_ = requireAPIError(t, err, http.StatusConflict, sundial.CodeConflict)
	_, err = b.client.OrderingKeys.Get(b.ctx, "no such key")
	_ = requireAPIError(t, err, http.StatusNotFound, sundial.CodeNotFound)
}

// TestListAKeysHooksThroughTheSDK: ListHooksParams.OrderingKey lists the
// key's hooks, none of another key or of none, and pages through them
// (All) in either sort, with a status filter; a key no hook can have is a
// 400 naming orderingKey.
func TestListAKeysHooksThroughTheSDK(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	const key = "account/42 100%"
	at := time.Now().Add(time.Hour)
	hooks, err := b.client.Hooks.ScheduleBatch(b.ctx, sundial.ScheduleHooksRequest{Hooks: []sundial.ScheduleHookRequest{
		{Path: "/a", Data: map[string]any{}, PostAt: at.Add(3 * time.Minute), OrderingKey: key},
		{Path: "/other", Data: map[string]any{}, PostAt: at, OrderingKey: "account/7"},
		{Path: "/b", Data: map[string]any{}, PostAt: at.Add(time.Minute), OrderingKey: key},
		{Path: "/none", Data: map[string]any{}, PostAt: at},
		{Path: "/c", Data: map[string]any{}, PostAt: at.Add(2 * time.Minute), OrderingKey: key},
	}})
	require.NoError(t, err)
	paths := func(p sundial.ListHooksParams) []string {
		t.Helper()
		var got []string
		for h, err := range b.client.Hooks.All(b.ctx, p) {
			require.NoError(t, err)
			require.Equal(t, key, h.OrderingKey)
			got = append(got, h.Path)
		}
		return got
	}
	require.Equal(t, []string{"/b", "/c", "/a"}, paths(sundial.ListHooksParams{OrderingKey: key, Limit: 2, SortBy: "postAt", SortOrder: "ASC"}))
	require.ElementsMatch(t, []string{"/a", "/b", "/c"}, paths(sundial.ListHooksParams{OrderingKey: key, Limit: 1}))
	require.Equal(t, []string{"/a", "/c"}, paths(sundial.ListHooksParams{OrderingKey: key, Status: sundial.StatusPending,
		SortBy: "postAt", PostAtAfter: at.Add(90 * time.Second)}))

	page, err := b.client.Hooks.List(b.ctx, sundial.ListHooksParams{OrderingKey: key, Limit: 2})
	require.NoError(t, err)
	require.Len(t, page.Data, 2)
	require.EqualValues(t, 3, page.Meta.TotalItems)
	require.NotEmpty(t, page.Meta.NextCursor)
	page, err = b.client.Hooks.List(b.ctx, sundial.ListHooksParams{OrderingKey: "account/7"})
	require.NoError(t, err)
	require.Len(t, page.Data, 1)
	require.Equal(t, hooks[1].ID, page.Data[0].ID)

	_, err = b.client.Hooks.List(b.ctx, sundial.ListHooksParams{OrderingKey: strings.Repeat("k", 256)})
	e := requireAPIError(t, err, http.StatusBadRequest, sundial.CodeInvalidRequest)
	require.Equal(t, []string{"orderingKey"}, e.Fields())
}
