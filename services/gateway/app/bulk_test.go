package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

// bulkDay is the day of postAt the bulk tests select by range.
var bulkDay = time.Date(2031, 3, 1, 0, 0, 0, 0, time.UTC)

// stateHook puts a hook of the given status straight into the database, as
// the scheduler would have left it, and returns its id.
func (b bundle) stateHook(projectID, status string, postAt time.Time) string {
	b.t.Helper()
	p := storetest.InsertHookForBulkTestParams{
		ID: uuid.Must(uuid.NewV7()), ProjectID: uuid.MustParse(projectID), Path: "/orders?id=1",
		Domain: "hooks.example.com", Data: json.RawMessage(`{"order":1}`), PostAt: postAt, Status: status,
	}
	if status != "pending" {
		p.Attempts, p.TryAt = 1, &postAt
	}
	if status == "failed" || status == "retry" {
		p.FailureError = ptr("HTTP 503")
	}
	h, err := b.tq.InsertHookForBulkTest(b.ctx, p)
	require.NoError(b.t, err)
	return h.ID.String()
}

func ptr[T any](v T) *T { return &v }

// bulk posts a bulk action's body and returns the response.
func (b bundle) bulk(action, body string) response {
	b.t.Helper()
	return b.do(http.MethodPost, "/v1/hooks/bulk/"+action, strings.NewReader(body))
}

func (r response) affected(t *testing.T) int {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	return decodeStrict[struct {
		Data struct {
			Affected int `json:"affected"`
		} `json:"data"`
	}](t, r.body).Data.Affected
}

func idsBody(ids ...string) string {
	raw, _ := json.Marshal(map[string][]string{"hookIDs": ids})
	return string(raw)
}

func (b bundle) status(id string) string {
	b.t.Helper()
	res := b.do(http.MethodGet, "/v1/hooks/"+id, nil)
	if res.status == http.StatusNotFound {
		return "gone"
	}
	require.Equal(b.t, http.StatusOK, res.status, string(res.body))
	// Only the status matters here; the contract client checks the rest.
	var got struct {
		Data struct {
			Status string `json:"status"`
		} `json:"data"`
	}
	require.NoError(b.t, json.Unmarshal(res.body, &got))
	return got.Data.Status
}

func TestBulkActionsByID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.creds.ProjectID
	at := bulkDay.Add(time.Hour)
	ids := map[string]string{}
	for _, s := range []string{"pending", "retry", "completed", "failed"} {
		ids[s] = b.stateHook(p, s, at)
	}
	all := []string{ids["pending"], ids["retry"], ids["completed"], ids["failed"], uuid.NewString(), ids["failed"]}

	require.Equal(t, 1, b.bulk("retry", idsBody(all...)).affected(t), "only the failed hook, once")
	require.Equal(t, "pending", b.status(ids["failed"]))

	res := b.bulk("replay", idsBody(all...))
	require.Equal(t, 1, res.affected(t), "only the completed hook")
	require.Equal(t, "1", res.header.Get("Sundial-HookQuota-Usage"), "the replay is counted")
	require.Equal(t, "completed", b.status(ids["completed"]))

	require.Equal(t, 3, b.bulk("cancel", idsBody(all...)).affected(t), "pending, retry, and the retried hook")
	for _, s := range []string{"pending", "retry", "failed"} {
		require.Equal(t, "gone", b.status(ids[s]), s)
	}
	require.Equal(t, "completed", b.status(ids["completed"]))
}

func TestBulkActionsByRange(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.creds.ProjectID
	var failed []string
	for i := range 4 {
		failed = append(failed, b.stateHook(p, "failed", bulkDay.Add(time.Duration(i)*time.Hour)))
	}
	outside := b.stateHook(p, "failed", bulkDay.Add(24*time.Hour))
	body := func(limit int, extra string) string {
		return fmt.Sprintf(`{"startTime":%q,"endTime":%q,"limit":%d%s}`,
			bulkDay.Format(time.RFC3339), bulkDay.Add(24*time.Hour).Format(time.RFC3339), limit, extra)
	}

	require.Equal(t, 2, b.bulk("retry", body(2, "")).affected(t), "limit honoured")
	require.Equal(t, []string{"pending", "pending", "failed", "failed"},
		[]string{b.status(failed[0]), b.status(failed[1]), b.status(failed[2]), b.status(failed[3])}, "the earliest first")
	require.Zero(t, b.bulk("retry", body(10, `,"endpointKey":"/other"`)).affected(t))
	require.Zero(t, b.bulk("retry", body(10, fmt.Sprintf(`,"sequenceID":%q`, uuid.NewString()))).affected(t))
	require.Equal(t, 2, b.bulk("retry", body(10, `,"endpointKey":"/orders"`)).affected(t), "any query string")
	require.Equal(t, "failed", b.status(outside), "endTime is exclusive")
}

func TestBulkRequestValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := uuid.NewString()
	cases := []struct {
		body   string
		fields []string
	}{
		{`{}`, []string{"hookIDs"}},
		{`{"hookIDs":[]}`, []string{"hookIDs"}},
		{`{"hookIDs":["nope"]}`, []string{"hookIDs[0]"}},
		{fmt.Sprintf(`{"hookIDs":[%q],"startTime":"2030-01-01T00:00:00Z"}`, id), []string{"startTime"}},
		{`{"endpointKey":"/a"}`, []string{"startTime", "endTime", "limit"}},
		{`{"startTime":"2030-01-02T00:00:00Z","endTime":"2030-01-01T00:00:00Z","limit":5}`, []string{"endTime"}},
		{`{"startTime":"2030-01-01T00:00:00Z","endTime":"2030-01-02T00:00:00Z","limit":1001}`, []string{"limit"}},
		{`{"startTime":"2030-01-01T00:00:00Z","endTime":"2030-01-02T00:00:00Z","limit":5,"sequenceID":"x"}`, []string{"sequenceID"}},
		{`{"startTime":"yesterday","endTime":"2030-01-02T00:00:00Z","limit":5}`, []string{"startTime"}},
		{fmt.Sprintf(`{"hookIDs":[%q],"HookIDs":[%q]}`, id, id), []string{"HookIDs"}},
		{fmt.Sprintf(`{"hookIDs":[%q],"ids":[%q]}`, id, id), []string{"ids"}},
	}
	for _, action := range []string{"retry", "replay", "cancel"} {
		for _, tc := range cases {
			b.bulk(action, tc.body).requireError(t, http.StatusBadRequest, "invalid_request", tc.fields...)
		}
		res := b.do(http.MethodPost, "/v1/hooks/bulk/"+action, strings.NewReader(idsBody(id)), header("Content-Type", "text/plain"))
		res.requireError(t, http.StatusUnsupportedMediaType, "unsupported_media_type")
	}
}

func TestBulkActionsNeverReachAnotherProject(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other, err := app.CreateProject(b.ctx, app.Database{URL: b.dbURL, SecretKeys: secrettest.Keys}, "Other", "other.example.com")
	require.NoError(t, err)
	theirs := map[string]string{}
	for _, s := range []string{"pending", "completed", "failed"} {
		theirs[s] = b.stateHook(other.ProjectID, s, bulkDay.Add(time.Hour))
	}
	byRange := fmt.Sprintf(`{"startTime":%q,"endTime":%q,"limit":1000}`,
		bulkDay.Format(time.RFC3339), bulkDay.Add(24*time.Hour).Format(time.RFC3339))
	for _, action := range []string{"retry", "replay", "cancel"} {
		require.Zero(t, b.bulk(action, idsBody(theirs["pending"], theirs["completed"], theirs["failed"])).affected(t), action)
		require.Zero(t, b.bulk(action, byRange).affected(t), action)
	}
	res := b.do(http.MethodPost, "/v1/hooks/retryIDs", strings.NewReader(
		fmt.Sprintf(`{"projectID":%q,"hookIDs":[%q]}`, b.creds.ProjectID, theirs["failed"])))
	require.Zero(t, res.affected(t))
	for s, id := range theirs {
		h, err := b.tq.GetHookForBulkTest(b.ctx, uuid.MustParse(id))
		require.NoError(t, err)
		require.Equal(t, s, h.Status, "untouched")
	}
}

func TestBulkReplayPastTheHardCapIsRefusedWhole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	setPlan(b, 2, 150) // hard cap: 3 hooks
	var done []string
	for i := range 4 {
		done = append(done, b.stateHook(b.creds.ProjectID, "completed", bulkDay.Add(time.Duration(i)*time.Minute)))
	}
	res := b.bulk("replay", idsBody(done...))
	e := res.requireError(t, http.StatusTooManyRequests, "quota_exhausted")
	require.Contains(t, e.Error, "none was replayed")
	require.Equal(t, "0", res.header.Get("Sundial-HookQuota-Usage"), "nothing counted")
	retryAfter, err := strconv.Atoi(res.header.Get("Retry-After"))
	require.NoError(t, err)
	require.Positive(t, retryAfter)

	res = b.bulk("replay", idsBody(done[:3]...))
	require.Equal(t, 3, res.affected(t), "what fits is replayed")
	require.Equal(t, "3", res.header.Get("Sundial-HookQuota-Usage"))
	require.Equal(t, "0", res.header.Get("Sundial-HookQuota-Remaining"))
	hooks, err := b.tq.ListProjectHooksForBulkTest(b.ctx, uuid.MustParse(b.creds.ProjectID))
	require.NoError(t, err)
	require.Len(t, hooks, 7, "four originals and three replays")
}

func TestRetryIDs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	failed := b.stateHook(b.creds.ProjectID, "failed", bulkDay)
	completed := b.stateHook(b.creds.ProjectID, "completed", bulkDay)
	body := func(projectID string) string {
		return fmt.Sprintf(`{"projectID":%q,"hookIDs":[%q,%q,%q]}`, projectID, failed, completed, uuid.NewString())
	}
	retryIDs := func(body string) response {
		return b.do(http.MethodPost, "/v1/hooks/retryIDs", strings.NewReader(body))
	}

	other, err := app.CreateProject(b.ctx, app.Database{URL: b.dbURL, SecretKeys: secrettest.Keys}, "Other", "other.example.com")
	require.NoError(t, err)
	retryIDs(body(other.ProjectID)).requireError(t, http.StatusForbidden, "forbidden", "projectID")
	require.Equal(t, "failed", b.status(failed), "nothing changed")

	retryIDs(`{"hookIDs":[]}`).requireError(t, http.StatusBadRequest, "invalid_request", "projectID", "hookIDs")
	retryIDs(fmt.Sprintf(`{"projectID":"acme","hookIDs":[%q]}`, failed)).requireError(t, http.StatusBadRequest, "invalid_request", "projectID")

	require.Equal(t, 1, retryIDs(body(b.creds.ProjectID)).affected(t), "unknown and non-failed ids are skipped")
	require.Equal(t, "pending", b.status(failed))
	require.Equal(t, "completed", b.status(completed))
}
