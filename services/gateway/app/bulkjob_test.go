package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/bulkjob"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
)

// The bulk job tests run on the gateway setup starts, whose own runner
// works on the jobs, as in production.

// bulkJobJSON is the BulkJob resource, decoded strictly.
type bulkJobJSON struct {
	ID        string `json:"id"`
	Action    string `json:"action"`
	Selection struct {
		StartTime   string   `json:"startTime"`
		EndTime     string   `json:"endTime"`
		EndpointKey string   `json:"endpointKey"`
		SequenceID  string   `json:"sequenceID"`
		Tags        []string `json:"tags"`
	} `json:"selection"`
	Edit *struct {
		Data   json.RawMessage `json:"data"`
		Path   string          `json:"path"`
		PostAt string          `json:"postAt"`
	} `json:"edit"`
	State    string  `json:"state"`
	Total    int64   `json:"total"`
	Selected int64   `json:"selected"`
	Affected int64   `json:"affected"`
	Skipped  int64   `json:"skipped"`
	Batches  int     `json:"batches"`
	Progress float64 `json:"progress"`
	Error    *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	CreatedAt  string `json:"createdAt"`
	UpdatedAt  string `json:"updatedAt"`
	FinishedAt string `json:"finishedAt"`
}

type bulkJobPageJSON struct {
	Data []bulkJobJSON `json:"data"`
	Meta struct {
		TotalItems       int64   `json:"totalItems"`
		TotalItemsCapped bool    `json:"totalItemsCapped"`
		NextCursor       *string `json:"nextCursor"`
	} `json:"meta"`
}

type bulkJobDryRunJSON struct {
	DryRun bool  `json:"dryRun"`
	Total  int64 `json:"total"`
	Sample []struct {
		ID     string   `json:"id"`
		Path   string   `json:"path"`
		Status string   `json:"status"`
		PostAt string   `json:"postAt"`
		Tags   []string `json:"tags"`
	} `json:"sample"`
}

// jobDay is the day of postAt the bulk job tests select.
var jobDay = time.Date(2032, 5, 1, 0, 0, 0, 0, time.UTC)

// jobBody is a create's body: action over jobDay, with extra members.
func jobBody(action, extra string) string {
	return fmt.Sprintf(`{"action":%q,"startTime":%q,"endTime":%q%s}`, action,
		jobDay.Format(time.RFC3339), jobDay.Add(24*time.Hour).Format(time.RFC3339), extra)
}

func (b bundle) createJob(body string, mods ...func(*http.Request)) response {
	b.t.Helper()
	return b.do(http.MethodPost, "/v1/bulk-jobs", strings.NewReader(body), mods...)
}

// startJob creates a job and returns it as the 202 shows it.
func (b bundle) startJob(body string) bulkJobJSON {
	b.t.Helper()
	res := b.createJob(body)
	job := data[bulkJobJSON](b.t, res, http.StatusAccepted)
	require.Equal(b.t, "/v1/bulk-jobs/"+job.ID, res.header.Get("Location"))
	return job
}

func (b bundle) bulkJob(id string, mods ...func(*http.Request)) bulkJobJSON {
	b.t.Helper()
	return data[bulkJobJSON](b.t, b.do(http.MethodGet, "/v1/bulk-jobs/"+id, nil, mods...), http.StatusOK)
}

// waitJob waits until the job is in state, and returns it.
func (b bundle) waitJob(id, state string, mods ...func(*http.Request)) bulkJobJSON {
	b.t.Helper()
	var job bulkJobJSON
	require.Eventually(b.t, func() bool {
		job = b.bulkJob(id, mods...)
		return job.State == state
	}, 60*time.Second, 20*time.Millisecond, "job %s never %s", id, state)
	return job
}

func (b bundle) bulkJobs(query string, mods ...func(*http.Request)) bulkJobPageJSON {
	b.t.Helper()
	res := b.do(http.MethodGet, "/v1/bulk-jobs"+query, nil, mods...)
	require.Equal(b.t, http.StatusOK, res.status, string(res.body))
	return decodeStrict[bulkJobPageJSON](b.t, res.body)
}

// jobHooks inserts n hooks of the project in status, a second apart from
// start.
func (b bundle) jobHooks(status string, n int, start time.Time, tags ...string) {
	b.t.Helper()
	require.NoError(b.t, b.tq.InsertHooksForJobTest(b.ctx, storetest.InsertHooksForJobTestParams{
		ProjectID: uuid.MustParse(b.creds.ProjectID), Start: start, Status: status, N: int32(n), Tags: tags}))
}

// holdAt holds the project's hook due at postAt locked, in a connection of
// its own, until the returned release: a job's batch that reaches it waits
// there, whatever the machine's speed, so a test can act on a job known to
// be part way.
func (b bundle) holdAt(dbURL string, postAt time.Time) (release func()) {
	b.t.Helper()
	conn, err := pgx.Connect(b.ctx, dbURL)
	require.NoError(b.t, err)
	tx, err := conn.Begin(b.ctx)
	require.NoError(b.t, err)
	require.NoError(b.t, storetest.New(tx).LockHookAtForTest(b.ctx, storetest.LockHookAtForTestParams{
		ProjectID: uuid.MustParse(b.creds.ProjectID), PostAt: postAt}))
	var once sync.Once
	release = func() {
		once.Do(func() {
			_ = tx.Rollback(context.Background())
			_ = conn.Close(context.Background())
		})
	}
	b.t.Cleanup(release)
	return release
}

func (b bundle) hooksIn(status string) int64 {
	b.t.Helper()
	n, err := b.tq.CountHooksForJobTest(b.ctx, storetest.CountHooksForJobTestParams{
		ProjectID: uuid.MustParse(b.creds.ProjectID), Status: status})
	require.NoError(b.t, err)
	return n
}

func TestABulkJobCancelsItsWholeSelection(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.jobHooks("pending", 2500, jobDay)
	b.jobHooks("pending", 40, jobDay.Add(-time.Hour))   // before the range
	b.jobHooks("pending", 30, jobDay.Add(24*time.Hour)) // at its end, which is outside
	b.jobHooks("completed", 20, jobDay)                 // not the action's status

	job := b.startJob(jobBody("cancel", ""))
	require.Equal(t, "cancel", job.Action)
	require.Equal(t, "running", job.State)
	require.EqualValues(t, 2500, job.Total)
	require.Equal(t, jobDay.Format(time.RFC3339), job.Selection.StartTime)
	require.Nil(t, job.Edit)
	require.Empty(t, job.FinishedAt)

	done := b.waitJob(job.ID, "completed")
	require.EqualValues(t, 2500, done.Selected)
	require.EqualValues(t, 2500, done.Affected)
	require.Zero(t, done.Skipped)
	require.Equal(t, 3, done.Batches, "batches of 1,000")
	require.InDelta(t, 1.0, done.Progress, 1e-9)
	require.NotEmpty(t, done.FinishedAt)
	require.Nil(t, done.Error)
	require.EqualValues(t, 70, b.hooksIn("pending"), "hooks outside the range stay")
	require.EqualValues(t, 20, b.hooksIn("completed"))

	// A job that has ended cannot be cancelled.
	e := b.do(http.MethodPost, "/v1/bulk-jobs/"+job.ID+"/cancel", nil).requireError(t, http.StatusConflict, "conflict")
	require.Contains(t, e.Error, "completed")
	require.Equal(t, done, b.bulkJob(job.ID))
}

func TestABulkJobRetriesWithAnEditAndShowsItsSelection(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.jobHooks("failed", 15, jobDay, "campaign", "spring")
	b.jobHooks("failed", 5, jobDay.Add(time.Hour)) // without the tags

	job := b.startJob(jobBody("retry", `,"endpointKey":"/hook","tags":["spring","campaign"],`+
		`"edit":{"path":"/v2/hook","data":{"version":2},"postAt":"2040-01-01T00:00:00+01:00"}`))
	require.Equal(t, "/hook", job.Selection.EndpointKey, "an endpoint key without a query string")
	require.ElementsMatch(t, []string{"spring", "campaign"}, job.Selection.Tags)
	require.NotNil(t, job.Edit)
	require.Equal(t, "/v2/hook", job.Edit.Path)
	require.JSONEq(t, `{"version":2}`, string(job.Edit.Data))
	require.Equal(t, "2039-12-31T23:00:00Z", job.Edit.PostAt)
	require.EqualValues(t, 15, job.Total)

	done := b.waitJob(job.ID, "completed")
	require.EqualValues(t, 15, done.Affected)
	require.EqualValues(t, 15, b.hooksIn("pending"))
	require.EqualValues(t, 5, b.hooksIn("failed"), "hooks without the tags stay")

	// An endpoint key with a query string is kept as it is.
	exact := b.startJob(jobBody("cancel", `,"endpointKey":"/hook?id=1"`))
	require.Equal(t, "/hook?id=1", exact.Selection.EndpointKey)
	require.Zero(t, exact.Total)
	require.Equal(t, 0, b.waitJob(exact.ID, "completed").Batches, "an empty selection completes at once")
}

func TestABulkJobDryRunCreatesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.jobHooks("pending", 25, jobDay)
	b.jobHooks("retry", 5, jobDay.Add(-time.Hour)) // before the range

	res := b.createJob(jobBody("cancel", `,"dryRun":true`))
	dry := data[bulkJobDryRunJSON](t, res, http.StatusOK)
	require.Empty(t, res.header.Get("Location"))
	require.True(t, dry.DryRun)
	require.EqualValues(t, 25, dry.Total)
	require.Len(t, dry.Sample, 10)
	require.Equal(t, jobDay.Format(time.RFC3339), dry.Sample[0].PostAt, "the earliest first")
	require.Equal(t, "pending", dry.Sample[0].Status)

	require.Empty(t, b.bulkJobs("").Data, "no job")
	require.EqualValues(t, 25, b.hooksIn("pending"))
}

func TestACancelledBulkJobStopsBetweenBatches(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// The runner's batches are of 1,000 hooks, a second apart from jobDay:
	// the second batch waits at a hook held locked, and the cancel comes
	// while it waits.
	const n = 5000
	b.jobHooks("pending", n, jobDay)
	release := b.holdAt(b.dbURL, jobDay.Add(1500*time.Second))
	job := b.startJob(jobBody("cancel", ""))
	require.Eventually(t, func() bool { return b.bulkJob(job.ID).Selected == 1000 }, 60*time.Second, 5*time.Millisecond)

	res := b.do(http.MethodPost, "/v1/bulk-jobs/"+job.ID+"/cancel", nil)
	cancelling := data[bulkJobJSON](t, res, http.StatusAccepted)
	require.Equal(t, "cancelling", cancelling.State)
	again := b.do(http.MethodPost, "/v1/bulk-jobs/"+job.ID+"/cancel", nil)
	require.Equal(t, "cancelling", data[bulkJobJSON](t, again, http.StatusAccepted).State, "a second cancel answers the job as it is")
	release()

	done := b.waitJob(job.ID, "cancelled")
	require.EqualValues(t, 2000, done.Selected, "the batch under way ends, and no other starts")
	require.EqualValues(t, 2000, done.Affected)
	require.Less(t, done.Progress, 1.0)
	require.NotEmpty(t, done.FinishedAt)
	require.EqualValues(t, n-done.Affected, b.hooksIn("pending"), "what the job did stays done, and only that")

	e := b.do(http.MethodPost, "/v1/bulk-jobs/"+job.ID+"/cancel", nil).requireError(t, http.StatusConflict, "conflict")
	require.Contains(t, e.Error, "cancelled")
}

func TestBulkJobRequestsAreValidatedNamingTheField(t *testing.T) {
	t.Parallel()
	b := setup(t)
	range_ := fmt.Sprintf(`"startTime":%q,"endTime":%q`, jobDay.Format(time.RFC3339), jobDay.Add(time.Hour).Format(time.RFC3339))
	for body, fields := range map[string][]string{
		`{` + range_ + `}`:                             {"action"},
		`{"action":"delete",` + range_ + `}`:           {"action"},
		`{"action":"retry"}`:                           {"startTime", "endTime"},
		`{"action":"retry",` + range_ + `,"limit":10}`: {"limit"},
		`{"action":"retry",` + range_ + `,"hookIDs":["` + uuid.NewString() + `"]}`:               {"hookIDs"},
		`{"action":"cancel",` + range_ + `,"edit":{"path":"/a"}}`:                                {"edit"},
		`{"action":"retry",` + range_ + `,"edit":{}}`:                                            {"edit"},
		`{"action":"retry",` + range_ + `,"endpointKey":"orders"}`:                               {"endpointKey"},
		`{"action":"retry","startTime":"2032-05-02T00:00:00Z","endTime":"2032-05-01T00:00:00Z"}`: {"endTime"},
	} {
		b.createJob(body).requireError(t, http.StatusBadRequest, "invalid_request", fields...)
	}
	big, err := json.Marshal(map[string]string{"a": strings.Repeat("x", 1<<20)})
	require.NoError(t, err)
	b.createJob(jobBody("replay", fmt.Sprintf(`,"edit":{"data":%s}`, big))).
		requireError(t, http.StatusRequestEntityTooLarge, "payload_too_large", "edit.data")
	require.Empty(t, b.bulkJobs("").Data, "nothing was created")

	for _, query := range []string{"?limit=0", "?limit=101", "?cursor=nope", "?offset=2"} {
		field := strings.TrimPrefix(strings.Split(query, "=")[0], "?")
		b.do(http.MethodGet, "/v1/bulk-jobs"+query, nil).requireError(t, http.StatusBadRequest, "invalid_request", field)
	}
	for _, id := range []string{uuid.NewString(), "not-a-uuid"} {
		b.do(http.MethodGet, "/v1/bulk-jobs/"+id, nil).requireError(t, http.StatusNotFound, "not_found")
		b.do(http.MethodPost, "/v1/bulk-jobs/"+id+"/cancel", nil).requireError(t, http.StatusNotFound, "not_found")
	}
}

func TestAProjectHasAtMostTenUnfinishedBulkJobs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Jobs another gateway holds stay running whatever this one does.
	for range bulkjob.MaxUnfinished {
		_, err := b.tq.InsertLeasedBulkJobForTest(b.ctx, storetest.InsertLeasedBulkJobForTestParams{
			ID: uuid.Must(uuid.NewV7()), ProjectID: uuid.MustParse(b.creds.ProjectID), StartTime: jobDay, EndTime: jobDay.Add(time.Hour),
		})
		require.NoError(t, err)
	}
	e := b.createJob(jobBody("cancel", "")).requireError(t, http.StatusConflict, "conflict")
	require.Contains(t, e.Error, "10 unfinished bulk jobs")
	// A dry run creates nothing, so it is not bounded.
	require.Equal(t, http.StatusOK, b.createJob(jobBody("cancel", `,"dryRun":true`)).status)

	page := b.bulkJobs("?limit=100")
	require.Len(t, page.Data, bulkjob.MaxUnfinished)
	cancelled := data[bulkJobJSON](t, b.do(http.MethodPost, "/v1/bulk-jobs/"+page.Data[0].ID+"/cancel", nil), http.StatusAccepted)
	require.Equal(t, "cancelling", cancelled.State)
	require.Equal(t, http.StatusConflict, b.createJob(jobBody("cancel", "")).status, "a cancelling job is unfinished")
}

func TestBulkJobsAreListedNewestFirstByCursor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ids []string
	for range 5 {
		ids = append(ids, b.startJob(jobBody("retry", "")).ID)
	}
	var got []string
	query := "?limit=2"
	for pages := 1; ; pages++ {
		require.LessOrEqual(t, pages, 3, "more pages than jobs")
		page := b.bulkJobs(query)
		require.EqualValues(t, 5, page.Meta.TotalItems)
		require.False(t, page.Meta.TotalItemsCapped)
		for _, j := range page.Data {
			got = append(got, j.ID)
		}
		if page.Meta.NextCursor == nil {
			require.Equal(t, 3, pages)
			break
		}
		query = "?limit=2&cursor=" + *page.Meta.NextCursor
	}
	require.Equal(t, []string{ids[4], ids[3], ids[2], ids[1], ids[0]}, got)
	require.Len(t, b.bulkJobs("").Data, 5, "a default page holds them")
	require.Equal(t, ids[4], b.bulkJobs("?cursor=").Data[0].ID, "an empty cursor is the first page")
}

// TestABulkJobIsHandedBackAtShutdown: a gateway that stops hands its job
// back at once instead of at its lease's end, and another gateway goes on
// with it from where it was.
func TestABulkJobIsHandedBackAtShutdown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 5000
	b.jobHooks("pending", n, jobDay)
	// The second batch waits at a held hook when the gateway stops.
	release := b.holdAt(b.dbURL, jobDay.Add(1500*time.Second))
	job := b.startJob(jobBody("cancel", ""))
	id := uuid.MustParse(job.ID)
	stored := func() store.BulkJob {
		j, err := b.q.GetBulkJob(b.ctx, store.GetBulkJobParams{ProjectID: uuid.MustParse(b.creds.ProjectID), ID: id})
		require.NoError(t, err)
		return j
	}
	require.Eventually(t, func() bool { return stored().Selected == 1000 }, 60*time.Second, 5*time.Millisecond)

	b.stop()
	require.Eventually(t, func() bool { j := stored(); return j.Runner == nil && j.LeaseExpiresAt == nil },
		30*time.Second, 5*time.Millisecond, "the job was not handed back")
	part := stored()
	require.Equal(t, bulkjob.StateRunning, part.State)
	require.EqualValues(t, 1000, part.Selected, "the batch under way at the stop was rolled back")
	release()

	other := b.secondGateway(testConfig(t, b.dbURL))
	done := other.waitJob(job.ID, "completed")
	require.EqualValues(t, n, done.Selected)
	require.EqualValues(t, n, done.Affected, "each hook cancelled once, by one gateway or the other")
	require.Zero(t, other.hooksIn("pending"))
}
