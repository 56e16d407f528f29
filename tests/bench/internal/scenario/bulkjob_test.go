package scenario

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/tests/bench/internal/check"
	"github.com/sundial-run/sundial/tests/bench/internal/load"
)

// The plan is the steady flow for the scenario's own length with the
// backlog loaded first, and the job created a quarter into the flow, at
// most bulkJobStartMax.
func TestBulkJobPlan(t *testing.T) {
	t.Parallel()
	c := Config{SteadyRate: 500, SteadySeconds: 60, BulkJobRows: 1_000_000, BulkJobFlowSeconds: 180}
	p := bulkJobPlan(c)
	require.Equal(t, "bulk-job", p.name)
	require.Equal(t, 500*180, p.hooks)
	require.Equal(t, 180*time.Second, p.spread)
	require.Equal(t, 1_000_000, p.backlog)
	require.NotNil(t, p.bulkJob)
	require.Equal(t, bulkJobStartMax, p.bulkJob.start)
	require.Equal(t, 2*time.Second, bulkJobStart(8), "a short flow keeps most of itself for the job")

	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	start, end := bulkJobRange(now)
	for _, due := range []time.Time{now.AddDate(1, 0, 0), now.AddDate(1, 0, 1)} {
		require.False(t, due.Before(start), "the backlog and the calibration's hooks are in the range")
		require.True(t, due.Before(end))
	}
	require.True(t, now.Add(time.Hour).Before(start), "the flow is not")
}

// fakeBulkJobs is the API's bulk jobs for one job: created running, read
// running twice, then once failing, then completed.
type fakeBulkJobs struct {
	t       *testing.T
	created time.Time
	id      uuid.UUID
	// always keeps the job running.
	always bool

	mu    sync.Mutex
	body  map[string]string
	reads int
}

func (f *fakeBulkJobs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// assert, not require: this runs on the server's goroutine.
	assert.Equal(f.t, "key", r.Header.Get("X-API-Key"))
	job := load.BulkJob{ID: f.id, Action: "cancel", State: "running", Total: 1000, CreatedAt: f.created}
	status := http.StatusOK
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/bulk-jobs":
		assert.NoError(f.t, json.NewDecoder(r.Body).Decode(&f.body))
		status = http.StatusAccepted
	case r.Method == http.MethodGet && r.URL.Path == "/v1/bulk-jobs/"+f.id.String():
		f.reads++
		switch {
		case f.reads == 3:
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		case f.reads > 3 && !f.always:
			done := f.created.Add(1500 * time.Millisecond)
			job.State, job.Selected, job.Affected, job.Batches, job.FinishedAt = "completed", 1000, 1000, 1, &done
		}
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	assert.NoError(f.t, json.NewEncoder(w).Encode(map[string]load.BulkJob{"data": job}))
}

// The job is created once over the backlog's range and read until it
// ends, a failed read counted and passed over.
func TestBulkJobRunPollsUntilTheEnd(t *testing.T) {
	t.Parallel()
	fake := &fakeBulkJobs{t: t, created: time.Now().Truncate(time.Millisecond), id: uuid.New()}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	b := &bulkJobShape{rows: 900, poll: time.Millisecond, deadline: time.Minute}
	t0 := time.Now()
	r := b.run(t.Context(), load.NewClient(srv.URL, "key", 1), t0)
	require.NoError(t, r.err)
	require.True(t, r.ended)
	require.Equal(t, "completed", r.job.State)
	require.Equal(t, 4, r.polls)
	require.Equal(t, 1, r.pollErrors)
	require.False(t, r.seen.Before(r.posted))

	require.Equal(t, "cancel", fake.body["action"])
	start, err := time.Parse(time.RFC3339Nano, fake.body["startTime"])
	require.NoError(t, err)
	end, err := time.Parse(time.RFC3339Nano, fake.body["endTime"])
	require.NoError(t, err)
	wantStart, wantEnd := bulkJobRange(r.posted)
	require.True(t, start.Equal(wantStart), "%s, want %s", start, wantStart)
	require.True(t, end.Equal(wantEnd))

	got := b.figures(r, nil, nil, t0)
	require.True(t, got.OK(), got.Problems())
	require.Equal(t, 1.5, got.DurationSeconds)
	require.Equal(t, 666.7, got.HooksPerSecond)
}

// A job that does not end is read until the deadline and reported as it
// was last seen.
func TestBulkJobRunStopsAtTheDeadline(t *testing.T) {
	t.Parallel()
	fake := &fakeBulkJobs{t: t, created: time.Now(), id: uuid.New(), always: true}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	b := &bulkJobShape{rows: 900, poll: time.Millisecond, deadline: 20 * time.Millisecond}
	r := b.run(t.Context(), load.NewClient(srv.URL, "key", 1), time.Now())
	require.NoError(t, r.err)
	require.False(t, r.ended)
	require.Equal(t, "running", r.job.State)
	got := b.figures(r, nil, nil, time.Now())
	require.False(t, got.OK())
	require.Zero(t, got.DurationSeconds, "no finishedAt, no duration")
}

// A create the API refuses is the run's error.
func TestBulkJobRunFailsWithoutTheAPI(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	b := &bulkJobShape{poll: time.Millisecond, deadline: time.Minute}
	r := b.run(t.Context(), load.NewClient(srv.URL, "key", 1), time.Now())
	require.ErrorContains(t, r.err, "POST /v1/bulk-jobs: 404")
}

// The flow's hooks due from the job's creation to its end are the
// "during" ones, the others "outside"; a flow that ends before the job
// says so.
func TestBulkJobFiguresSplitTheFlow(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var flow []check.Hook
	var arrivals []check.Arrival
	for i := range 10 {
		h := check.Hook{ID: uuid.New(), PostAt: t0.Add(time.Duration(i) * 100 * time.Millisecond)}
		late := 2 * time.Millisecond
		if i >= 3 && i < 6 {
			late = 20 * time.Millisecond
		}
		flow = append(flow, h)
		arrivals = append(arrivals, check.Arrival{ID: h.ID, At: h.PostAt.Add(late)})
	}
	finished := t0.Add(600 * time.Millisecond)
	r := bulkJobRun{
		job: load.BulkJob{
			ID: uuid.New(), State: "completed", Total: 1200, Selected: 1200, Affected: 1200, Batches: 2,
			CreatedAt: t0.Add(300 * time.Millisecond), FinishedAt: &finished,
		},
		posted: t0.Add(290 * time.Millisecond), seen: t0.Add(700 * time.Millisecond), ended: true,
	}
	b := &bulkJobShape{rows: 1000, rate: 10, flowSeconds: 1}
	got := b.figures(r, flow, arrivals, t0)
	require.True(t, got.OK())
	require.Equal(t, 3, got.During.Count)
	require.Equal(t, 20.0, got.During.P99Ms)
	require.Equal(t, 7, got.Outside.Count)
	require.Equal(t, 2.0, got.Outside.MaxMs)
	require.Equal(t, 10, got.Flow.Count)
	require.Equal(t, 300.0, got.StartMs)
	require.Equal(t, 600.0, got.EndMs)
	require.Equal(t, 0.3, got.DurationSeconds)
	require.Equal(t, 0.41, got.WallSeconds)
	require.Equal(t, 4000.0, got.HooksPerSecond)
	require.False(t, got.FlowEndedFirst)

	finished = t0.Add(2 * time.Second)
	got = b.figures(r, flow, arrivals, t0)
	require.True(t, got.FlowEndedFirst)
	require.Equal(t, 7, got.During.Count, "the flow's part of the job")

	r.job.Affected = 1199
	require.False(t, b.figures(r, flow, arrivals, t0).OK(), "a selected hook left")
	r.job.Affected, r.job.Selected = 900, 900
	require.False(t, b.figures(r, flow, arrivals, t0).OK(), "fewer selected than loaded")
}
