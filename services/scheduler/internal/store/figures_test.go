package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/retry"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

// AddDeliveryMinutes from two transactions at once: the second waits on
// the first's row (the insert of a row that did not exist yet, then the
// update) and adds to it rather than losing either's counts.

type figuresBundle struct {
	pool    *pgxpool.Pool
	tq      *storetest.Queries
	project uuid.UUID
	minute  time.Time
}

func setupFigures(t *testing.T) figuresBundle {
	t.Helper()
	pool, _ := pgtest.NewPool(t)
	tq := storetest.New(pool)
	project := fixture.Project(t, tq, "receiver.example.com", retry.Policy{MinRetries: 3, DelaySecs: 5,
		Strategy: retry.StrategyFixed, BackoffFactor: 2, MaxDelaySecs: 60})
	return figuresBundle{pool: pool, tq: tq, project: project,
		minute: time.Date(2026, 11, 26, 12, 34, 0, 0, time.UTC)}
}

// figures is one row of a batch's figures for the bundle's minute.
func (b figuresBundle) figures(succeeded, failed int32, buckets ...int64) AddDeliveryMinutesParams {
	return AddDeliveryMinutesParams{
		Buckets: buckets, Width: int32(len(buckets)),
		ProjectIds: []uuid.UUID{b.project}, StepSeconds: []int32{60}, Minutes: []time.Time{b.minute},
		Succeeded: []int32{succeeded}, Failed: []int32{failed}, Async: []int32{0},
	}
}

func TestTwoTransactionsAddingToOneMinuteLoseNothing(t *testing.T) {
	t.Parallel()
	b := setupFigures(t)
	ctx := context.Background()

	first, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = first.Rollback(ctx) }()
	require.NoError(t, New(first).AddDeliveryMinutes(ctx, b.figures(3, 1, 1, 2, 0, 4)))

	// The second inserts the same row while the first's insert is not
	// committed: it must wait for it.
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			second, err := b.pool.Begin(ctx)
			if err != nil {
				return err
			}
			defer func() { _ = second.Rollback(ctx) }()
			if err := New(second).AddDeliveryMinutes(ctx, b.figures(10, 20, 100, 0, 300, 400)); err != nil {
				return err
			}
			return second.Commit(ctx)
		}()
	}()
	require.Eventually(t, func() bool {
		n, err := b.tq.CountLockWaitersForTest(ctx)
		return err == nil && n > 0
	}, 10*time.Second, 5*time.Millisecond, "the second transaction waits for the first's row")
	require.NoError(t, first.Commit(ctx))
	require.NoError(t, <-done)

	rows, err := b.tq.ListDeliveryMinutesForTest(ctx, storetest.ListDeliveryMinutesForTestParams{ProjectID: b.project, StepSeconds: 60})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, int32(13), rows[0].Succeeded)
	require.Equal(t, int32(21), rows[0].Failed)
	require.Equal(t, []int64{101, 2, 300, 404}, rows[0].LatenessBuckets, "added element by element")
}

func TestAddDeliveryMinutesSplitsTheBucketsByRow(t *testing.T) {
	t.Parallel()
	b := setupFigures(t)
	ctx := context.Background()
	next := b.minute.Add(time.Minute)
	require.NoError(t, New(b.pool).AddDeliveryMinutes(ctx, AddDeliveryMinutesParams{
		Buckets: []int64{1, 2, 3, 4, 5, 6}, Width: 3,
		ProjectIds: []uuid.UUID{b.project, b.project}, StepSeconds: []int32{60, 60}, Minutes: []time.Time{b.minute, next},
		Succeeded: []int32{1, 2}, Failed: []int32{3, 4}, Async: []int32{5, 6},
	}))
	rows, err := b.tq.ListDeliveryMinutesForTest(ctx, storetest.ListDeliveryMinutesForTestParams{ProjectID: b.project, StepSeconds: 60})
	require.NoError(t, err)
	require.Len(t, rows, 2)
	require.Equal(t, []int64{1, 2, 3}, rows[0].LatenessBuckets)
	require.Equal(t, []int64{4, 5, 6}, rows[1].LatenessBuckets)
	require.Equal(t, [3]int32{2, 4, 6}, [3]int32{rows[1].Succeeded, rows[1].Failed, rows[1].Async})
}
