package sdk

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sundial "github.com/sundial-run/sundial/sdk"
)

// TestKeysThroughTheSDK: a key's pending hook is replaced; while the real
// scheduler and dispatcher have delivered it and it waits for its async
// answer, scheduling the key is a 409 naming key; once it has completed,
// the key schedules a new hook beside it.
func TestKeysThroughTheSDK(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	next := b.accepting(t)
	hooks := b.client.Hooks
	const key = "reminder:user-42"

	later, err := hooks.Schedule(b.ctx, sundial.ScheduleHookRequest{Path: "/later", Data: map[string]any{}, PostIn: "1h", Key: key})
	require.NoError(t, err)
	require.Equal(t, key, later.Key)
	now, err := hooks.Schedule(b.ctx, sundial.ScheduleHookRequest{Path: "/now", Data: map[string]any{}, PostAt: time.Now(), Key: key})
	require.NoError(t, err)
	_, err = hooks.Get(b.ctx, later.ID)
	_ = requireAPIError(t, err, http.StatusNotFound, sundial.CodeNotFound)

	d := next()
	require.Equal(t, now.ID, d.ID, "the replacement was delivered")
	require.Eventually(t, func() bool {
		h, err := hooks.GetByKey(b.ctx, key)
		require.NoError(t, err)
		return h.Attempts == 1
	}, 20*time.Second, 50*time.Millisecond)

	_, err = hooks.Schedule(b.ctx, sundial.ScheduleHookRequest{Path: "/again", Data: map[string]any{}, PostIn: "1h", Key: key})
	apiErr := requireAPIError(t, err, http.StatusConflict, sundial.CodeConflict)
	require.Equal(t, "key", apiErr.Details[0].Field)

	_, err = sundial.NewClient("", sundial.WithHTTPClient(b.httpClient)).Async.Ack(b.ctx, d.AckURL, nil)
	require.NoError(t, err)
	b.waitStatus(t, now.ID, sundial.StatusCompleted)
	anew, err := hooks.Schedule(b.ctx, sundial.ScheduleHookRequest{Path: "/next", Data: map[string]any{}, PostIn: "1h", Key: key})
	require.NoError(t, err)
	byKey, err := hooks.GetByKey(b.ctx, key)
	require.NoError(t, err)
	require.Equal(t, anew.ID, byKey.ID)
	done, err := hooks.Get(b.ctx, now.ID)
	require.NoError(t, err)
	require.Equal(t, key, done.Key, "the finished hook keeps its key")

	require.NoError(t, hooks.DeleteByKey(b.ctx, key))
	byKey, err = hooks.GetByKey(b.ctx, key)
	require.NoError(t, err)
	require.Equal(t, now.ID, byKey.ID, "with the unfinished one gone, the newest finished one")
	require.ErrorIs(t, hooks.DeleteByKey(b.ctx, ""), sundial.ErrMissingID)
}

func TestTagsThroughTheSDK(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	hooks := b.client.Hooks
	both, err := hooks.Schedule(b.ctx, sundial.ScheduleHookRequest{Path: "/both", Data: map[string]any{}, PostIn: "1h",
		Tags: []string{"campaign:spring", "user-42"}})
	require.NoError(t, err)
	require.Equal(t, []string{"campaign:spring", "user-42"}, both.Tags)
	one, err := hooks.Schedule(b.ctx, sundial.ScheduleHookRequest{Path: "/one", Data: map[string]any{}, PostIn: "1h",
		Tags: []string{"campaign:spring"}})
	require.NoError(t, err)
	_, err = hooks.Schedule(b.ctx, sundial.ScheduleHookRequest{Path: "/none", Data: map[string]any{}, PostIn: "1h"})
	require.NoError(t, err)

	page, err := hooks.List(b.ctx, sundial.ListHooksParams{Tags: []string{"campaign:spring"}, SortOrder: "ASC"})
	require.NoError(t, err)
	require.Len(t, page.Data, 2)
	require.Equal(t, both.ID, page.Data[0].ID)
	require.Equal(t, one.ID, page.Data[1].ID)
	page, err = hooks.List(b.ctx, sundial.ListHooksParams{Tags: []string{"user-42", "campaign:spring"}})
	require.NoError(t, err)
	require.Len(t, page.Data, 1)
	require.Equal(t, both.ID, page.Data[0].ID)

	now := time.Now()
	res, err := hooks.BulkCancel(b.ctx, sundial.BulkActionRequest{StartTime: now, EndTime: now.Add(2 * time.Hour), Limit: 100,
		Tags: []string{"user-42"}})
	require.NoError(t, err)
	require.Equal(t, 1, res.Affected, "the hook with the tag")
	_, err = hooks.Get(b.ctx, both.ID)
	_ = requireAPIError(t, err, http.StatusNotFound, sundial.CodeNotFound)
	_, err = hooks.Get(b.ctx, one.ID)
	require.NoError(t, err)

	_, err = hooks.Schedule(b.ctx, sundial.ScheduleHookRequest{Path: "/bad", Data: map[string]any{}, PostIn: "1h", Tags: []string{"no spaces"}})
	apiErr := requireAPIError(t, err, http.StatusBadRequest, sundial.CodeInvalidRequest)
	require.Equal(t, []string{"tags[0]"}, apiErr.Fields())
}
