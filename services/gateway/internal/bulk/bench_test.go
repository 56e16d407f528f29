package bulk_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/bulk"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

// Hooks per bulk action in the benchmarks, the most one request may act on,
// in a project that also holds benchBackground completed hooks: one a
// second for three days, so that each action's range is crowded with
// hooks it must pass over.
const (
	benchBatch      = bulk.MaxLimit
	benchBackground = 3 * 24 * 3600
)

// BenchmarkBulk measures one bulk action on 1000 hooks selected by a day's
// time range, among the 86,400 completed hooks of that day, in a project
// holding 259,200 hooks. Setup is not timed.
func BenchmarkBulk(b *testing.B) {
	ctx := context.Background()
	pool, _ := pgtest.NewPool(b)
	q := storetest.New(pool)
	svc := bulk.NewService(pool, nil)
	project := uuid.Must(uuid.NewV7())
	require.NoError(b, q.InsertProjectForBulkTest(ctx, storetest.InsertProjectForBulkTestParams{
		ID: project, Domain: "receiver.example.com", PlanQuota: 1 << 40, PlanHardCapPercent: 200,
	}))
	insert := func(status string, start time.Time, n int) {
		_, err := q.InsertHooksForBulkBench(ctx, storetest.InsertHooksForBulkBenchParams{
			ProjectID: project, Start: start, Status: status, N: int32(n),
		})
		require.NoError(b, err)
	}
	// The background: completed hooks all around the benchmarks' ranges.
	day := func(n int) time.Time { return t0.Add(time.Duration(n) * 24 * time.Hour) }
	insert("completed", day(-1), benchBackground)
	require.NoError(b, q.AnalyzeHooksForBulkBench(ctx))
	sel := func(start time.Time) bulk.Order {
		return bulk.Order{Selection: bulk.Selection{Range: &bulk.Range{Start: start, End: start.Add(24 * time.Hour), Limit: benchBatch}}}
	}

	b.Run("retry", func(b *testing.B) {
		insert("failed", day(-1), benchBatch)
		for b.Loop() {
			out, err := svc.Retry(ctx, project, sel(day(-1)))
			require.NoError(b, err)
			require.EqualValues(b, benchBatch, out.Affected)
			b.StopTimer()
			_, err = q.FailHooksForBulkBench(ctx, storetest.FailHooksForBulkBenchParams{ProjectID: project, Start: day(-1), EndTime: day(0)})
			require.NoError(b, err)
			b.StartTimer()
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*benchBatch), "µs/hook")
	})
	b.Run("replay", func(b *testing.B) {
		for b.Loop() {
			out, err := svc.Replay(ctx, project, sel(day(0)))
			require.NoError(b, err)
			require.EqualValues(b, benchBatch, out.Affected)
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*benchBatch), "µs/hook")
	})
	b.Run("cancel", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			insert("pending", day(1), benchBatch)
			b.StartTimer()
			out, err := svc.Cancel(ctx, project, sel(day(1)))
			require.NoError(b, err)
			require.EqualValues(b, benchBatch, out.Affected)
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*benchBatch), "µs/hook")
	})
}
