package sdk

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sundial "github.com/sundial-run/sundial/sdk"
)

// TestReplayDryRunAndEditThroughTheSDK: a replay's dry run names the hook
// and creates nothing; the replay with an edit delivers the new data to the
// new path, and the original stays as it was.
func TestReplayDryRunAndEditThroughTheSDK(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	keys, err := b.client.SigningKeys.List(b.ctx)
	require.NoError(t, err)
	got := make(chan *sundial.Delivery, 4)
	b.receive(sundial.NewHandler([]string{keys[0].Key}, func(_ context.Context, d *sundial.Delivery) sundial.Result {
		got <- d
		return sundial.Ack()
	}))
	next := func() *sundial.Delivery {
		t.Helper()
		select {
		case d := <-got:
			return d
		case <-time.After(20 * time.Second):
			t.Fatal("no delivery reached the handler")
			return nil
		}
	}
	hooks := b.client.Hooks

	h, err := hooks.Schedule(b.ctx, sundial.ScheduleHookRequest{Path: "/orders", Data: map[string]any{"v": 1}, PostAt: time.Now()})
	require.NoError(t, err)
	require.Equal(t, "/orders", next().Path)
	b.waitStatus(t, h.ID, sundial.StatusCompleted)

	sel := sundial.BulkActionRequest{HookIDs: []string{h.ID}, DryRun: true,
		Edit: &sundial.HookEdit{Path: "/orders/v2", Data: map[string]any{"v": 2}}}
	dry, err := hooks.BulkReplay(b.ctx, sel)
	require.NoError(t, err)
	require.True(t, dry.DryRun)
	require.Equal(t, 1, dry.Affected)
	require.False(t, dry.QuotaRefused)
	require.Len(t, dry.Sample, 1)
	require.Equal(t, h.ID, dry.Sample[0].ID)
	require.Equal(t, "/orders", dry.Sample[0].Path)
	require.Equal(t, sundial.StatusCompleted, dry.Sample[0].Status)
	require.True(t, h.PostAt.Equal(dry.Sample[0].PostAt))
	page, err := hooks.List(b.ctx, sundial.ListHooksParams{})
	require.NoError(t, err)
	require.Len(t, page.Data, 1, "a dry run creates nothing")

	sel.DryRun = false
	res, err := hooks.BulkReplay(b.ctx, sel)
	require.NoError(t, err)
	require.False(t, res.DryRun)
	require.Equal(t, 1, res.Affected)
	require.Empty(t, res.Sample)
	d := next()
	require.Equal(t, "/orders/v2", d.Path)
	require.JSONEq(t, `{"v": 2}`, string(d.Data))
	require.NotEqual(t, h.ID, d.ID, "a new hook")
	orig, err := hooks.Get(b.ctx, h.ID)
	require.NoError(t, err)
	require.Equal(t, "/orders", orig.Path)
	require.JSONEq(t, `{"v": 1}`, string(orig.Data))

	_, err = hooks.BulkRetry(b.ctx, sundial.BulkActionRequest{HookIDs: []string{h.ID}, Edit: &sundial.HookEdit{Path: "orders"}})
	apiErr := requireAPIError(t, err, 400, sundial.CodeInvalidRequest)
	require.Equal(t, []string{"edit.path"}, apiErr.Fields())
}
