package scenario

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/tests/bench/internal/check"
	"github.com/sundial-run/sundial/tests/bench/internal/load"
	"github.com/sundial-run/sundial/tests/bench/internal/report"
	"github.com/sundial-run/sundial/tests/bench/internal/stats"
)

// The bulk-job scenario: one cancel job over a large backlog of far-future
// hooks, created while a plain flow is being delivered, measured for its
// duration and for what it costs the flow's lateness (docs/choices.md,
// "Bulk jobs"). The job's runner is the gateway's, so the gateway stays
// up through the delivery.
const (
	// bulkJobStartMax is the latest the job is created after the flow's
	// first postAt: late enough for the flow's lateness to have settled
	// after its start, early in a flow long enough to cover the job.
	bulkJobStartMax = 10 * time.Second
	// bulkJobPoll is how often the job is read until it ends: often enough
	// to time its end well within a batch and its pause, rarely enough to
	// cost the gateway nothing measurable.
	bulkJobPoll = 200 * time.Millisecond
	// bulkJobDeadline bounds the wait for the job's end after its
	// creation, so that a job that stalls fails the run instead of
	// holding it.
	bulkJobDeadline = 20 * time.Minute
)

// bulkJobShape is the job's place in the flow and its range.
type bulkJobShape struct {
	// rows are the far-future hooks loaded; the job must select them all.
	rows int
	// start is when the job is created after the flow's first postAt.
	start             time.Duration
	rate, flowSeconds int
	poll, deadline    time.Duration
}

func bulkJobOf(c Config) *bulkJobShape {
	return &bulkJobShape{
		rows: c.BulkJobRows, start: bulkJobStart(c.BulkJobFlowSeconds),
		rate: c.SteadyRate, flowSeconds: c.BulkJobFlowSeconds, poll: bulkJobPoll, deadline: bulkJobDeadline,
	}
}

// bulkJobStart is a quarter into the flow, at most bulkJobStartMax: a
// short (quick) flow still has most of itself left for the job.
func bulkJobStart(flowSeconds int) time.Duration {
	return min(bulkJobStartMax, time.Duration(flowSeconds)*time.Second/4)
}

// bulkJobPlan is the bulk-job scenario's plan: the steady flow for
// BulkJobFlowSeconds with BulkJobRows far-future hooks loaded first.
func bulkJobPlan(c Config) plan {
	c.SteadySeconds = c.BulkJobFlowSeconds
	p := steady("bulk-job", c, c.BulkJobRows)
	p.bulkJob = bulkJobOf(c)
	return p
}

// bulkJobRange is the job's postAt range from now: the backlog is due
// from a year ahead over a day, and the calibration's hooks a year ahead,
// so a range from a little under a year to two years holds both and none
// of the flow.
func bulkJobRange(now time.Time) (start, end time.Time) {
	return now.AddDate(0, 0, 360), now.AddDate(2, 0, 0)
}

// bulkJobAPI is what the scenario asks of the API: *load.Client.
type bulkJobAPI interface {
	CreateBulkJob(ctx context.Context, action string, start, end time.Time) (load.BulkJob, error)
	GetBulkJob(ctx context.Context, id uuid.UUID) (load.BulkJob, error)
}

// apiInstance is an instance whose API the scenario can call beside the
// hooks' creation.
type apiInstance interface {
	API() *load.Client
}

// bulkJobRun is what creating and polling the job saw.
type bulkJobRun struct {
	job load.BulkJob
	// posted is when the create was sent, seen when the job was read
	// ended (or the deadline passed).
	posted, seen      time.Time
	polls, pollErrors int
	// ended says the job ended before the deadline.
	ended bool
	err   error
}

// run creates the cancel job at t0 + b.start and reads it every b.poll
// until it ends or b.deadline after its creation. A create that fails is
// the run's error; a read that fails is counted and the polling goes on.
func (b *bulkJobShape) run(ctx context.Context, api bulkJobAPI, t0 time.Time) bulkJobRun {
	if err := waitUntil(ctx, t0.Add(b.start)); err != nil {
		return bulkJobRun{err: err}
	}
	out := bulkJobRun{posted: time.Now()}
	start, end := bulkJobRange(out.posted)
	job, err := api.CreateBulkJob(ctx, "cancel", start, end)
	if err != nil {
		return bulkJobRun{err: err}
	}
	out.job, out.seen = job, time.Now()
	deadline := out.posted.Add(b.deadline)
	tick := time.NewTicker(b.poll)
	defer tick.Stop()
	for !out.job.Ended() && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			out.err = ctx.Err()
			return out
		case <-tick.C:
		}
		got, err := api.GetBulkJob(ctx, job.ID)
		out.polls++
		if err != nil {
			out.pollErrors++
			continue
		}
		out.job, out.seen = got, time.Now()
	}
	out.ended = out.job.Ended()
	return out
}

// figures are the job's and the flow's around it; t0 is the flow's first
// postAt.
func (b *bulkJobShape) figures(r bulkJobRun, flow []check.Hook, arrivals []check.Arrival, t0 time.Time) *report.BulkJob {
	j := r.job
	out := &report.BulkJob{
		Rows: b.rows, ID: j.ID.String(), State: j.State,
		Total: j.Total, Selected: j.Selected, Affected: j.Affected, Batches: j.Batches,
		StartMs:     stats.Ms(j.CreatedAt.Sub(t0)),
		WallSeconds: math.Round(r.seen.Sub(r.posted).Seconds()*1000) / 1000,
		Polls:       r.polls, PollErrors: r.pollErrors,
		FlowRate: b.rate, FlowSeconds: b.flowSeconds,
	}
	f := check.Compare(flow, arrivals)
	out.Flow = f.Lateness
	if j.Error != nil {
		out.ErrorCode, out.Error = j.Error.Code, j.Error.Message
	}
	// A job that never ended ran, as far as the run knows, until it was
	// last read.
	end := r.seen
	if j.FinishedAt != nil {
		end = *j.FinishedAt
		d := end.Sub(j.CreatedAt)
		out.DurationSeconds = math.Round(d.Seconds()*1000) / 1000
		out.HooksPerSecond = stats.PerSecond(int(j.Affected), d)
	}
	out.EndMs = stats.Ms(end.Sub(t0))
	var during, outside []check.Hook
	for _, h := range flow {
		if !h.PostAt.Before(j.CreatedAt) && h.PostAt.Before(end) {
			during = append(during, h)
		} else {
			outside = append(outside, h)
		}
	}
	out.During = check.Compare(during, arrivals).Lateness
	out.Outside = check.Compare(outside, arrivals).Lateness
	out.FlowEndedFirst = f.Scheduled > 0 && f.LastPostAt.Before(end)
	return out
}

// errNoAPI is an instance the scenario cannot ask for a bulk job.
var errNoAPI = errors.New("bulk-job: the instance has no API to create a bulk job with")
