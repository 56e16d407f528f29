package quota_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestHardCap(t *testing.T) {
	t.Parallel()
	require.Equal(t, int64(200_000), quota.HardCap(100_000, 200))
	require.Equal(t, int64(3), quota.HardCap(2, 150))
	require.Equal(t, int64(1), quota.HardCap(1, 199), "rounded down")
	require.Equal(t, int64(7), quota.HardCap(7, 100))
	require.Equal(t, int64(math.MaxInt64), quota.HardCap(math.MaxInt64, 200), "saturates instead of overflowing")
}

func TestThresholdUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		quota   int64
		percent int32
		want    int64
	}{
		{100_000, 75, 75_000},
		{100_000, 150, 150_000},
		{4, 75, 3},
		{5, 75, 4}, // 3.75 rounds up: 3 hooks are only 60 %
		{1, 75, 1},
		{1, 150, 2},
		{10, 100, 10},
		{199, 150, 299}, // 298.5
		{math.MaxInt64, 150, math.MaxInt64},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, quota.ThresholdUsage(tt.quota, tt.percent), "%d%% of %d", tt.percent, tt.quota)
	}
}

func TestUsageHeaders(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 31, 23, 59, 58, 500_000_000, time.UTC)
	u := quota.Usage{Limit: 10, Used: 12, HardCap: 20, ResetsAt: time.Date(2030, 2, 1, 0, 0, 0, 0, time.UTC), Now: now}
	require.Zero(t, u.Remaining(), "never negative past the quota")
	require.Equal(t, int64(2), u.RetryAfter(), "rounded up")

	h := http.Header{}
	u.SetHeaders(h, "Sundial")
	require.Equal(t, http.Header{
		"Sundial-HookQuota-Limit":     {"10"},
		"Sundial-HookQuota-Usage":     {"12"},
		"Sundial-HookQuota-Remaining": {"0"},
		"Sundial-HookQuota-Resets-At": {"2030-02-01T00:00:00Z"},
	}, h, "spelled as documented")

	u.Now = u.ResetsAt.Add(time.Second)
	require.Equal(t, int64(1), u.RetryAfter(), "at least one second")
}

type bundle struct {
	t       *testing.T
	ctx     context.Context
	dbURL   string
	pool    *pgxpool.Pool
	q       *store.Queries
	project uuid.UUID
}

// setup gives a test a database with one project on the given plan.
func setup(t *testing.T, planQuota int64, hardCapPercent int32) bundle {
	t.Helper()
	pool, dbURL := pgtest.NewPool(t)
	created, err := project.Create(t.Context(), pool, secrettest.Keyring(), "Acme", "example.com")
	require.NoError(t, err)
	q := store.New(pool)
	require.NoError(t, project.SetPlan(t.Context(), q, created.ID, project.Plan{Quota: planQuota, HardCapPercent: hardCapPercent}))
	return bundle{t: t, ctx: t.Context(), dbURL: dbURL, pool: pool, q: q, project: created.ID}
}

// add counts n hooks in a transaction of its own, committed unless Add
// refused them.
func (b bundle) add(n int64) (quota.Charge, error) {
	b.t.Helper()
	var charge quota.Charge
	err := pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
		var err error
		charge, err = quota.Add(b.ctx, store.New(tx), b.project, n)
		return err
	})
	return charge, err
}

func (b bundle) read() quota.Limits {
	b.t.Helper()
	l, err := quota.Read(b.ctx, b.q, b.project)
	require.NoError(b.t, err)
	return l
}

func percents(cs []quota.Crossing) []int32 {
	var out []int32
	for _, c := range cs {
		out = append(out, c.Percent)
	}
	return out
}

func TestReadWithoutUsage(t *testing.T) {
	t.Parallel()
	b := setup(t, 100, 200)
	l := b.read()
	now := l.Usage.Now.UTC()
	start := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	require.Equal(t, quota.Usage{
		Limit: 100, Used: 0, HardCap: 200,
		PeriodStart: start, ResetsAt: start.AddDate(0, 1, 0), Now: l.Usage.Now,
	}, normalise(l.Usage))
	require.Equal(t, 100, l.RatePerSecond, "the default plan")
	require.Equal(t, 200, l.RateBurst)

	_, err := quota.Read(b.ctx, b.q, uuid.New())
	require.ErrorIs(t, err, postgres.ErrNotFound)
}

// normalise puts the period's times in UTC for comparison.
func normalise(u quota.Usage) quota.Usage {
	u.PeriodStart = u.PeriodStart.UTC()
	u.ResetsAt = u.ResetsAt.UTC()
	return u
}

func TestThePeriodIsTheUTCMonthWhateverTheSessionTimeZone(t *testing.T) {
	t.Parallel()
	b := setup(t, 100, 200)
	// A zone where the UTC month starts on the last day of the local month
	// before: adding a month there lands on the wrong day.
	u, err := url.Parse(b.dbURL)
	require.NoError(t, err)
	params := u.Query()
	params.Set("timezone", "America/Los_Angeles")
	u.RawQuery = params.Encode()
	pool, err := postgres.Connect(b.ctx, u.String(), 1)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	var l quota.Limits
	err = pgx.BeginFunc(b.ctx, pool, func(tx pgx.Tx) error {
		if _, err := quota.Add(b.ctx, store.New(tx), b.project, 1); err != nil {
			return err
		}
		var err error
		l, err = quota.Read(b.ctx, store.New(tx), b.project)
		return err
	})
	require.NoError(t, err)
	require.Equal(t, int64(1), l.Usage.Used, "Read finds the row Add wrote")
	start := l.Usage.PeriodStart.UTC()
	require.Equal(t, time.Date(start.Year(), start.Month(), 1, 0, 0, 0, 0, time.UTC), start)
	require.Equal(t, start.AddDate(0, 1, 0), l.Usage.ResetsAt.UTC())
	again := b.read().Usage
	require.True(t, again.PeriodStart.Equal(l.Usage.PeriodStart), "the same period in a UTC session")
	require.Equal(t, int64(1), again.Used)
}

func TestAddCountsUpToTheHardCapAndReachesEachThresholdOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, 8, 200) // 75 % = 6 hooks, 100 % = 8, 150 % = 12; hard cap 16
	want := map[int64][]int32{6: {75}, 8: {100}, 12: {150}}
	for used := int64(1); used <= 16; used++ {
		charge, err := b.add(1)
		require.NoError(t, err, "hook %d", used)
		require.Equal(t, used, charge.Usage.Used)
		require.Equal(t, int64(16), charge.Usage.HardCap)
		require.Equal(t, want[used], percents(charge.Crossed), "hook %d", used)
		for _, c := range charge.Crossed {
			require.Equal(t, b.project, c.ProjectID)
			require.Equal(t, used, c.Used)
			require.Equal(t, int64(8), c.Quota)
			require.True(t, c.PeriodStart.Equal(charge.Usage.PeriodStart))
		}
	}
	for range 2 {
		charge, err := b.add(1)
		var exhausted *quota.ExhaustedError
		require.ErrorAs(t, err, &exhausted)
		require.ErrorIs(t, err, quota.ErrExhausted)
		require.Equal(t, int64(16), exhausted.Usage.Used, "the refused hook is not counted")
		require.Equal(t, exhausted.Usage, charge.Usage)
		require.Positive(t, exhausted.Usage.RetryAfter())
	}
	require.Equal(t, int64(16), b.read().Usage.Used)
}

func TestAddManyAtOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		before    int64
		n         int64
		crossed   []int32
		exhausted bool
	}{
		{"below every threshold", 0, 7, nil, false},
		{"several thresholds at once", 0, 15, []int32{75, 100, 150}, false},
		{"two of them", 0, 13, []int32{75, 100}, false},
		{"exactly to the hard cap", 10, 10, []int32{150}, false},
		{"one past the hard cap refuses them all", 10, 11, nil, true},
		{"already claimed thresholds are not claimed again", 8, 4, []int32{100}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, 10, 200) // thresholds at 8, 10 and 15 hooks; hard cap 20
			if tt.before > 0 {
				_, err := b.add(tt.before)
				require.NoError(t, err)
			}
			charge, err := b.add(tt.n)
			if tt.exhausted {
				require.ErrorIs(t, err, quota.ErrExhausted)
				require.Equal(t, tt.before, charge.Usage.Used)
				require.Equal(t, tt.before, b.read().Usage.Used, "nothing counted")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.before+tt.n, charge.Usage.Used)
			require.Equal(t, tt.crossed, percents(charge.Crossed))
		})
	}
}

func TestAddRefusesNothingToCount(t *testing.T) {
	t.Parallel()
	b := setup(t, 10, 200)
	_, err := b.add(0)
	require.Error(t, err)
}

func TestARolledBackCountClaimsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, 4, 200) // 75 % = 3 hooks
	_, err := b.add(2)
	require.NoError(t, err)

	err = pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
		charge, err := quota.Add(b.ctx, store.New(tx), b.project, 1)
		require.NoError(t, err)
		require.Equal(t, []int32{75}, percents(charge.Crossed))
		return errRollBack
	})
	require.ErrorIs(t, err, errRollBack)

	charge, err := b.add(1)
	require.NoError(t, err)
	require.Equal(t, []int32{75}, percents(charge.Crossed), "claimed again: the first claim was rolled back")
}

type rollBack struct{}

func (rollBack) Error() string { return "roll back" }

var errRollBack = rollBack{}

func TestConcurrentAddsClaimEachThresholdOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, 40, 200) // thresholds at 30, 40 and 60 hooks; hard cap 80
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		crossed  = map[int32]int{}
		accepted int
		refused  int
		other    []error
	)
	for range 10 {
		wg.Go(func() {
			for range 10 {
				charge, err := b.add(1)
				mu.Lock()
				switch {
				case err == nil:
					accepted++
					for _, c := range charge.Crossed {
						crossed[c.Percent]++
					}
				case errors.Is(err, quota.ErrExhausted):
					refused++
				default:
					other = append(other, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Empty(t, other)
	require.Equal(t, 80, accepted)
	require.Equal(t, 20, refused)
	require.Equal(t, map[int32]int{75: 1, 100: 1, 150: 1}, crossed)
}

func TestSetRateLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, 10, 200)
	require.NoError(t, quota.SetRateLimit(b.ctx, b.q, b.project, quota.RateLimit{PerSecond: 5, Burst: 7}))
	l := b.read()
	require.Equal(t, 5, l.RatePerSecond)
	require.Equal(t, 7, l.RateBurst)

	for _, bad := range []quota.RateLimit{{PerSecond: 0, Burst: 1}, {PerSecond: 1, Burst: 0}, {PerSecond: 100_001, Burst: 1}} {
		require.Error(t, quota.SetRateLimit(b.ctx, b.q, b.project, bad))
	}
	require.ErrorIs(t, quota.SetRateLimit(b.ctx, b.q, uuid.New(), quota.RateLimit{PerSecond: 1, Burst: 1}), postgres.ErrNotFound)
}

// BenchmarkRead measures what every authenticated request pays for its
// quota and rate-limit headers.
func BenchmarkRead(b *testing.B) {
	pool, _ := pgtest.NewPool(b)
	created, err := project.Create(b.Context(), pool, secrettest.Keyring(), "Acme", "example.com")
	require.NoError(b, err)
	q := store.New(pool)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := quota.Read(b.Context(), q, created.ID); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkAdd measures counting one hook in its own transaction, the
// project's usage row being the point where its creates queue.
func BenchmarkAdd(b *testing.B) {
	pool, _ := pgtest.NewPool(b)
	created, err := project.Create(b.Context(), pool, secrettest.Keyring(), "Acme", "example.com")
	require.NoError(b, err)
	require.NoError(b, project.SetPlan(b.Context(), store.New(pool), created.ID, project.Plan{Quota: 1 << 40, HardCapPercent: 200}))
	for b.Loop() {
		err := pgx.BeginFunc(b.Context(), pool, func(tx pgx.Tx) error {
			_, err := quota.Add(b.Context(), store.New(tx), created.ID, 1)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
