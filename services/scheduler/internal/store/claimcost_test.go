package store

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/retry"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

// The claim statements' work must grow with the hooks they claim, not with
// its square or with every due hook: in a 100,000-hook burst an inlined CTE
// made each claim of 500 probe the breakers 500 x 500 times, and a plan
// that read hooks_due_idx instead of the primary key read every due hook
// for each claim by id (both about 1,000 buffers per claimed hook). These
// tests run each statement under EXPLAIN ANALYZE, in a transaction rolled
// back, and bound the buffers it touched per claimed hook.

func TestMain(m *testing.M) { pgtest.Main(m) }

// maxBuffersPerClaimedHook is about three times what a claim reads and
// writes per hook (the row, its lock, and an entry in each index): ~35.
const maxBuffersPerClaimedHook = 100

type costBundle struct {
	pool    *pgxpool.Pool
	q       *Queries
	tq      *storetest.Queries
	project uuid.UUID
}

// setupCost makes a database where 2,000 hooks of one domain are due, with
// the statistics autovacuum took while they were still an hour ahead: what
// the claims of a burst meet in its first minute.
func setupCost(t *testing.T) costBundle { return setupCostKeyed(t, 0) }

// setupCostKeyed is setupCost with the hooks under keys ordering keys
// (none for 0).
func setupCostKeyed(t *testing.T, keys int32) costBundle {
	t.Helper()
	ctx := context.Background()
	pool, _ := pgtest.NewPool(t)
	tq := storetest.New(pool)
	domain := "receiver.example.com"
	project := fixture.Project(t, tq, domain, retry.Policy{MinRetries: 5, DelaySecs: 30,
		Strategy: retry.StrategyExponential, BackoffFactor: 2, MaxDelaySecs: 3600, Jitter: true})
	require.NoError(t, tq.InsertDueHooksForTest(ctx, storetest.InsertDueHooksForTestParams{
		ProjectID: project, Domain: domain, N: 300, Keys: keys,
	}))
	require.NoError(t, tq.ShiftHooksForTest(ctx, 3600))
	require.NoError(t, tq.AnalyzeHooksForTest(ctx))
	require.NoError(t, tq.ShiftHooksForTest(ctx, -3600))
	require.NoError(t, tq.InsertDueHooksForTest(ctx, storetest.InsertDueHooksForTestParams{
		ProjectID: project, Domain: domain, N: 1700, Keys: keys, First: 300,
	}))
	return costBundle{pool: pool, q: New(pool), tq: tq, project: project}
}

// claimQuarter is every fourth of the 2,000 due hooks: a claim of 500.
func (b costBundle) claimQuarter(t *testing.T) []uuid.UUID {
	t.Helper()
	due, err := b.q.PrefetchDueHooks(context.Background(), PrefetchDueHooksParams{WindowSeconds: 1, PlainMax: 2000, KeyedMax: 2000})
	require.NoError(t, err)
	require.Len(t, due, 2000)
	ids := make([]uuid.UUID, 0, 500)
	for i := 0; i < len(due); i += 4 {
		ids = append(ids, due[i].ID)
	}
	return ids
}

func TestThePollsLockCostIsLinearInTheHooksLocked(t *testing.T) {
	t.Parallel()
	b := setupCost(t)
	rows, buffers := pgtest.Explain(t, b.pool, lockDueHooks, int32(500))
	require.EqualValues(t, 500, rows)
	t.Logf("%.1f buffers per locked hook", buffers/rows)
	require.Less(t, buffers/rows, float64(maxBuffersPerClaimedHook), "buffers per locked hook")
}

// The prefetch's read of the keyed lane reads keyed hooks only: a window
// of 2,000 plain hooks due costs it a few index pages, not a walk over
// every one of them (hooks_due_keyed_idx, migration 00041).
func TestThePrefetchsKeyedReadSkipsThePlainHooks(t *testing.T) {
	t.Parallel()
	b := setupCost(t)
	rows, buffers := pgtest.Explain(t, b.pool, prefetchDueHooks, 1.0, int32(0), int32(2000))
	require.Zero(t, rows)
	t.Logf("%.0f buffers", buffers)
	require.Less(t, buffers, float64(maxBuffersPerClaimedHook), "buffers to find no keyed hook among 2,000 plain ones")
}

func TestTheClaimsCostIsLinearInTheHooksClaimed(t *testing.T) {
	t.Parallel()
	b := setupCost(t)
	rows, buffers := pgtest.Explain(t, b.pool, claimHooks, 30.0, b.claimQuarter(t), 1.0)
	require.EqualValues(t, 500, rows)
	t.Logf("%.1f buffers per claimed hook", buffers/rows)
	require.Less(t, buffers/rows, float64(maxBuffersPerClaimedHook), "buffers per claimed hook")
}

// The listener's presence is one probe per project of a claim, not per
// hook: a listening project's hooks are leased, a holding project's held,
// each at the cost of an ordinary claim.
func TestClaimCostWithListenerPresenceIsLinearInTheHooksClaimed(t *testing.T) {
	t.Parallel()
	for name, connected := range map[string]bool{"listening": true, "holding": false} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setupCost(t)
			require.NoError(t, b.tq.UpsertPresenceForTest(context.Background(), storetest.UpsertPresenceForTestParams{
				ProjectID: b.project, GatewayID: "gw-1", Connected: connected, ResumeInSeconds: 900,
			}))
			rows, buffers := pgtest.Explain(t, b.pool, claimHooks, 30.0, b.claimQuarter(t), 1.0)
			require.EqualValues(t, 500, rows)
			t.Logf("%.1f buffers per claimed hook", buffers/rows)
			require.Less(t, buffers/rows, float64(maxBuffersPerClaimedHook), "buffers per claimed hook")
		})
	}
}

// maxHandledPerClaimedHook bounds the rows the claim's plan handles per
// hook. A linear claim handles a few dozen; one that joins two of its
// per-hook sets by comparing every pair handles the claim's size more
// (500 for a claim of 500).
const maxHandledPerClaimedHook = 100

// A claim that leases none of its hooks, because their endpoint is paused
// or their ordering keys are taken, or that leases the heads of as many
// keys as it has hooks, does as much per hook as a plain one: each of its
// sets with a row per hook is read once, never compared pair by pair with
// another.
func TestTheClaimsWorkIsLinearWhenItHoldsBlocksOrTakesKeys(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		keys   int32
		paused bool
	}{
		"paused endpoint":     {paused: true},
		"a key for each hook": {keys: 2000},
		"ten keys":            {keys: 10},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setupCostKeyed(t, c.keys)
			ctx := context.Background()
			if c.paused {
				require.NoError(t, b.tq.PausedDomainForTest(ctx, storetest.PausedDomainForTestParams{
					ProjectID: b.project, Domain: "receiver.example.com",
				}))
			}
			cost := pgtest.Measure(t, b.pool, claimHooks, 30.0, b.claimQuarter(t), 1.0)
			require.EqualValues(t, 500, cost.Rows)
			t.Logf("%.1f rows handled, %.1f buffers per claimed hook", cost.Handled/cost.Rows, cost.Buffers/cost.Rows)
			require.Less(t, cost.Handled/cost.Rows, float64(maxHandledPerClaimedHook), "rows handled per claimed hook")
			require.Less(t, cost.Buffers/cost.Rows, float64(maxBuffersPerClaimedHook), "buffers per claimed hook")
			rows, err := b.q.ClaimHooks(ctx, ClaimHooksParams{LeaseSeconds: 30, AheadSeconds: 1, Ids: b.claimQuarter(t)})
			require.NoError(t, err)
			deferred := 0
			for _, r := range rows {
				if r.Deferred {
					deferred++
				}
			}
			switch {
			case c.paused:
				require.Equal(t, 500, deferred, "every hook held")
			case c.keys == 2000:
				require.Zero(t, deferred, "every hook the head of its key")
			default:
				require.GreaterOrEqual(t, deferred, 500-int(c.keys), "at most one hook leased per key")
			}
		})
	}
}
