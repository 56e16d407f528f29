package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
)

// dryRunAnswer is a dry run's answer.
type dryRunAnswer struct {
	Data struct {
		Affected     int  `json:"affected"`
		DryRun       bool `json:"dryRun"`
		QuotaRefused bool `json:"quotaRefused"`
		Sample       []struct {
			ID     string    `json:"id"`
			Path   string    `json:"path"`
			Status string    `json:"status"`
			PostAt time.Time `json:"postAt"`
			Tags   []string  `json:"tags"`
		} `json:"sample"`
	} `json:"data"`
}

func (r response) dryRun(t *testing.T) dryRunAnswer {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	return decodeStrict[dryRunAnswer](t, r.body)
}

func (b bundle) projectHooks() []storetest.Hook {
	b.t.Helper()
	hooks, err := b.tq.ListProjectHooksForBulkTest(b.ctx, uuid.MustParse(b.creds.ProjectID))
	require.NoError(b.t, err)
	return hooks
}

func (b bundle) row(id string) storetest.Hook {
	b.t.Helper()
	h, err := b.tq.GetHookForBulkTest(b.ctx, uuid.MustParse(id))
	require.NoError(b.t, err)
	return h
}

// Each action's dry run answers the hooks the action then acts on, and
// changes nothing.
func TestBulkDryRunAnswersWhatTheActionThenDoes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ action, status, skipped, after string }{
		{"retry", "failed", "completed", "pending"}, {"replay", "completed", "failed", "completed"}, {"cancel", "pending", "failed", "gone"},
	} {
		t.Run(tc.action, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			p := b.creds.ProjectID
			var want []string
			for i := range 12 {
				want = append(want, b.stateHook(p, tc.status, bulkDay.Add(time.Duration(i)*time.Minute)))
			}
			b.stateHook(p, tc.skipped, bulkDay)
			body := fmt.Sprintf(`{"startTime":%q,"endTime":%q,"limit":11%%s}`,
				bulkDay.Format(time.RFC3339), bulkDay.Add(24*time.Hour).Format(time.RFC3339))
			before := b.projectHooks()

			dry := b.bulk(tc.action, fmt.Sprintf(body, `,"dryRun":true`)).dryRun(t)
			require.True(t, dry.Data.DryRun)
			require.Equal(t, 11, dry.Data.Affected, "the limit, as the action's")
			require.False(t, dry.Data.QuotaRefused)
			require.Len(t, dry.Data.Sample, 10)
			for i, h := range dry.Data.Sample {
				require.Equal(t, want[i], h.ID, "earliest first")
				require.Equal(t, "/orders?id=1", h.Path)
				require.Equal(t, tc.status, h.Status)
				require.True(t, bulkDay.Add(time.Duration(i)*time.Minute).Equal(h.PostAt))
			}
			require.Equal(t, before, b.projectHooks(), "a dry run changes nothing")

			require.Equal(t, 11, b.bulk(tc.action, fmt.Sprintf(body, "")).affected(t))
			for i, id := range want {
				wantStatus := tc.after
				if i == 11 {
					wantStatus = tc.status
				}
				require.Equal(t, wantStatus, b.status(id), "hook %d", i)
			}
		})
	}
}

func TestBulkReplayDryRunSaysTheQuotaWouldRefuse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	setPlan(b, 2, 150) // hard cap: 3 hooks
	var done []string
	for i := range 4 {
		done = append(done, b.stateHook(b.creds.ProjectID, "completed", bulkDay.Add(time.Duration(i)*time.Minute)))
	}
	dry := b.bulk("replay", fmt.Sprintf(`{"hookIDs":[%q,%q,%q,%q],"dryRun":true}`, done[0], done[1], done[2], done[3])).dryRun(t)
	require.True(t, dry.Data.QuotaRefused)
	require.Equal(t, 4, dry.Data.Affected)
	require.Len(t, b.projectHooks(), 4, "nothing created")
	b.bulk("replay", idsBody(done...)).requireError(t, http.StatusTooManyRequests, "quota_exhausted")
}

func TestBulkRetryAndReplayWithAnEdit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.creds.ProjectID
	failed := b.stateHook(p, "failed", bulkDay)
	completed := b.stateHook(p, "completed", bulkDay)
	later := bulkDay.Add(48 * time.Hour)
	edit := fmt.Sprintf(`"edit":{"data":{"order":2},"path":"/v2/orders","postAt":%q}`, later.Format(time.RFC3339))

	require.Equal(t, 1, b.bulk("retry", fmt.Sprintf(`{"hookIDs":[%q],%s}`, failed, edit)).affected(t))
	h := b.row(failed)
	require.Equal(t, "pending", h.Status)
	require.Equal(t, "/v2/orders", h.Path)
	require.JSONEq(t, `{"order":2}`, string(h.Data))
	require.True(t, later.Equal(h.PostAt))
	require.EqualValues(t, 1, h.Attempts, "the attempts stay the hook's")

	require.Equal(t, 1, b.bulk("replay", fmt.Sprintf(`{"hookIDs":[%q],%s}`, completed, edit)).affected(t))
	orig := b.row(completed)
	require.Equal(t, "/orders?id=1", orig.Path, "the original is left as it is")
	var copied int
	for _, row := range b.projectHooks() {
		if row.ID.String() != failed && row.ID.String() != completed {
			copied++
			require.Equal(t, "/v2/orders", row.Path)
			require.JSONEq(t, `{"order":2}`, string(row.Data))
			require.True(t, later.Equal(row.PostAt))
		}
	}
	require.Equal(t, 1, copied)

	// A hook scheduled at a local time becomes an instant when an edit
	// gives it a postAt; retried without one, it keeps its local time.
	local := func() string {
		row, err := b.tq.InsertHookForBulkTest(b.ctx, storetest.InsertHookForBulkTestParams{
			ID: uuid.Must(uuid.NewV7()), ProjectID: uuid.MustParse(p), Path: "/local", Domain: "hooks.example.com",
			Data: json.RawMessage(`{}`), PostAt: bulkDay, Status: "failed", Attempts: 1, TryAt: &bulkDay,
			FailureError: ptr("HTTP 503"), Timezone: ptr("Europe/Paris"),
		})
		require.NoError(t, err)
		return row.ID.String()
	}
	edited, kept := local(), local()
	require.Equal(t, 1, b.bulk("retry", fmt.Sprintf(`{"hookIDs":[%q],"edit":{"postAt":%q}}`, edited, later.Format(time.RFC3339))).affected(t))
	require.Equal(t, 1, b.bulk("retry", idsBody(kept)).affected(t))
	require.Nil(t, b.row(edited).Timezone)
	require.False(t, b.row(edited).PostAtLocal.Valid)
	require.Nil(t, b.row(edited).TzVersion)
	require.Equal(t, "Europe/Paris", *b.row(kept).Timezone)
	require.True(t, b.row(kept).PostAtLocal.Valid)
}

func TestBulkEditValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := uuid.NewString()
	body := func(edit string) string { return fmt.Sprintf(`{"hookIDs":[%q],"edit":%s}`, id, edit) }
	for _, action := range []string{"retry", "replay"} {
		b.bulk(action, body(`{"data":[1]}`)).requireError(t, http.StatusBadRequest, "invalid_request", "edit.data")
		b.bulk(action, body(`{"path":"//evil.example.com/"}`)).requireError(t, http.StatusBadRequest, "invalid_request", "edit.path")
		b.bulk(action, body(`{"postAt":"tomorrow"}`)).requireError(t, http.StatusBadRequest, "invalid_request", "edit.postAt")
		b.bulk(action, body(`{}`)).requireError(t, http.StatusBadRequest, "invalid_request", "edit")
		b.bulk(action, body(`{"path":"/a","when":"now"}`)).requireError(t, http.StatusBadRequest, "invalid_request", "edit.when")
		big, err := json.Marshal(map[string]string{"a": strings.Repeat("x", 1<<20)})
		require.NoError(t, err)
		b.bulk(action, body(fmt.Sprintf(`{"data":%s}`, big))).requireError(t, http.StatusRequestEntityTooLarge, "payload_too_large", "edit.data")
	}
	b.bulk("cancel", body(`{"path":"/a"}`)).requireError(t, http.StatusBadRequest, "invalid_request", "edit")
}
