package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

// hooks has no list index without status (migration 00025): a list of any
// status must read the four statuses' index ranges side by side
// (list_hooks, migration 00032), so that a page costs about its own rows
// whatever the project holds. A plan that read the project's hooks and
// sorted them (what an ordered query over `status = ANY(...)` gets from
// PostgreSQL) would read every one of them for each page. These tests run
// the queries under EXPLAIN ANALYZE and bound the buffers they touch.

func TestMain(m *testing.M) { pgtest.Main(m) }

// listedHooks is how many hooks the project holds: far more than a page,
// so that reading them all shows in the buffers.
const listedHooks = 60_000 + 1_000 + 500

// maxPageBuffers bounds a page of 101 hooks: four short index descents and
// the heap pages of the rows read (measured: about 20 by postAt; about 115
// by createdAt, where the fixture's hooks of a status share one creation
// time and so are ordered by their random ids, each on its own page).
// Reading the project's hooks takes about a thousand.
const maxPageBuffers = 200

type listCost struct {
	pool    *pgxpool.Pool
	project uuid.UUID
	start   time.Time
}

// setupListCost makes a project of 60,000 completed, 1,000 failed and 500
// pending hooks, due one second apart from the same start, with fresh
// statistics.
func setupListCost(t *testing.T) listCost {
	t.Helper()
	ctx := context.Background()
	pool, _ := pgtest.NewPool(t)
	tq := storetest.New(pool)
	c := listCost{pool: pool, project: uuid.New(), start: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	require.NoError(t, tq.InsertProjectForBulkTest(ctx, storetest.InsertProjectForBulkTestParams{
		ID: c.project, Domain: "hooks.example.com", PlanQuota: 1_000_000, PlanHardCapPercent: 200,
	}))
	for status, n := range map[string]int32{"completed": 60_000, "failed": 1_000, "pending": 500} {
		_, err := tq.InsertHooksForBulkBench(ctx, storetest.InsertHooksForBulkBenchParams{
			ProjectID: c.project, Start: c.start, Status: status, N: n,
		})
		require.NoError(t, err)
	}
	require.NoError(t, tq.AnalyzeHooksForBulkBench(ctx))
	return c
}

func TestAPageOfAnyStatusReadsThePageNotTheProject(t *testing.T) {
	t.Parallel()
	c := setupListCost(t)
	after := c.start.Add(10 * time.Second)
	cases := map[string]ListHooksParams{
		"createdAt desc":         {ProjectID: c.project, Descending: true, RowLimit: 101},
		"createdAt asc":          {ProjectID: c.project, RowLimit: 101},
		"postAt desc":            {ProjectID: c.project, ByPostAt: true, Descending: true, RowLimit: 101},
		"postAt asc, from a key": {ProjectID: c.project, ByPostAt: true, KeyAt: &after, KeyID: uuid.Max, RowLimit: 101},
	}
	for name, a := range cases {
		// The first call on a connection compiles list_hooks and reads the
		// catalog into the backend's caches (a few hundred buffers): a cost
		// per connection, which the pool keeps, not per page.
		pgtest.Explain(t, c.pool, listHooks, pgx.QueryExecModeExec, a.ProjectID, a.Status, a.ByPostAt, a.Descending,
			a.KeyAt, a.KeyID, a.EndAt, a.OtherAfter, a.OtherBefore, a.RowLimit, a.Few, a.Tags, a.OrderingKey)
		rows, buffers := pgtest.Explain(t, c.pool, listHooks, pgx.QueryExecModeExec, a.ProjectID, a.Status, a.ByPostAt, a.Descending,
			a.KeyAt, a.KeyID, a.EndAt, a.OtherAfter, a.OtherBefore, a.RowLimit, a.Few, a.Tags, a.OrderingKey)
		require.EqualValues(t, 101, rows, name)
		t.Logf("%s: %.0f buffers", name, buffers)
		require.Less(t, buffers, float64(maxPageBuffers), "%s: buffers for a page of 101", name)
	}
}

// A count over a time window of any status reads the window of each
// status's range, not the project's whole index.
func TestACountOverAWindowReadsTheWindow(t *testing.T) {
	t.Parallel()
	c := setupListCost(t)
	from, to := c.start.Add(100*time.Second), c.start.Add(201*time.Second)
	_, buffers := pgtest.Explain(t, c.pool, countHooks, pgx.QueryExecModeExec, c.project, nil, nil, nil, &from, &to, nil, nil, int32(100_001))
	var n int64
	require.NoError(t, c.pool.QueryRow(context.Background(), countHooks,
		pgx.QueryExecModeExec, c.project, nil, nil, nil, &from, &to, nil, nil, int32(100_001)).Scan(&n))
	require.EqualValues(t, 300, n, "100 hooks of each status in the window")
	t.Logf("%.0f buffers", buffers)
	require.Less(t, buffers, float64(maxPageBuffers), "buffers for a count of 300 among %d", listedHooks)
}

// A page of a tag that many hooks have walks the sort's index as a page of
// no tag does; one of a tag that few have (the hooklist package picks
// few from the count) and the count read those hooks through the tags'
// index (migration 00032), not the project's.
func TestAPageOfATagReadsThePageOrTheTagsHooks(t *testing.T) {
	t.Parallel()
	c := setupListCost(t)
	ctx := context.Background()
	tq := storetest.New(c.pool)
	require.NoError(t, tq.TagHooksForTest(ctx, c.project))
	// The update left a dead version of every row: vacuum them away, as
	// autovacuum would.
	require.NoError(t, tq.VacuumHooksForTest(ctx))
	common, rare := []string{"common"}, []string{"rare"}
	run := func(a ListHooksParams) (float64, float64) {
		args := []any{pgx.QueryExecModeExec, a.ProjectID, a.Status, a.ByPostAt, a.Descending,
			a.KeyAt, a.KeyID, a.EndAt, a.OtherAfter, a.OtherBefore, a.RowLimit, a.Few, a.Tags, a.OrderingKey}
		pgtest.Explain(t, c.pool, listHooks, args...)
		return pgtest.Explain(t, c.pool, listHooks, args...)
	}
	rows, buffers := run(ListHooksParams{ProjectID: c.project, Descending: true, RowLimit: 101, Tags: common})
	require.EqualValues(t, 101, rows)
	t.Logf("common: %.0f buffers", buffers)
	require.Less(t, buffers, float64(maxPageBuffers), "buffers for a page of a common tag")

	var n int64
	require.NoError(t, c.pool.QueryRow(ctx, countHooks, pgx.QueryExecModeExec, c.project, nil, nil, nil, nil, nil, rare, nil, int32(100_001)).Scan(&n))
	_, buffers = pgtest.Explain(t, c.pool, countHooks, pgx.QueryExecModeExec, c.project, nil, nil, nil, nil, nil, rare, nil, int32(100_001))
	t.Logf("rare: %d hooks, count %.0f buffers", n, buffers)
	require.Less(t, buffers, float64(3*n), "the count reads the tag's hooks, not the project's")

	rows, buffers = run(ListHooksParams{ProjectID: c.project, Descending: true, RowLimit: 101, Tags: rare, Few: true})
	require.EqualValues(t, 101, rows)
	t.Logf("rare: page %.0f buffers", buffers)
	require.Less(t, buffers, float64(3*n), "the page reads the tag's hooks, not the project's")
}

// A page of one ordering key, sorted by createdAt, reads one range of the
// key's index (hooks_ordering_key_list_idx, migration 00039) as a page of
// no key reads the statuses' ranges; sorted by postAt, and the count, read
// the key's hooks; none reads the project's.
func TestAPageOfAnOrderingKeyReadsThePageOrTheKeysHooks(t *testing.T) {
	t.Parallel()
	c := setupListCost(t)
	ctx := context.Background()
	tq := storetest.New(c.pool)
	require.NoError(t, tq.KeyHooksForTest(ctx, c.project))
	require.NoError(t, tq.VacuumHooksForTest(ctx))
	key := "sparse"
	run := func(a ListHooksParams) (float64, float64) {
		args := []any{pgx.QueryExecModeExec, a.ProjectID, a.Status, a.ByPostAt, a.Descending,
			a.KeyAt, a.KeyID, a.EndAt, a.OtherAfter, a.OtherBefore, a.RowLimit, a.Few, a.Tags, a.OrderingKey}
		pgtest.Explain(t, c.pool, listHooks, args...)
		return pgtest.Explain(t, c.pool, listHooks, args...)
	}
	var n int64
	require.NoError(t, c.pool.QueryRow(ctx, countHooks, pgx.QueryExecModeExec, c.project, nil, nil, nil, nil, nil, nil, &key, int32(100_001)).Scan(&n))
	require.Greater(t, n, int64(500), "the key's hooks are many pages")
	_, buffers := pgtest.Explain(t, c.pool, countHooks, pgx.QueryExecModeExec, c.project, nil, nil, nil, nil, nil, nil, &key, int32(100_001))
	t.Logf("key of %d hooks: count %.0f buffers", n, buffers)
	require.Less(t, buffers, float64(3*n), "the count reads the key's hooks, not the project's")

	after := c.start.Add(30_000 * time.Second)
	for name, a := range map[string]ListHooksParams{
		"createdAt desc":            {ProjectID: c.project, Descending: true, RowLimit: 101, OrderingKey: &key},
		"createdAt asc":             {ProjectID: c.project, RowLimit: 101, OrderingKey: &key},
		"createdAt desc, completed": {ProjectID: c.project, Status: ptr("completed"), Descending: true, RowLimit: 101, OrderingKey: &key},
	} {
		rows, buffers := run(a)
		require.EqualValues(t, 101, rows, name)
		t.Logf("%s: %.0f buffers", name, buffers)
		require.Less(t, buffers, float64(maxPageBuffers), "%s: buffers for a page of 101 of a key", name)
	}
	rows, buffers := run(ListHooksParams{ProjectID: c.project, ByPostAt: true, KeyAt: &after, KeyID: uuid.Max, RowLimit: 101, OrderingKey: &key})
	require.EqualValues(t, 101, rows)
	t.Logf("postAt asc, from a key: %.0f buffers", buffers)
	require.Less(t, buffers, float64(3*n), "the page reads the key's hooks, not the project's")
}

func ptr[T any](v T) *T { return &v }
