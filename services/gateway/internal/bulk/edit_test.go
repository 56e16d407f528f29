package bulk_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/bulk"
	"github.com/sundial-run/sundial/services/gateway/internal/hook"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
)

// order is an Order of the hooks by id, with an edit.
func order(t *testing.T, e hook.EditRequest, dryRun bool, hooks ...storetest.Hook) bulk.Order {
	t.Helper()
	raw := make([]string, len(hooks))
	for i, h := range hooks {
		raw[i] = h.ID.String()
	}
	o, err := bulk.Request{HookIDs: &raw, Edit: &e, DryRun: dryRun}.Order(bulk.ActionRetry, 1<<20)
	require.NoError(t, err)
	return o
}

func TestRetryWithAnEditMovesTheHookWithTheEdit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := b.project(t, 100000, 200)
	failed := b.hook(t, project, spec{status: "failed", attempts: 2, tags: []string{"t"}, key: ptr("k")})
	for i := int32(1); i <= 2; i++ {
		require.NoError(t, storetest.New(b.pool).InsertAttemptForBulkTest(context.Background(), storetest.InsertAttemptForBulkTestParams{HookID: failed.ID, Attempt: i}))
	}
	later := time.Now().UTC().Add(time.Hour).Truncate(time.Microsecond)
	edit := hook.EditRequest{Data: json.RawMessage(`{"v": 2}`), Path: ptr("/v2?x=1"), PostAt: ptr(later.Format(time.RFC3339Nano))}

	dry, err := b.svc.Retry(context.Background(), project, order(t, edit, true, failed))
	require.NoError(t, err)
	require.EqualValues(t, 1, dry.Affected)
	require.Equal(t, []bulk.Sampled{{ID: failed.ID, Path: "/hook", Status: "failed", PostAt: failed.PostAt, Tags: []string{"t"}}}, dry.Sample,
		"the sample shows the hook as it stands")
	row, _ := b.get(t, failed.ID)
	require.Equal(t, failed, row, "a dry run changes nothing")

	out, err := b.svc.Retry(context.Background(), project, order(t, edit, false, failed))
	require.NoError(t, err)
	require.EqualValues(t, 1, out.Affected)
	row, _ = b.get(t, failed.ID)
	require.Equal(t, "pending", row.Status)
	require.Equal(t, "/v2?x=1", row.Path)
	require.JSONEq(t, `{"v": 2}`, string(row.Data))
	require.True(t, later.Equal(row.PostAt), "postAt is the edit's")
	require.True(t, later.Equal(*row.RunAt), "due at the edit's postAt")
	require.Equal(t, failed.Domain, row.Domain)
	require.Equal(t, failed.Key, row.Key, "the key stays")
	require.Equal(t, failed.Tags, row.Tags, "the tags stay")
	require.EqualValues(t, 2, row.RetryBudgetBase, "a fresh budget, as without an edit")
	attempts, err := storetest.New(b.pool).CountAttemptsForBulkTest(context.Background(), failed.ID)
	require.NoError(t, err)
	require.EqualValues(t, 2, attempts, "the attempts stay the hook's history")

	// Only the edited fields change; a past postAt is due now.
	other := b.hook(t, project, spec{status: "failed"})
	past := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Second)
	_, err = b.svc.Retry(context.Background(), project, order(t, hook.EditRequest{PostAt: ptr(past.Format(time.RFC3339))}, false, other))
	require.NoError(t, err)
	row, _ = b.get(t, other.ID)
	require.Equal(t, other.Path, row.Path)
	require.Equal(t, other.Data, row.Data)
	require.True(t, past.Equal(row.PostAt))
	require.False(t, row.RunAt.After(time.Now()), "due now")
}

func TestReplayWithAnEditCopiesWithTheEdit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := b.project(t, 100000, 200)
	done := b.hook(t, project, spec{status: "completed", tags: []string{"t"}})
	later := time.Now().UTC().Add(time.Hour).Truncate(time.Microsecond)
	edit := hook.EditRequest{Path: ptr("/v2"), PostAt: ptr(later.Format(time.RFC3339Nano))}

	dry, err := b.svc.Replay(context.Background(), project, order(t, edit, true, done))
	require.NoError(t, err)
	require.EqualValues(t, 1, dry.Affected)
	require.False(t, dry.QuotaRefused)
	require.Len(t, b.projectHooks(t, project), 1, "a dry run creates nothing")
	require.Zero(t, b.usage(t, project), "and counts nothing")

	out, err := b.svc.Replay(context.Background(), project, order(t, edit, false, done))
	require.NoError(t, err)
	require.EqualValues(t, 1, out.Affected)
	hooks := b.projectHooks(t, project)
	require.Len(t, hooks, 2)
	c := hooks[0]
	if c.ID == done.ID {
		c = hooks[1]
	}
	require.Equal(t, "/v2", c.Path)
	require.Equal(t, done.Data, c.Data, "the data not edited is the original's")
	require.True(t, later.Equal(c.PostAt))
	require.True(t, later.Equal(*c.RunAt))
	require.Equal(t, "pending", c.Status)
	require.Equal(t, done.Tags, c.Tags)
	orig, _ := b.get(t, done.ID)
	require.Equal(t, done, orig, "the original is left as it was")
}

// A replay's dry run says whether the quota would refuse the replay, and
// claims no threshold alert: the replay run afterwards still announces it.
func TestReplayDryRunReportsTheQuota(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// A quota of 4 with a hard cap of 150 %: 6 hooks at most.
	project := b.project(t, 4, 150)
	for i := range 7 {
		b.hook(t, project, spec{status: "completed", postAt: t0.Add(time.Duration(i) * time.Minute)})
	}
	all := bulk.Order{Selection: rangeOver(t, 7), DryRun: true}
	dry, err := b.svc.Replay(context.Background(), project, all)
	require.NoError(t, err)
	require.EqualValues(t, 7, dry.Affected)
	require.True(t, dry.QuotaRefused)
	require.Len(t, dry.Sample, 7)
	all.DryRun = false
	_, err = b.svc.Replay(context.Background(), project, all)
	require.ErrorIs(t, err, quota.ErrExhausted, "the replay is refused as its dry run said")

	three := bulk.Order{Selection: rangeOver(t, 3), DryRun: true}
	dry, err = b.svc.Replay(context.Background(), project, three)
	require.NoError(t, err)
	require.EqualValues(t, 3, dry.Affected)
	require.False(t, dry.QuotaRefused)
	require.Zero(t, b.usage(t, project))
	require.Empty(t, b.alerts.percents(), "a dry run announces nothing")
	three.DryRun = false
	out, err := b.svc.Replay(context.Background(), project, three)
	require.NoError(t, err)
	require.EqualValues(t, 3, out.Affected)
	require.Equal(t, []int32{75}, b.alerts.percents(), "the dry run's claim of 75 % was rolled back")
}

func TestDryRunSampleIsTheFirstTenEarliestFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := b.project(t, 100000, 200)
	var want []uuid.UUID
	for i := 12; i > 0; i-- {
		h := b.hook(t, project, spec{status: "pending", postAt: t0.Add(time.Duration(i) * time.Minute)})
		if i <= bulk.SampleSize {
			want = append([]uuid.UUID{h.ID}, want...)
		}
	}
	dry, err := b.svc.Cancel(context.Background(), project, bulk.Order{Selection: rangeOver(t, 100), DryRun: true})
	require.NoError(t, err)
	require.EqualValues(t, 12, dry.Affected)
	require.Equal(t, want, idsOf(dry.Sample))
	require.Len(t, b.projectHooks(t, project), 12)
}
