package bulkjob_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/bulk"
	"github.com/sundial-run/sundial/services/gateway/internal/bulkjob"
	"github.com/sundial-run/sundial/services/gateway/internal/hook"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// t0 is the start of the hooks' postAts and of the range jobs select.
var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

type bundle struct {
	pool *pgxpool.Pool
	tq   *storetest.Queries
	svc  *bulkjob.Service
	log  *slog.Logger
}

func setup(t *testing.T) bundle {
	t.Helper()
	pool, _ := pgtest.NewPool(t)
	return bundle{pool: pool, tq: storetest.New(pool), svc: bulkjob.NewService(pool),
		log: slog.New(slog.NewTextHandler(t.Output(), nil))}
}

func (b bundle) project(t *testing.T, planQuota int64) uuid.UUID {
	t.Helper()
	id := uuid.Must(uuid.NewV7())
	require.NoError(t, b.tq.InsertProjectForBulkTest(context.Background(), storetest.InsertProjectForBulkTestParams{
		ID: id, Domain: "receiver.example.com", PlanQuota: planQuota, PlanHardCapPercent: 100,
	}))
	return id
}

// hooks inserts n hooks of the project in status, a second apart from start.
func (b bundle) hooks(t *testing.T, project uuid.UUID, status string, n int, start time.Time) {
	t.Helper()
	require.NoError(t, b.tq.InsertHooksForJobTest(context.Background(), storetest.InsertHooksForJobTestParams{
		ProjectID: project, Start: start, Status: status, N: int32(n)}))
}

func (b bundle) count(t *testing.T, project uuid.UUID, status string) int64 {
	t.Helper()
	n, err := b.tq.CountHooksForJobTest(context.Background(), storetest.CountHooksForJobTestParams{ProjectID: project, Status: status})
	require.NoError(t, err)
	return n
}

func (b bundle) runner(batch int) *bulkjob.Runner {
	return bulkjob.NewRunner(b.pool, nil, bulkjob.RunnerConfig{BatchSize: batch, Poll: 10 * time.Millisecond}, b.log)
}

// spec is a job of action over [t0, t0+span).
func spec(t *testing.T, action string, span time.Duration) bulkjob.Spec {
	t.Helper()
	start, end := t0.Format(time.RFC3339), t0.Add(span).Format(time.RFC3339)
	s, err := bulkjob.Request{Action: &action, StartTime: &start, EndTime: &end}.Validate(1 << 20)
	require.NoError(t, err)
	return s
}

func (b bundle) create(t *testing.T, project uuid.UUID, s bulkjob.Spec) store.BulkJob {
	t.Helper()
	job, _, err := b.svc.Create(context.Background(), project, s)
	require.NoError(t, err)
	return job
}

func (b bundle) get(t *testing.T, job store.BulkJob) store.BulkJob {
	t.Helper()
	got, err := b.svc.Get(context.Background(), job.ProjectID, job.ID)
	require.NoError(t, err)
	return got
}

func TestAJobActsOnItsWholeSelectionInBatches(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := b.project(t, 100000)
	b.hooks(t, project, "failed", 2500, t0)
	b.hooks(t, project, "completed", 100, t0)
	b.hooks(t, project, "failed", 50, t0.Add(-time.Hour)) // before the range
	job := b.create(t, project, spec(t, "retry", 24*time.Hour))
	require.EqualValues(t, 2500, job.Total)
	require.Equal(t, bulkjob.StateRunning, job.State)

	took, err := b.runner(1000).RunOnce(context.Background())
	require.NoError(t, err)
	require.True(t, took)

	job = b.get(t, job)
	require.Equal(t, bulkjob.StateCompleted, job.State)
	require.EqualValues(t, 2500, job.Selected)
	require.EqualValues(t, 2500, job.Affected)
	require.EqualValues(t, 3, job.Batches)
	require.NotNil(t, job.FinishedAt)
	require.EqualValues(t, 2500, b.count(t, project, "pending"))
	require.EqualValues(t, 50, b.count(t, project, "failed"), "hooks outside the range stay")

	took, err = b.runner(1000).RunOnce(context.Background())
	require.NoError(t, err)
	require.False(t, took, "a completed job is not taken again")
}

func TestADryRunCountsAndSamplesAndCreatesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := b.project(t, 100000)
	b.hooks(t, project, "pending", 30, t0)
	b.hooks(t, project, "retry", 20, t0.Add(100*time.Millisecond))
	b.hooks(t, project, "completed", 10, t0)
	s := spec(t, "cancel", 24*time.Hour)
	s.DryRun = true
	job, dry, err := b.svc.Create(context.Background(), project, s)
	require.NoError(t, err)
	require.Equal(t, uuid.Nil, job.ID)
	require.EqualValues(t, 50, dry.Total)
	require.Len(t, dry.Sample, bulk.SampleSize)
	for i, h := range dry.Sample {
		require.Equal(t, t0.Add(time.Duration(i/2)*time.Second).Unix(), h.PostAt.Unix(), "the earliest first")
	}
	jobs, err := b.svc.List(context.Background(), project, nil, 10)
	require.NoError(t, err)
	require.Empty(t, jobs)
	require.EqualValues(t, 30, b.count(t, project, "pending"))
}

// holdAt holds the project's hook due at postAt locked until the returned
// release: a job's batch that reaches it waits there, whatever the
// machine's speed, so a test can act on a job known to be part way.
func (b bundle) holdAt(t *testing.T, project uuid.UUID, postAt time.Time) (release func()) {
	t.Helper()
	tx, err := b.pool.Begin(context.Background())
	require.NoError(t, err)
	require.NoError(t, storetest.New(tx).LockHookAtForTest(context.Background(),
		storetest.LockHookAtForTestParams{ProjectID: project, PostAt: postAt}))
	var once sync.Once
	release = func() { once.Do(func() { _ = tx.Rollback(context.Background()) }) }
	t.Cleanup(release)
	return release
}

func TestACancelledJobStopsBeforeItsNextBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := b.project(t, 100000)
	b.hooks(t, project, "pending", 100, t0)
	job := b.create(t, project, spec(t, "cancel", 24*time.Hour))
	// Batches of 10: the third waits at a held hook while the job is
	// cancelled.
	release := b.holdAt(t, project, t0.Add(25*time.Second))
	done := make(chan error, 1)
	go func() {
		_, err := b.runner(10).RunOnce(context.Background())
		done <- err
	}()
	require.Eventually(t, func() bool { return b.get(t, job).Selected == 20 }, 30*time.Second, 5*time.Millisecond)
	cancelled, err := b.svc.Cancel(context.Background(), project, job.ID)
	require.NoError(t, err)
	require.Equal(t, bulkjob.StateCancelling, cancelled.State)
	release()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the runner did not stop")
	}

	job = b.get(t, job)
	require.Equal(t, bulkjob.StateCancelled, job.State)
	require.EqualValues(t, 30, job.Selected, "the batch under way ends, and no other starts")
	require.EqualValues(t, 70, b.count(t, project, "pending"), "what the report says was cancelled was")

	_, err = b.svc.Cancel(context.Background(), project, job.ID)
	var finished *bulkjob.FinishedError
	require.ErrorAs(t, err, &finished)
	require.Equal(t, bulkjob.StateCancelled, finished.State)
}

func TestAJobHandedOnGoesOnFromItsCursor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := b.project(t, 100000)
	b.hooks(t, project, "completed", 1000, t0)
	job := b.create(t, project, spec(t, "replay", 24*time.Hour))

	// The first runner stops (its gateway shuts down) while its seventh
	// batch waits at a held hook.
	release := b.holdAt(t, project, t0.Add(325*time.Second))
	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_, _ = b.runner(50).RunOnce(ctx)
	}()
	require.Eventually(t, func() bool { return b.get(t, job).Selected == 300 }, 30*time.Second, 5*time.Millisecond)
	stop()
	<-stopped
	release()
	part := b.get(t, job)
	require.Equal(t, bulkjob.StateRunning, part.State)
	require.EqualValues(t, 300, part.Selected, "the batch under way at the stop was rolled back")

	took, err := b.runner(50).RunOnce(context.Background())
	require.NoError(t, err)
	require.True(t, took, "a job handed back is taken at once")
	job = b.get(t, job)
	require.Equal(t, bulkjob.StateCompleted, job.State)
	require.EqualValues(t, 1000, job.Affected)
	require.EqualValues(t, 1000, b.count(t, project, "pending"), "each hook replayed once")
}

func TestAJobWhoseRunnerDiedIsTakenWhenItsLeaseEnds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := b.project(t, 100000)
	b.hooks(t, project, "failed", 10, t0)
	job := b.create(t, project, spec(t, "retry", 24*time.Hour))
	// A runner took it and died.
	_, err := store.New(b.pool).TakeBulkJob(context.Background(), store.TakeBulkJobParams{Runner: "dead", LeaseSeconds: 3600})
	require.NoError(t, err)

	took, err := b.runner(5).RunOnce(context.Background())
	require.NoError(t, err)
	require.False(t, took, "a leased job is left to its runner")
	n, err := b.tq.ExpireBulkJobLeaseForTest(context.Background(), job.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	took, err = b.runner(5).RunOnce(context.Background())
	require.NoError(t, err)
	require.True(t, took)
	require.Equal(t, bulkjob.StateCompleted, b.get(t, job).State)
	require.EqualValues(t, 10, b.count(t, project, "pending"))
}

func TestAReplayJobFailsWhenTheQuotaRunsOut(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := b.project(t, 250)
	b.hooks(t, project, "completed", 1000, t0)
	job := b.create(t, project, spec(t, "replay", 24*time.Hour))
	took, err := b.runner(100).RunOnce(context.Background())
	require.NoError(t, err)
	require.True(t, took)

	job = b.get(t, job)
	require.Equal(t, bulkjob.StateFailed, job.State)
	require.Equal(t, "quota_exhausted", *job.ErrorCode)
	require.EqualValues(t, 200, job.Affected, "the batches before the quota ran out stay")
	require.EqualValues(t, 200, b.count(t, project, "pending"))
}

func TestAProjectHasABoundedNumberOfUnfinishedJobs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := b.project(t, 100000)
	for range bulkjob.MaxUnfinished {
		b.create(t, project, spec(t, "cancel", time.Hour))
	}
	_, _, err := b.svc.Create(context.Background(), project, spec(t, "cancel", time.Hour))
	require.ErrorIs(t, err, bulkjob.ErrTooMany)
	jobs, err := b.svc.List(context.Background(), project, nil, bulkjob.MaxListed)
	require.NoError(t, err)
	require.Len(t, jobs, bulkjob.MaxUnfinished)
	_, err = b.svc.Cancel(context.Background(), project, jobs[0].ID)
	require.NoError(t, err)
	_, err = b.svc.Get(context.Background(), b.project(t, 10), jobs[0].ID)
	require.True(t, errors.Is(err, bulkjob.ErrNotFound), "another project's job is not found")
}

func TestRequestsAreValidatedNamingTheField(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	bulkEdit := hook.EditRequest{Path: str("/other")}
	for name, tc := range map[string]struct {
		req    bulkjob.Request
		fields []string
	}{
		"no action":        {bulkjob.Request{StartTime: str("2030-01-01T00:00:00Z"), EndTime: str("2030-01-02T00:00:00Z")}, []string{"action"}},
		"unknown action":   {bulkjob.Request{Action: str("delete"), StartTime: str("2030-01-01T00:00:00Z")}, []string{"action", "endTime"}},
		"no range":         {bulkjob.Request{Action: str("retry")}, []string{"startTime", "endTime"}},
		"reversed range":   {bulkjob.Request{Action: str("retry"), StartTime: str("2030-01-02T00:00:00Z"), EndTime: str("2030-01-01T00:00:00Z")}, []string{"endTime"}},
		"edit on a cancel": {bulkjob.Request{Action: str("cancel"), StartTime: str("2030-01-01T00:00:00Z"), EndTime: str("2030-01-02T00:00:00Z"), Edit: &bulkEdit}, []string{"edit"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := tc.req.Validate(1 << 20)
			var bad *bulk.InvalidError
			require.ErrorAs(t, err, &bad)
			var got []string
			for _, p := range bad.Problems {
				got = append(got, p.Field)
			}
			require.Equal(t, tc.fields, got)
		})
	}
}

func TestListPagesFollowTheCursorNewestFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := b.project(t, 100000)
	var ids []uuid.UUID
	for range 5 {
		ids = append(ids, b.create(t, project, spec(t, "cancel", time.Hour)).ID)
	}
	b.create(t, b.project(t, 10), spec(t, "cancel", time.Hour)) // another project's

	var got []uuid.UUID
	pg := bulkjob.Page{Limit: 2}
	for pages := 0; ; pages++ {
		require.Less(t, pages, 3, "more pages than jobs")
		page, err := b.svc.ListPage(context.Background(), project, pg)
		require.NoError(t, err)
		require.EqualValues(t, 5, page.TotalItems)
		require.False(t, page.Capped)
		for _, j := range page.Jobs {
			got = append(got, j.ID)
		}
		if page.NextCursor == "" {
			break
		}
		pg.Cursor = page.NextCursor
	}
	// Ids are UUIDv7, made in creation order: newest first is descending.
	want := slices.Clone(ids)
	slices.Reverse(want)
	require.Equal(t, want, got)
}
