package result_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/deliverystats"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/result"
	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
)

// leasedMany creates n due hooks in one new project, claims them all, and
// gives them one postAt, 10 s into a minute: an attempt late by less than
// 50 s starts in that minute.
func (b bundle) leasedMany(t *testing.T, n int) (uuid.UUID, []storetest.Hook) {
	t.Helper()
	project := fixture.Project(t, b.q, domain, fixed30)
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = fixture.Insert(t, b.q, fixture.Hook{ProjectID: project, Domain: domain, Path: "/p", DueIn: -time.Second}).ID
	}
	c := b.claimer(t, time.Minute)
	for claimed := 0; claimed < n; {
		k, err := c.ClaimOnce(context.Background())
		require.NoError(t, err)
		require.Positive(t, k, "claimed %d of %d hooks", claimed, n)
		claimed += k
	}
	postAt := fixture.DBNow(t, b.q).UTC().Truncate(time.Minute).Add(-10*time.Minute + 10*time.Second)
	set, err := b.q.SetPostAtForTest(context.Background(), storetest.SetPostAtForTestParams{PostAt: postAt, Ids: ids})
	require.NoError(t, err)
	require.EqualValues(t, n, set)
	hooks := make([]storetest.Hook, n)
	for i, id := range ids {
		hooks[i] = fixture.Get(t, b.q, id)
	}
	return project, hooks
}

// startedAt makes r's attempt start at.
func startedAt(r *eventv1.AttemptResult, at time.Time) *eventv1.AttemptResult {
	r.StartedAt = timestamppb.New(at)
	return r
}

// figures reads the project's rows of delivery_minutes by minute.
func (b bundle) figures(t *testing.T, project uuid.UUID) map[time.Time]storetest.ListDeliveryMinutesForTestRow {
	t.Helper()
	return b.figuresPer(t, project, time.Minute)
}

// figuresPer reads the project's rows of delivery_minutes of one step
// length by the step's first minute.
func (b bundle) figuresPer(t *testing.T, project uuid.UUID, step time.Duration) map[time.Time]storetest.ListDeliveryMinutesForTestRow {
	t.Helper()
	rows, err := b.q.ListDeliveryMinutesForTest(context.Background(), storetest.ListDeliveryMinutesForTestParams{
		ProjectID: project, StepSeconds: int32(step / time.Second)})
	require.NoError(t, err)
	out := make(map[time.Time]storetest.ListDeliveryMinutesForTestRow, len(rows))
	for _, r := range rows {
		out[r.Minute.UTC()] = r
	}
	return out
}

// histogram is a row's lateness buckets with counts at the given indexes.
func histogram(counts map[int]int64) []int64 {
	h := make([]int64, deliverystats.NumBuckets)
	for i, n := range counts {
		h[i] = n
	}
	return h
}

func TestFiguresCountABatchByMinuteOutcomeAndFirstAttemptLateness(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project, hooks := b.leasedMany(t, 8)
	// A retry: its attempt is counted, its lateness is not.
	_, err := b.q.SetAttemptsForTest(context.Background(), storetest.SetAttemptsForTestParams{ID: hooks[4].ID, N: 1})
	require.NoError(t, err)
	hooks[4] = fixture.Get(t, b.q, hooks[4].ID)
	// Every attempt starts at its hook's postAt plus a lateness; the
	// minute it lands in follows.
	at := func(h storetest.Hook, lateness time.Duration) time.Time { return h.PostAt.Add(lateness) }
	stale := resultFor(hooks[6], eventv1.Outcome_OUTCOME_SUCCESS, 200, "")
	stale.LeaseSeq-- // a result of an earlier delivery
	results := []*eventv1.AttemptResult{
		startedAt(resultFor(hooks[0], eventv1.Outcome_OUTCOME_SUCCESS, 200, ""), at(hooks[0], 3*time.Millisecond)),
		startedAt(resultFor(hooks[1], eventv1.Outcome_OUTCOME_SUCCESS, 200, ""), at(hooks[1], -2*time.Second)),
		startedAt(resultFor(hooks[2], eventv1.Outcome_OUTCOME_FAILURE, 503, "HTTP 503"), at(hooks[2], 45*time.Second)),
		startedAt(resultFor(hooks[3], eventv1.Outcome_OUTCOME_ASYNC, 202, ""), at(hooks[3], 15*time.Millisecond)),
		startedAt(resultFor(hooks[4], eventv1.Outcome_OUTCOME_FAILURE, 500, "HTTP 500"), at(hooks[4], 10*time.Minute)),
		startedAt(deferred(hooks[5], time.Minute), at(hooks[5], time.Millisecond)),
		startedAt(stale, at(hooks[6], time.Millisecond)),
		startedAt(resultFor(hooks[7], eventv1.Outcome_OUTCOME_SUCCESS, 200, ""), at(hooks[7], 2*time.Hour)),
	}
	batcher := runBatcher(t, b.applier, exactBatch(len(results)))
	for i, err := range handleAll(t, batcher.Handle, results...) {
		require.NoError(t, err, "result %d", i)
	}

	type want struct {
		succeeded, failed, async int32
		lateness                 map[int]int64
	}
	wants := map[time.Time]*want{}
	add := func(r *eventv1.AttemptResult, outcome string, bucket int) {
		m := r.GetStartedAt().AsTime().UTC().Truncate(time.Minute)
		w := wants[m]
		if w == nil {
			w = &want{lateness: map[int]int64{}}
			wants[m] = w
		}
		switch outcome {
		case "succeeded":
			w.succeeded++
		case "failed":
			w.failed++
		case "async":
			w.async++
		}
		if bucket >= 0 {
			w.lateness[bucket]++
		}
	}
	add(results[0], "succeeded", 2) // 3 ms: 2-5 ms
	add(results[1], "succeeded", 0) // early: the first bucket
	add(results[2], "failed", 14)   // 45 s: 30-60 s
	add(results[3], "async", 4)     // 15 ms: 10-20 ms
	add(results[4], "failed", -1)   // a second attempt: no lateness
	add(results[7], "succeeded", 15)
	// results[5] (deferred) and results[6] (stale) count nothing.

	got := b.figures(t, project)
	require.Len(t, got, len(wants), "one row per minute with an attempt")
	for m, w := range wants {
		row, ok := got[m]
		require.True(t, ok, "minute %s", m)
		require.Equal(t, w.succeeded, row.Succeeded, "succeeded in %s", m)
		require.Equal(t, w.failed, row.Failed, "failed in %s", m)
		require.Equal(t, w.async, row.Async, "async in %s", m)
		require.Equal(t, histogram(w.lateness), row.LatenessBuckets, "lateness in %s", m)
	}
}

func TestFiguresOfTwoBatchesAddUp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project, hooks := b.leasedMany(t, 5)
	// All attempts start in one minute, 30 to 60 s after their postAt.
	start := hooks[0].PostAt.Add(40 * time.Second)
	minute := start.UTC().Truncate(time.Minute)
	batcher := runBatcher(t, b.applier, exactBatch(3))
	for i, err := range handleAll(t, batcher.Handle,
		startedAt(resultFor(hooks[0], eventv1.Outcome_OUTCOME_SUCCESS, 200, ""), start),
		startedAt(resultFor(hooks[1], eventv1.Outcome_OUTCOME_FAILURE, 500, "HTTP 500"), start),
		startedAt(resultFor(hooks[2], eventv1.Outcome_OUTCOME_ASYNC, 202, ""), start)) {
		require.NoError(t, err, "first batch, result %d", i)
	}
	first := b.figures(t, project)[minute]
	require.Equal(t, storetest.ListDeliveryMinutesForTestRow{ProjectID: project, Minute: minute, Succeeded: 1, Failed: 1, Async: 1,
		LatenessBuckets: histogram(map[int]int64{14: 3})}, withUTC(first))

	batcher = runBatcher(t, b.applier, exactBatch(2))
	for i, err := range handleAll(t, batcher.Handle,
		startedAt(resultFor(hooks[3], eventv1.Outcome_OUTCOME_SUCCESS, 200, ""), start),
		startedAt(resultFor(hooks[4], eventv1.Outcome_OUTCOME_SUCCESS, 200, ""), start)) {
		require.NoError(t, err, "second batch, result %d", i)
	}
	got := b.figures(t, project)
	require.Len(t, got, 1)
	require.Equal(t, storetest.ListDeliveryMinutesForTestRow{ProjectID: project, Minute: minute, Succeeded: 3, Failed: 1, Async: 1,
		LatenessBuckets: histogram(map[int]int64{14: 5})}, withUTC(got[minute]))
}

// TestFiguresAreCountedAtEveryStep: each attempt is counted in its minute,
// its 5 minutes and its hour, so that the overview's 24h and 7d ranges
// read one row per shard and step (deliverystats.Steps).
func TestFiguresAreCountedAtEveryStep(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project, hooks := b.leasedMany(t, 3)
	hour := hooks[0].PostAt.UTC().Truncate(time.Hour).Add(time.Hour)
	// Two attempts in the hour's first 5 minutes (two minutes), one in its
	// second 5 minutes.
	starts := []time.Time{hour.Add(time.Minute), hour.Add(2*time.Minute + 30*time.Second), hour.Add(7 * time.Minute)}
	batcher := runBatcher(t, b.applier, exactBatch(3))
	for i, err := range handleAll(t, batcher.Handle,
		startedAt(resultFor(hooks[0], eventv1.Outcome_OUTCOME_SUCCESS, 200, ""), starts[0]),
		startedAt(resultFor(hooks[1], eventv1.Outcome_OUTCOME_FAILURE, 500, "HTTP 500"), starts[1]),
		startedAt(resultFor(hooks[2], eventv1.Outcome_OUTCOME_SUCCESS, 200, ""), starts[2])) {
		require.NoError(t, err, "result %d", i)
	}
	minutes := b.figures(t, project)
	require.Len(t, minutes, 3)
	fives := b.figuresPer(t, project, 5*time.Minute)
	require.Len(t, fives, 2)
	first, second := fives[hour], fives[hour.Add(5*time.Minute)]
	require.Equal(t, [2]int32{1, 1}, [2]int32{first.Succeeded, first.Failed})
	require.Equal(t, [2]int32{1, 0}, [2]int32{second.Succeeded, second.Failed})
	hours := b.figuresPer(t, project, time.Hour)
	require.Len(t, hours, 1)
	h := hours[hour]
	require.Equal(t, [2]int32{2, 1}, [2]int32{h.Succeeded, h.Failed})
	// Every first attempt's lateness once per step length.
	var sum int64
	for _, n := range h.LatenessBuckets {
		sum += n
	}
	require.EqualValues(t, 3, sum)
}

func withUTC(r storetest.ListDeliveryMinutesForTestRow) storetest.ListDeliveryMinutesForTestRow {
	r.Minute = r.Minute.UTC()
	return r
}

func TestFiguresAddToAStoredHistogramElementWise(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project, hooks := b.leasedMany(t, 3)
	postAt := hooks[0].PostAt.UTC()
	minute := postAt.Truncate(time.Minute)
	later := minute.Add(time.Minute)
	ctx := context.Background()
	// A row with a short histogram, and one with the column's default.
	require.NoError(t, b.q.InsertDeliveryMinuteForTest(ctx, storetest.InsertDeliveryMinuteForTestParams{
		ProjectID: project, Minute: minute, Succeeded: 7, LatenessBuckets: []int64{5, 0, 1}}))
	require.NoError(t, b.q.InsertDeliveryMinuteForTest(ctx, storetest.InsertDeliveryMinuteForTestParams{
		ProjectID: project, Minute: later, Succeeded: 2, LatenessBuckets: []int64{}}))

	batcher := runBatcher(t, b.applier, exactBatch(3))
	for i, err := range handleAll(t, batcher.Handle,
		startedAt(resultFor(hooks[0], eventv1.Outcome_OUTCOME_SUCCESS, 200, ""), postAt.Add(4*time.Millisecond)),
		startedAt(resultFor(hooks[1], eventv1.Outcome_OUTCOME_SUCCESS, 200, ""), postAt.Add(7*time.Millisecond)),
		startedAt(resultFor(hooks[2], eventv1.Outcome_OUTCOME_SUCCESS, 200, ""), later.Add(time.Second))) {
		require.NoError(t, err, "result %d", i)
	}

	got := b.figures(t, project)
	require.Len(t, got, 2)
	require.Equal(t, int32(9), got[minute].Succeeded)
	require.Equal(t, histogram(map[int]int64{0: 5, 2: 2, 3: 1}), got[minute].LatenessBuckets,
		"{5, 0, 1} plus one at 2-5 ms and one at 5-10 ms")
	require.Equal(t, int32(3), got[later].Succeeded)
	require.Equal(t, histogram(map[int]int64{14: 1}), got[later].LatenessBuckets,
		"an empty histogram plus one at 30-60 s")
}

func TestFiguresCountTheFinalAnswerOfAnAsyncAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project, hooks := b.leasedMany(t, 3)
	acked, nacked, early := hooks[0], hooks[1], hooks[2]
	start := acked.PostAt.Add(time.Second + 500*time.Millisecond) // 1-2 s late
	minute := start.UTC().Truncate(time.Minute)
	accept := func(h storetest.Hook) storetest.Hook {
		t.Helper()
		r := startedAt(resultFor(h, eventv1.Outcome_OUTCOME_ASYNC, 202, ""), start)
		require.NoError(t, b.handle(t, r))
		return fixture.Get(t, b.q, h.ID)
	}
	acked, nacked = accept(acked), accept(nacked)
	got := b.figures(t, project)[minute]
	require.Equal(t, int32(2), got.Async)
	require.Zero(t, got.Succeeded+got.Failed)
	require.Equal(t, histogram(map[int]int64{10: 2}), got.LatenessBuckets)

	b.ack(t, acked)
	require.True(t, b.endWait(t, acked.ID))
	b.nack(t, nacked)
	require.True(t, b.endWait(t, nacked.ID))
	got = b.figures(t, project)[minute]
	require.Equal(t, int32(2), got.Async, "the 202s stay counted")
	require.Equal(t, int32(1), got.Succeeded, "the ack, in the minute the attempt started")
	require.Equal(t, int32(1), got.Failed, "the nack")
	require.Equal(t, histogram(map[int]int64{10: 2}), got.LatenessBuckets, "a final answer adds no lateness")

	// An ack before the 202 is applied: both counted in the 202's
	// transaction, in the 202's minute (not that of the gateway's record).
	b.answerFirst(t, early, "acked")
	accept(early)
	got = b.figures(t, project)[minute]
	require.Equal(t, int32(3), got.Async)
	require.Equal(t, int32(2), got.Succeeded)
	require.Equal(t, histogram(map[int]int64{10: 3}), got.LatenessBuckets)
}

func TestConcurrentBatchesOnOneMinuteLoseNoCounts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 120
	project, hooks := b.leasedMany(t, n)
	start := hooks[0].PostAt.Add(40 * time.Second)
	results := make([]*eventv1.AttemptResult, n)
	for i, h := range hooks {
		outcome, status := eventv1.Outcome_OUTCOME_SUCCESS, int32(200)
		if i%3 == 0 {
			outcome, status = eventv1.Outcome_OUTCOME_FAILURE, 500
		}
		results[i] = startedAt(resultFor(h, outcome, status, ""), start)
	}
	// Small batches, many at once: they all add to one row.
	batcher := runBatcher(t, b.applier, result.BatchConfig{MaxBatch: 7, Linger: time.Millisecond, InFlight: 8})
	for i, err := range handleAll(t, batcher.Handle, results...) {
		require.NoError(t, err, "result %d", i)
	}
	got := b.figures(t, project)
	require.Len(t, got, 1)
	row := got[start.UTC().Truncate(time.Minute)]
	require.Equal(t, int32(n/3), row.Failed)
	require.Equal(t, int32(n-n/3), row.Succeeded)
	require.Equal(t, histogram(map[int]int64{14: n}), row.LatenessBuckets)
}

func TestPruneFiguresDeletesOnlyOldRowsInBoundedRounds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	project := fixture.Project(t, b.q, domain, fixed30)
	now := fixture.DBNow(t, b.q).Truncate(time.Minute)
	cutoff := now.Add(-result.FigureRetention)
	for _, m := range []time.Time{
		cutoff.Add(-24 * time.Hour), cutoff.Add(-time.Hour), cutoff.Add(-3 * time.Minute),
		cutoff.Add(-2 * time.Minute), cutoff.Add(-time.Minute), // old: 5 rows
		cutoff, cutoff.Add(time.Minute), now, // kept
	} {
		require.NoError(t, b.q.InsertDeliveryMinuteForTest(ctx, storetest.InsertDeliveryMinuteForTestParams{
			ProjectID: project, Minute: m, Succeeded: 1, LatenessBuckets: []int64{}}))
	}
	for _, want := range []int64{2, 2, 1, 0} {
		n, err := b.applier.PruneFigures(ctx, cutoff, 2)
		require.NoError(t, err)
		require.Equal(t, want, n)
	}
	got := b.figures(t, project)
	require.Len(t, got, 3)
	for _, m := range []time.Time{cutoff, cutoff.Add(time.Minute), now} {
		require.Contains(t, got, m.UTC())
	}
}

// The figures' statement runs on a generic plan from its first execution:
// its arrays hold a few rows, and PostgreSQL planned it anew at every
// batch before.
func TestFiguresArePlannedOncePerConnection(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, hooks := b.leasedMany(t, 4)
	one, err := postgres.Connect(context.Background(), b.url, 1)
	require.NoError(t, err)
	t.Cleanup(one.Close)
	applier, err := result.New(one, b.js, event.DefaultReplicas, b.log, lowJitter)
	require.NoError(t, err)
	batcher := runBatcher(t, applier, exactBatch(1))
	for _, h := range hooks {
		require.NoError(t, handleAll(t, batcher.Handle, resultFor(h, eventv1.Outcome_OUTCOME_SUCCESS, 200, ""))[0])
	}
	var generic, custom int64
	require.NoError(t, one.QueryRow(context.Background(),
		`SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE '-- name: AddDeliveryMinutes %'`,
	).Scan(&generic, &custom))
	require.EqualValues(t, len(hooks), generic)
	require.Zero(t, custom)
}
