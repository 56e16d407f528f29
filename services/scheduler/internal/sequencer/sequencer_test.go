package sequencer_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/retry"
	"github.com/sundial-run/sundial/services/scheduler/internal/claim"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/result"
	"github.com/sundial-run/sundial/services/scheduler/internal/runstep"
	"github.com/sundial-run/sundial/services/scheduler/internal/sequencer"
	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const domain = "receiver.example.com"

// policy is the project's: two retries, so that only a step whose
// retryOverride allows none fails at its first failed attempt.
var policy = retry.Policy{MinRetries: 2, DelaySecs: 30, Strategy: retry.StrategyFixed, BackoffFactor: 2, MaxDelaySecs: 60}

// noRetries is a step's retryOverride: its first failure is final.
const noRetries = `{"minRetries": 0, "delaySecs": 1, "strategy": "fixed", "backoffFactor": 2, "jitter": false}`

// noLead makes a sequencer write no run ahead of its slot (nothing is due
// within a nanosecond and not yet due), so that the tests of the due scan
// see only its runs; prepare_test.go tests writing ahead.
const noLead = time.Nanosecond

type bundle struct {
	pool    *pgxpool.Pool
	tq      *storetest.Queries
	js      jetstream.JetStream
	log     *slog.Logger
	project uuid.UUID
	seq     *sequencer.Sequencer
	claimer *claim.Claimer
	applier *result.Applier
	batcher *result.Batcher
}

func setup(t *testing.T) bundle {
	t.Helper()
	pool, _ := pgtest.NewPool(t)
	_, js := natstest.Start(t, natstest.Options{}).Connect(t)
	require.NoError(t, event.EnsureStreams(context.Background(), js, event.DefaultReplicas))
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	tq := storetest.New(pool)
	applier, err := result.New(pool, js, event.DefaultReplicas, log, nil)
	require.NoError(t, err)
	batcher, err := applier.NewBatcher(result.BatchConfig{MaxBatch: 100, InFlight: 2})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); batcher.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-stopped })
	claimer, err := claim.New(pool, js, claim.Config{BatchSize: 1000, Lease: time.Minute, PollInterval: time.Second, MaxRedrives: 5}, log)
	require.NoError(t, err)
	return bundle{pool: pool, tq: tq, js: js, log: log, project: fixture.Project(t, tq, domain, policy),
		seq: sequencer.New(pool, sequencer.Config{Lead: noLead}, log), claimer: claimer, applier: applier, batcher: batcher}
}

// def is a sequence as the gateway would store it.
type def struct {
	schedule string
	steps    string
	startIn  time.Duration
	endIn    *time.Duration
	catchUp  string
	overlap  string
}

func (b bundle) sequence(t *testing.T, d def) storetest.Sequence {
	t.Helper()
	if d.catchUp == "" {
		d.catchUp = "latest"
	}
	if d.overlap == "" {
		d.overlap = "allow"
	}
	var end *float64
	if d.endIn != nil {
		secs := d.endIn.Seconds()
		end = &secs
	}
	id := uuid.Must(uuid.NewV7())
	seq, err := b.tq.InsertSequenceForTest(context.Background(), storetest.InsertSequenceForTestParams{
		ID: id, ProjectID: b.project, Name: "seq-" + id.String(),
		Schedule: json.RawMessage(d.schedule), Steps: json.RawMessage(d.steps),
		StartInSeconds: d.startIn.Seconds(), EndInSeconds: end, CatchUp: d.catchUp, Overlap: d.overlap,
	})
	require.NoError(t, err)
	return seq
}

func (b bundle) scan(t *testing.T) {
	t.Helper()
	more, err := b.seq.ScanOnce(context.Background())
	require.NoError(t, err)
	require.False(t, more)
}

func (b bundle) runs(t *testing.T, seq storetest.Sequence) []storetest.SequenceRun {
	t.Helper()
	runs, err := b.tq.ListRunsForTest(context.Background(), seq.ID)
	require.NoError(t, err)
	return runs
}

func (b bundle) run(t *testing.T, id uuid.UUID) storetest.SequenceRun {
	t.Helper()
	run, err := b.tq.GetRunForTest(context.Background(), id)
	require.NoError(t, err)
	return run
}

// steps are a run's steps' statuses by name.
func (b bundle) steps(t *testing.T, run uuid.UUID) map[string]string {
	t.Helper()
	rows, err := b.tq.ListRunStepsForTest(context.Background(), run)
	require.NoError(t, err)
	out := map[string]string{}
	for _, r := range rows {
		out[r.Name] = r.Status
	}
	return out
}

// hooks are a run's hooks by step name.
func (b bundle) hooks(t *testing.T, run uuid.UUID) map[string]storetest.Hook {
	t.Helper()
	rows, err := b.tq.ListRunHooksForTest(context.Background(), &run)
	require.NoError(t, err)
	out := map[string]storetest.Hook{}
	for _, r := range rows {
		require.NotNil(t, r.SequenceStep)
		out[*r.SequenceStep] = r
	}
	return out
}

func (b bundle) sequenceRow(t *testing.T, seq storetest.Sequence) storetest.Sequence {
	t.Helper()
	row, err := b.tq.GetSequenceForTest(context.Background(), seq.ID)
	require.NoError(t, err)
	return row
}

// deliver claims the due hooks, as the scheduler does, and applies the
// result of the given one through the result path: a success, or a
// failure.
func (b bundle) deliver(t *testing.T, h storetest.Hook, success bool) {
	t.Helper()
	outcome := eventv1.Outcome_OUTCOME_SUCCESS
	if !success {
		outcome = eventv1.Outcome_OUTCOME_FAILURE
	}
	b.report(t, h, outcome)
}

// report claims the due hooks and applies a result of the given outcome
// for h.
func (b bundle) report(t *testing.T, h storetest.Hook, outcome eventv1.Outcome) {
	t.Helper()
	_, err := b.claimer.ClaimOnce(context.Background())
	require.NoError(t, err)
	h = fixture.Get(t, b.tq, h.ID)
	require.NotNil(t, h.LeaseExpiresAt, "hook %s claimed", h.ID)
	r := &eventv1.AttemptResult{
		HookId: h.ID.String(), ProjectId: h.ProjectID.String(), Attempt: h.Attempts + 1, LeaseSeq: h.LeaseSeq,
		Outcome: outcome, StatusCode: 200,
		StartedAt: timestamppb.New(time.Now().Add(-time.Second)), Duration: durationpb.New(time.Millisecond),
	}
	switch outcome {
	case eventv1.Outcome_OUTCOME_FAILURE:
		r.StatusCode, r.Error = 500, "HTTP 500"
	case eventv1.Outcome_OUTCOME_ASYNC:
		r.StatusCode = 202
	}
	require.NoError(t, b.batcher.Handle(context.Background(), fixture.Results(t, r)))
}

func statuses(runs []storetest.SequenceRun) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.Status
		if r.SkipReason != nil {
			out[i] += ":" + *r.SkipReason
		}
	}
	return out
}

const hourly = `{"every": "1h"}`

// TestARootStepIsDeliveredAtItsSlot: a due slot becomes a running run whose
// root step has its hook, due now, with its sequence data, the step's
// path, data and retryOverride, counted in the quota; the other steps wait;
// the sequence moves to its next slot.
func TestARootStepIsDeliveredAtItsSlot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seq := b.sequence(t, def{schedule: hourly, startIn: -time.Second, steps: `[
		{"name": "fetch", "path": "/fetch?x=1", "data": {"k": [1, 2]}, "retryOverride": ` + noRetries + `},
		{"name": "report", "path": "/report", "data": {}, "dependsOn": ["fetch"]}]`})

	b.scan(t)

	runs := b.runs(t, seq)
	require.Len(t, runs, 1)
	run := runs[0]
	require.Equal(t, "running", run.Status)
	require.Equal(t, "schedule", run.Trigger)
	require.True(t, run.Slot.Equal(seq.StartAt))
	require.Equal(t, map[string]string{"fetch": "pending", "report": "waiting"}, b.steps(t, run.ID))
	hooks := b.hooks(t, run.ID)
	require.Len(t, hooks, 1)
	h := hooks["fetch"]
	require.Equal(t, "pending", h.Status)
	require.Equal(t, "/fetch?x=1", h.Path)
	require.Equal(t, domain, h.Domain)
	require.JSONEq(t, `{"k": [1, 2]}`, string(h.Data))
	require.JSONEq(t, noRetries, string(h.RetryOverride))
	require.Equal(t, seq.ID, *h.SequenceID)
	require.True(t, h.SequenceLastRunAt.Equal(seq.StartAt))
	require.Equal(t, run.ID, *h.SequenceRunID)
	require.False(t, h.RunAt.After(fixture.DBNow(t, b.tq)))
	used, err := b.tq.UsedForTest(context.Background(), b.project)
	require.NoError(t, err)
	require.EqualValues(t, 1, used)

	row := b.sequenceRow(t, seq)
	require.Equal(t, "active", row.Status)
	require.True(t, row.NextRunAt.Equal(seq.StartAt.Add(time.Hour)), "next %v", row.NextRunAt)
	require.True(t, row.LastRunAt.Equal(seq.StartAt))

	b.scan(t)
	require.Len(t, b.runs(t, seq), 1, "a slot runs once")
}

// TestDependentsWaitForAllTheirDependencies: a step starts only once every
// step it depends on has completed, and the run completes with its last
// step.
func TestDependentsWaitForAllTheirDependencies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seq := b.sequence(t, def{schedule: hourly, startIn: -time.Second, steps: `[
		{"name": "a", "path": "/a", "data": {}},
		{"name": "b", "path": "/b", "data": {}},
		{"name": "c", "path": "/c", "data": {"n": 3}, "dependsOn": ["a", "b"], "retryOverride": ` + noRetries + `}]`})
	b.scan(t)
	run := b.runs(t, seq)[0]
	hooks := b.hooks(t, run.ID)
	require.Len(t, hooks, 2)

	b.deliver(t, hooks["a"], true)
	require.Equal(t, map[string]string{"a": "completed", "b": "pending", "c": "waiting"}, b.steps(t, run.ID))
	require.Len(t, b.hooks(t, run.ID), 2, "c waits for b")

	b.deliver(t, hooks["b"], true)
	require.Equal(t, map[string]string{"a": "completed", "b": "completed", "c": "pending"}, b.steps(t, run.ID))
	c := b.hooks(t, run.ID)["c"]
	require.Equal(t, "pending", c.Status)
	require.Equal(t, "/c", c.Path)
	require.JSONEq(t, `{"n": 3}`, string(c.Data))
	require.JSONEq(t, noRetries, string(c.RetryOverride), "the step's retryOverride")
	require.True(t, c.SequenceLastRunAt.Equal(run.Slot))
	require.Equal(t, "running", b.run(t, run.ID).Status)

	b.deliver(t, c, true)
	done := b.run(t, run.ID)
	require.Equal(t, "completed", done.Status)
	require.NotNil(t, done.FinishedAt)
}

// TestAFailedStepSkipsItsDependents: a step whose hook fails for good
// (its retryOverride allows no retry) skips every step that depends on it,
// directly or not; the run fails once its other steps are done.
func TestAFailedStepSkipsItsDependents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seq := b.sequence(t, def{schedule: hourly, startIn: -time.Second, steps: `[
		{"name": "a", "path": "/a", "data": {}, "retryOverride": ` + noRetries + `},
		{"name": "b", "path": "/b", "data": {}, "dependsOn": ["a"]},
		{"name": "c", "path": "/c", "data": {}, "dependsOn": ["b"]},
		{"name": "d", "path": "/d", "data": {}}]`})
	b.scan(t)
	run := b.runs(t, seq)[0]
	hooks := b.hooks(t, run.ID)

	b.deliver(t, hooks["a"], false)
	require.Equal(t, "failed", fixture.Get(t, b.tq, hooks["a"].ID).Status)
	require.Equal(t, map[string]string{"a": "failed", "b": "skipped", "c": "skipped", "d": "pending"}, b.steps(t, run.ID))
	require.Equal(t, "running", b.run(t, run.ID).Status, "d is still pending")

	b.deliver(t, hooks["d"], true)
	require.Equal(t, "failed", b.run(t, run.ID).Status)
	require.Len(t, b.hooks(t, run.ID), 2)
}

// TestARetriedStepIsNotFinished: a failure with retries left leaves the
// step pending.
func TestARetriedStepIsNotFinished(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seq := b.sequence(t, def{schedule: hourly, startIn: -time.Second, steps: `[
		{"name": "a", "path": "/a", "data": {}}, {"name": "b", "path": "/b", "data": {}, "dependsOn": ["a"]}]`})
	b.scan(t)
	run := b.runs(t, seq)[0]

	b.deliver(t, b.hooks(t, run.ID)["a"], false)

	require.Equal(t, "retry", b.hooks(t, run.ID)["a"].Status)
	require.Equal(t, map[string]string{"a": "pending", "b": "waiting"}, b.steps(t, run.ID))
}

// TestAStepGoneFromTheDefinitionIsSkipped: a waiting step takes its path
// and data from the definition when it starts; one the definition no
// longer has is skipped.
func TestAStepGoneFromTheDefinitionIsSkipped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seq := b.sequence(t, def{schedule: hourly, startIn: -time.Second, steps: `[
		{"name": "a", "path": "/a", "data": {}},
		{"name": "b", "path": "/b", "data": {}, "dependsOn": ["a"]},
		{"name": "c", "path": "/c", "data": {"v": 1}, "dependsOn": ["a"]}]`})
	b.scan(t)
	run := b.runs(t, seq)[0]
	n, err := b.tq.ReplaceStepsForTest(context.Background(), storetest.ReplaceStepsForTestParams{ID: seq.ID,
		Steps: json.RawMessage(`[{"name": "a", "path": "/a", "data": {}}, {"name": "c", "path": "/c2", "data": {"v": 2}, "dependsOn": ["a"]}]`)})
	require.NoError(t, err)
	require.EqualValues(t, 1, n)

	b.deliver(t, b.hooks(t, run.ID)["a"], true)

	require.Equal(t, map[string]string{"a": "completed", "b": "skipped", "c": "pending"}, b.steps(t, run.ID))
	c := b.hooks(t, run.ID)["c"]
	require.Equal(t, "/c2", c.Path)
	require.JSONEq(t, `{"v": 2}`, string(c.Data))
}

// TestACancelledStepHookFailsItsStep: a step hook deleted through the API
// (cancel, DELETE) counts as failed for its run, found by the next scan.
func TestACancelledStepHookFailsItsStep(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seq := b.sequence(t, def{schedule: hourly, startIn: -time.Second, steps: `[
		{"name": "a", "path": "/a", "data": {}}, {"name": "b", "path": "/b", "data": {}, "dependsOn": ["a"]}]`})
	b.scan(t)
	run := b.runs(t, seq)[0]
	n, err := b.tq.DeleteHookForTest(context.Background(), b.hooks(t, run.ID)["a"].ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)

	b.scan(t)

	require.Equal(t, map[string]string{"a": "failed", "b": "skipped"}, b.steps(t, run.ID))
	require.Equal(t, "failed", b.run(t, run.ID).Status)
}

// TestAStepPastTheHardCapFails: a step hook the project's hard cap leaves
// no room for is recorded failed ("quota exceeded"), not counted, and its
// step fails; the others of the run are judged one by one.
func TestAStepPastTheHardCapFails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.tq.SetPlanForTest(context.Background(), storetest.SetPlanForTestParams{ProjectID: b.project, PlanQuota: 10, HooksCreated: 9})
	require.NoError(t, err)
	seq := b.sequence(t, def{schedule: hourly, startIn: -time.Second, steps: `[
		{"name": "a", "path": "/a", "data": {}}, {"name": "b", "path": "/b", "data": {}},
		{"name": "c", "path": "/c", "data": {}, "dependsOn": ["b"]}]`})

	b.scan(t)

	run := b.runs(t, seq)[0]
	require.Equal(t, map[string]string{"a": "pending", "b": "failed", "c": "skipped"}, b.steps(t, run.ID))
	over := b.hooks(t, run.ID)["b"]
	require.Equal(t, "failed", over.Status)
	require.Equal(t, runstep.QuotaExceeded, *over.FailureError)
	require.Nil(t, over.RunAt)
	used, err := b.tq.UsedForTest(context.Background(), b.project)
	require.NoError(t, err)
	require.EqualValues(t, 10, used)

	b.deliver(t, b.hooks(t, run.ID)["a"], true)
	require.Equal(t, "failed", b.run(t, run.ID).Status)
}

// TestStepHooksClaimUsageThresholds: step hooks count against the quota as
// created hooks do, so the thresholds they reach first are claimed and
// their alerts written to the outbox (the notifier's sweeper sends them),
// each once a period: 7 of 10 used, three root steps reach 75 % and 100 %;
// the next run's steps reach nothing new (150 % is past the hard cap).
func TestStepHooksClaimUsageThresholds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.tq.SetPlanForTest(ctx, storetest.SetPlanForTestParams{ProjectID: b.project, PlanQuota: 10, HooksCreated: 7})
	require.NoError(t, err)
	steps := `[{"name": "a", "path": "/a"}, {"name": "b", "path": "/b"}, {"name": "c", "path": "/c"}]`
	b.sequence(t, def{schedule: hourly, startIn: -time.Second, steps: steps})

	b.scan(t)

	claimed, err := b.tq.AlertedThresholdsForTest(ctx, b.project)
	require.NoError(t, err)
	require.ElementsMatch(t, []int32{75, 100}, claimed)
	alerts, err := b.tq.ListAlertsForTest(ctx, b.project)
	require.NoError(t, err)
	require.Len(t, alerts, 2)
	percents := map[int32]int64{}
	for _, a := range alerts {
		require.Equal(t, event.AlertKindQuotaThreshold, a.Kind)
		var alert eventv1.Alert
		require.NoError(t, proto.Unmarshal(a.Body, &alert))
		require.Equal(t, eventv1.AlertKind_ALERT_KIND_QUOTA_THRESHOLD, alert.GetKind())
		require.EqualValues(t, 10, alert.GetQuota())
		percents[alert.GetThresholdPercent()] = alert.GetUsage()
	}
	require.Equal(t, map[int32]int64{75: 10, 100: 10}, percents)

	b.sequence(t, def{schedule: hourly, startIn: -time.Second, steps: steps})
	b.scan(t)
	alerts, err = b.tq.ListAlertsForTest(ctx, b.project)
	require.NoError(t, err)
	require.Len(t, alerts, 2, "each threshold once a period")
}

// TestCatchUp: the scheduler was down across several slots; one scan
// records each as a run by the sequence's catchUp. every 2m from 5.5
// minutes ago: three missed slots (-5.5, -3.5, -1.5 min), none within the
// last minute. every 1m from 3.5 minutes ago: three missed and one on
// time (-0.5 min), which none runs.
func TestCatchUp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		catchUp, every string
		startIn        time.Duration
		want           []string
	}{
		{"latest", "2m", -330 * time.Second, []string{"skipped:catch_up", "skipped:catch_up", "running"}},
		{"all", "2m", -330 * time.Second, []string{"running", "running", "running"}},
		{"none", "2m", -330 * time.Second, []string{"skipped:catch_up", "skipped:catch_up", "skipped:catch_up"}},
		{"none", "1m", -210 * time.Second, []string{"skipped:catch_up", "skipped:catch_up", "skipped:catch_up", "running"}},
	} {
		t.Run(tc.catchUp+"/"+tc.every, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			every, err := time.ParseDuration(tc.every)
			require.NoError(t, err)
			seq := b.sequence(t, def{schedule: `{"every": "` + tc.every + `"}`, startIn: tc.startIn, catchUp: tc.catchUp,
				steps: `[{"name": "a", "path": "/a", "data": {}}, {"name": "b", "path": "/b", "data": {}, "dependsOn": ["a"]}]`})

			b.scan(t)

			runs := b.runs(t, seq)
			require.Equal(t, tc.want, statuses(runs))
			for i, r := range runs {
				require.True(t, r.Slot.Equal(seq.StartAt.Add(time.Duration(i)*every)), "slot %d: %v", i, r.Slot)
				hooks := b.hooks(t, r.ID)
				if r.Status == "skipped" {
					require.Empty(t, hooks)
					require.Equal(t, map[string]string{"a": "skipped", "b": "skipped"}, b.steps(t, r.ID))
					continue
				}
				require.Len(t, hooks, 1)
				require.True(t, hooks["a"].SequenceLastRunAt.Equal(r.Slot))
			}
			row := b.sequenceRow(t, seq)
			require.True(t, row.LastRunAt.Equal(runs[len(runs)-1].Slot))
			require.True(t, row.NextRunAt.Equal(seq.StartAt.Add(time.Duration(len(runs))*every)))
			require.True(t, row.NextRunAt.After(fixture.DBNow(t, b.tq)))
		})
	}
}

// TestALongOutageIsBounded: 301 due slots are more than one scan of a
// sequence reads; the pass goes on over several transactions, each
// recording at most 100 missed slots, and ends as one scan would: the
// latest slot runs, the others are skipped.
func TestALongOutageIsBounded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seq := b.sequence(t, def{schedule: `{"every": "1m"}`, startIn: -300 * time.Minute,
		steps: `[{"name": "a", "path": "/a", "data": {}}]`})

	b.scan(t)

	runs := b.runs(t, seq)
	require.Len(t, runs, 301)
	for _, r := range runs[:300] {
		require.Equal(t, "skipped", r.Status)
	}
	require.Equal(t, "running", runs[300].Status)
}

// TestCatchUpAllStartsTheLatestHundred: all starts at most 100 missed
// slots, the latest; older ones are skipped.
func TestCatchUpAllStartsTheLatestHundred(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seq := b.sequence(t, def{schedule: `{"every": "1m"}`, startIn: -150*time.Minute - 30*time.Second, catchUp: "all",
		steps: `[{"name": "a", "path": "/a", "data": {}}]`})

	b.scan(t)

	runs := b.runs(t, seq)
	require.Len(t, runs, 151)
	for i, r := range runs {
		want := "running"
		if i < 51 {
			want = "skipped"
		}
		require.Equal(t, want, r.Status, "run %d", i)
	}
}

// TestOverlapSkip: with overlap skip, a slot whose sequence has a run
// still running is recorded as skipped; with allow it runs.
func TestOverlapSkip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	steps := `[{"name": "a", "path": "/a", "data": {}}]`
	skip := b.sequence(t, def{schedule: hourly, startIn: -time.Second, overlap: "skip", steps: steps})
	allow := b.sequence(t, def{schedule: hourly, startIn: -time.Second, overlap: "allow", steps: steps})
	for _, seq := range []storetest.Sequence{skip, allow} {
		require.NoError(t, b.tq.InsertRunForTest(context.Background(), storetest.InsertRunForTestParams{
			ID: uuid.Must(uuid.NewV7()), ProjectID: b.project, SequenceID: seq.ID, Slot: seq.StartAt.Add(-time.Hour)}))
	}

	b.scan(t)

	require.Equal(t, []string{"running", "skipped:overlap"}, statuses(b.runs(t, skip)))
	require.Equal(t, []string{"running", "running"}, statuses(b.runs(t, allow)))
	require.True(t, b.sequenceRow(t, skip).NextRunAt.Equal(skip.StartAt.Add(time.Hour)))
}

// TestATriggerRequestBecomesAManualRun: the gateway's request is consumed
// into a run with its id, trigger manual and the request's time as its
// slot, started whatever the overlap rule says; the request is gone.
func TestATriggerRequestBecomesAManualRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seq := b.sequence(t, def{schedule: hourly, startIn: time.Hour, overlap: "skip",
		steps: `[{"name": "a", "path": "/a", "data": {}}]`})
	require.NoError(t, b.tq.InsertRunForTest(context.Background(), storetest.InsertRunForTestParams{
		ID: uuid.Must(uuid.NewV7()), ProjectID: b.project, SequenceID: seq.ID, Slot: seq.StartAt.Add(-time.Hour)}))
	runID := uuid.Must(uuid.NewV7())
	require.NoError(t, b.tq.InsertTriggerForTest(context.Background(), storetest.InsertTriggerForTestParams{
		RunID: runID, ProjectID: b.project, SequenceID: seq.ID}))

	b.scan(t)

	run := b.run(t, runID)
	require.Equal(t, "manual", run.Trigger)
	require.Equal(t, "running", run.Status)
	h := b.hooks(t, runID)["a"]
	require.Equal(t, "pending", h.Status)
	require.True(t, h.SequenceLastRunAt.Equal(run.Slot))
	n, err := b.tq.CountTriggersForTest(context.Background())
	require.NoError(t, err)
	require.Zero(t, n)
	require.Len(t, b.runs(t, seq), 2, "no scheduled slot was due")
	require.True(t, b.sequenceRow(t, seq).NextRunAt.Equal(seq.StartAt))
}

// TestEndAtEndsTheSequence: past its endAt a sequence has no next slot: it
// ends once its last slot has run.
func TestEndAtEndsTheSequence(t *testing.T) {
	t.Parallel()
	b := setup(t)
	end := -20 * time.Second
	seq := b.sequence(t, def{schedule: `{"every": "1m"}`, startIn: -30 * time.Second, endIn: &end,
		steps: `[{"name": "a", "path": "/a", "data": {}}]`})

	b.scan(t)

	require.Equal(t, []string{"running"}, statuses(b.runs(t, seq)))
	row := b.sequenceRow(t, seq)
	require.Equal(t, "ended", row.Status)
	require.Nil(t, row.NextRunAt)
	require.True(t, row.LastRunAt.Equal(seq.StartAt))
	b.scan(t)
	require.Len(t, b.runs(t, seq), 1)
}

// TestTwoSequencersNeverRunASlotTwice: two sequencers scanning the same
// due sequences side by side record each slot once, with one hook per
// root step.
func TestTwoSequencersNeverRunASlotTwice(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 120
	seqs := make([]storetest.Sequence, n)
	for i := range seqs {
		seqs[i] = b.sequence(t, def{schedule: `{"every": "1m"}`, startIn: -150 * time.Second, catchUp: "all",
			steps: `[{"name": "a", "path": "/a", "data": {}}, {"name": "b", "path": "/b", "data": {}}]`})
	}
	var wg sync.WaitGroup
	for range 2 {
		s := sequencer.New(b.pool, sequencer.Config{BatchSize: 7, MaxBatches: 1, Lead: noLead}, b.log)
		wg.Go(func() {
			for {
				more, err := s.ScanOnce(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				if !more {
					return
				}
			}
		})
	}
	wg.Wait()
	b.scan(t) // whatever the two left (one stopped while the other held rows)

	for _, seq := range seqs {
		runs := b.runs(t, seq)
		require.Equal(t, []string{"running", "running", "running"}, statuses(runs))
		for _, r := range runs {
			require.Len(t, b.hooks(t, r.ID), 2)
		}
	}
}

// TestASlotAlreadyRecordedIsNotRecordedAgain: a scan that finds slots
// another scheduler already recorded (the unique index on (sequence,
// slot)) creates neither a run nor a hook for them, and still moves the
// sequence on.
func TestASlotAlreadyRecordedIsNotRecordedAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seq := b.sequence(t, def{schedule: `{"every": "1m"}`, startIn: -90 * time.Second, catchUp: "all",
		steps: `[{"name": "a", "path": "/a", "data": {}}]`})
	b.scan(t)
	first := b.runs(t, seq)
	require.Equal(t, []string{"running", "running"}, statuses(first))
	n, err := b.tq.RewindSequenceForTest(context.Background(), seq.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)

	b.scan(t)

	again := b.runs(t, seq)
	require.Equal(t, first, again)
	for _, r := range again {
		require.Len(t, b.hooks(t, r.ID), 1)
	}
	require.True(t, b.sequenceRow(t, seq).NextRunAt.Equal(seq.StartAt.Add(2*time.Minute)))
}

// TestAnAckedStepStartsItsDependents: a step hook answered 202 stays
// pending until the receiver's ack, which the sweeper's settling applies
// to the step in the same transaction.
func TestAnAckedStepStartsItsDependents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seq := b.sequence(t, def{schedule: hourly, startIn: -time.Second, steps: `[
		{"name": "a", "path": "/a", "data": {}}, {"name": "b", "path": "/b", "data": {}, "dependsOn": ["a"]}]`})
	b.scan(t)
	run := b.runs(t, seq)[0]
	a := b.hooks(t, run.ID)["a"]
	b.report(t, a, eventv1.Outcome_OUTCOME_ASYNC)
	require.Equal(t, map[string]string{"a": "pending", "b": "waiting"}, b.steps(t, run.ID))
	a = fixture.Get(t, b.tq, a.ID)
	n, err := b.tq.AckForTest(context.Background(), storetest.AckForTestParams{HookID: a.ID, LeaseSeq: a.LeaseSeq})
	require.NoError(t, err)
	require.EqualValues(t, 1, n)

	settled, err := b.applier.EndWaits(context.Background(), []uuid.UUID{a.ID})

	require.NoError(t, err)
	require.Equal(t, 1, settled)
	require.Equal(t, map[string]string{"a": "completed", "b": "pending"}, b.steps(t, run.ID))
}

// TestABadDefinitionDoesNotStopTheScan: definitions the gateway would
// refuse (a schedule below the engine's minimum, steps with a name twice or
// none) neither fail the batch nor come back at every scan: the schedule's
// sequence ends, the steps that can be read run.
func TestABadDefinitionDoesNotStopTheScan(t *testing.T) {
	t.Parallel()
	b := setup(t)
	badSchedule := b.sequence(t, def{schedule: `{"every": "1s"}`, startIn: -time.Second,
		steps: `[{"name": "a", "path": "/a", "data": {}}]`})
	badSteps := b.sequence(t, def{schedule: hourly, startIn: -time.Second,
		steps: `[{"name": "a", "path": "/a", "data": {}}, {"name": "a", "path": "/b", "data": {}}, {"path": "/x"}]`})

	b.scan(t)

	row := b.sequenceRow(t, badSchedule)
	require.Equal(t, "ended", row.Status)
	require.Empty(t, b.runs(t, badSchedule))
	runs := b.runs(t, badSteps)
	require.Len(t, runs, 1)
	require.Equal(t, map[string]string{"a": "pending"}, b.steps(t, runs[0].ID))
	require.Equal(t, "/a", b.hooks(t, runs[0].ID)["a"].Path)
}

// TestABurstOfRunsRefreshesTheStatistics: 1,500 sequences due at once, on
// a database whose statistics know of no run; their passes analyze the
// runs (at 1,000 rows written, docs/sequences.md "Bursts of runs"), so that
// the planner stops treating sequence_runs as empty. A pass's statistics
// counters reach PostgreSQL's view when the backend flushes them (at most
// once a second), so the passes go on, bounded, until it has.
func TestABurstOfRunsRefreshesTheStatistics(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	require.NoError(t, b.tq.InsertDueSequencesForTest(ctx, storetest.InsertDueSequencesForTestParams{
		ProjectID: b.project, Schedule: json.RawMessage(hourly), Steps: json.RawMessage(`[{"name": "a", "path": "/a"}]`),
		Slot: time.Now().Add(-time.Second), Count: 1500}))
	analyzed, err := b.tq.RunsAnalyzedForTest(ctx)
	require.NoError(t, err)
	require.False(t, analyzed)

	require.Eventually(t, func() bool {
		_, err := b.seq.ScanOnce(ctx)
		require.NoError(t, err)
		analyzed, err := b.tq.RunsAnalyzedForTest(ctx)
		require.NoError(t, err)
		return analyzed
	}, 30*time.Second, 100*time.Millisecond)
}
