package hook_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/batch"
	"github.com/sundial-run/sundial/services/gateway/internal/hook"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
	"github.com/sundial-run/sundial/testkit/logtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

// batchBundle is a createBundle with a second project and batchers on its
// pool (replicas of the gateway), each with a recorder of its announced
// crossings and a log.
type batchBundle struct {
	createBundle
	other    uuid.UUID
	logs     *logtest.Buffer
	recorder *recorder
}

func setupBatch(t *testing.T) batchBundle {
	t.Helper()
	b := batchBundle{createBundle: setupCreate(t), logs: &logtest.Buffer{}}
	other, err := project.Create(b.ctx, b.pool, secrettest.Keyring(), "Other", "other.example.com")
	require.NoError(t, err)
	b.other = other.ID
	b.recorder = &recorder{next: discard{}, got: map[int32]int{}}
	return b
}

type discard struct{}

func (discard) Announce(context.Context, []quota.Crossing) {}

// batcher returns a batcher that Run only starts when start is called, so
// that a test can queue creates first and know they make one batch.
func (b batchBundle) batcher(cfg hook.BatchConfig) (*hook.Batcher, func()) {
	b.t.Helper()
	log := slog.New(slog.NewJSONHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	bat, err := hook.NewBatcher(hook.NewService(b.pool, hook.WithAnnouncer(b.recorder)), cfg, log)
	require.NoError(b.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var once sync.Once
	start := func() { once.Do(func() { go func() { bat.Run(ctx); close(done) }() }) }
	b.t.Cleanup(func() {
		start()
		cancel()
		<-done
	})
	return bat, start
}

// requireLogged waits for a batch's log line: a batch answers its
// requests before it logs, so the line may follow the last answer.
func (b batchBundle) requireLogged(want string) {
	b.t.Helper()
	require.EventuallyWithT(b.t, func(c *assert.CollectT) { assert.Contains(c, b.logs.String(), want) },
		10*time.Second, time.Millisecond)
}

// running returns a started batcher.
func (b batchBundle) running(cfg hook.BatchConfig) *hook.Batcher {
	bat, start := b.batcher(cfg)
	start()
	return bat
}

var smallBatches = hook.BatchConfig{MaxBatch: 16, Linger: time.Millisecond, InFlight: 2, Timeout: 10 * time.Second}

// result is one create's answer.
type result struct {
	project uuid.UUID
	hook    hook.Hook
	usage   quota.Usage
	err     error
}

// createAll runs the creates at once, one goroutine each, and returns
// their answers in the order given.
func createAll(ctx context.Context, c interface {
	Create(context.Context, uuid.UUID, hook.New) (hook.Hook, quota.Usage, error)
}, projects []uuid.UUID, n func(i int) hook.New) []result {
	out := make([]result, len(projects))
	var wg sync.WaitGroup
	for i, p := range projects {
		wg.Go(func() {
			h, u, err := c.Create(ctx, p, n(i))
			out[i] = result{project: p, hook: h, usage: u, err: err}
		})
	}
	wg.Wait()
	return out
}

func repeat(n int, ids ...uuid.UUID) []uuid.UUID {
	var out []uuid.UUID
	for range n {
		out = append(out, ids...)
	}
	return out
}

func TestBatcherCreatesEveryHookAndCountsEachProject(t *testing.T) {
	t.Parallel()
	b := setupBatch(t)
	bat := b.running(smallBatches)
	results := createAll(b.ctx, bat, repeat(100, b.project, b.other), func(i int) hook.New {
		n := newHook("/batch", "")
		if i%3 == 0 {
			n.PostIn, n.PostAt = 0, at("2031-01-02T03:04:05Z")
		}
		return n
	})

	usages := map[uuid.UUID][]int64{}
	for i, r := range results {
		require.NoError(t, r.err)
		require.Equal(t, r.project, r.hook.ProjectID)
		require.Equal(t, "/batch", r.hook.Path)
		require.JSONEq(t, `{"n":1}`, string(r.hook.Data))
		require.Equal(t, "pending", r.hook.Status)
		if i%3 == 0 {
			require.True(t, at("2031-01-02T03:04:05Z").Equal(r.hook.PostAt))
		} else {
			require.WithinDuration(t, r.hook.CreatedAt.Add(time.Minute), r.hook.PostAt, time.Second, "postIn from the database clock")
		}
		usages[r.project] = append(usages[r.project], r.usage.Used)
		stored, err := bat.Get(b.ctx, r.project, r.hook.ID)
		require.NoError(t, err)
		require.Equal(t, r.hook, stored)
	}
	for _, p := range []uuid.UUID{b.project, b.other} {
		slices.Sort(usages[p])
		want := make([]int64, 100)
		for i := range want {
			want[i] = int64(i + 1)
		}
		require.Equal(t, want, usages[p], "each create saw its own count")
		hooks, err := storetest.New(b.pool).ListProjectHooksForBulkTest(b.ctx, p)
		require.NoError(t, err)
		require.Len(t, hooks, 100)
		l, err := quota.Read(b.ctx, b.q, p)
		require.NoError(t, err)
		require.Equal(t, int64(100), l.Usage.Used)
	}
}

// TestBatcherHardCapIsExact creates from two batching replicas and one
// that creates one by one, all at once, past the hard cap.
func TestBatcherHardCapIsExact(t *testing.T) {
	t.Parallel()
	b := setupBatch(t)
	b.setPlan(20, 150) // hard cap 30
	replicas := []interface {
		Create(context.Context, uuid.UUID, hook.New) (hook.Hook, quota.Usage, error)
	}{b.running(smallBatches), b.running(smallBatches), b.hooks}
	var (
		mu      sync.Mutex
		results []result
		wg      sync.WaitGroup
	)
	for _, r := range replicas {
		wg.Go(func() {
			got := createAll(b.ctx, r, repeat(30, b.project), func(int) hook.New { return newHook("/cap", "") })
			mu.Lock()
			results = append(results, got...)
			mu.Unlock()
		})
	}
	wg.Wait()

	created := 0
	for _, r := range results {
		var exhausted *quota.ExhaustedError
		switch {
		case r.err == nil:
			created++
		case errors.As(r.err, &exhausted):
			require.Equal(t, int64(30), exhausted.Usage.Used, "refused with the standing without it")
			require.Equal(t, int64(30), r.usage.Used)
		default:
			require.NoError(t, r.err)
		}
	}
	require.Equal(t, 30, created)
	require.Equal(t, int64(30), b.used())
	hooks, err := storetest.New(b.pool).ListProjectHooksForBulkTest(b.ctx, b.project)
	require.NoError(t, err)
	require.Len(t, hooks, 30, "no refused hook was stored")
}

// TestBatcherJudgesABatchInOrder queues creates before the batcher runs,
// so that they make one batch with room for some of them only. A create
// counts as active before it reaches the queue, so some may still be on
// their way when the batcher starts (seen on a slow machine: batches of 1,
// 2 and 17): the batch lingers (up to MaxLinger) until it holds every
// active create, which the batcher's Enough ends at once.
func TestBatcherJudgesABatchInOrder(t *testing.T) {
	t.Parallel()
	b := setupBatch(t)
	b.setPlan(8, 150) // alerts at 6, 8 and 12 hooks; hard cap 12
	bat, start := b.batcher(hook.BatchConfig{MaxBatch: 64, Linger: hook.MaxLinger, InFlight: 1, Timeout: 10 * time.Second})
	var (
		results []result
		done    = make(chan struct{})
	)
	go func() {
		results = createAll(b.ctx, bat, repeat(20, b.project), func(int) hook.New { return newHook("/a", "") })
		close(done)
	}()
	require.Eventually(t, func() bool { return bat.Active() == 20 }, 10*time.Second, time.Millisecond)
	start()
	<-done

	var used []int64
	for _, r := range results {
		if r.err == nil {
			used = append(used, r.usage.Used)
		} else {
			require.ErrorIs(t, r.err, quota.ErrExhausted)
		}
	}
	slices.Sort(used)
	require.Equal(t, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, used)
	require.Equal(t, int64(12), b.used())
	require.Equal(t, map[int32]int{75: 1, 100: 1, 150: 1}, b.recorder.got, "each threshold announced once")
	alerts, err := storetest.New(b.pool).ListAlertsForTest(b.ctx, b.project)
	require.NoError(t, err)
	require.Len(t, alerts, 3, "each threshold's alert stored once")
	b.requireLogged(`"creates":20`) // one batch
}

// TestBatcherClaimsThresholdsOnceUnderConcurrency crosses every threshold
// from two batching replicas at once.
func TestBatcherClaimsThresholdsOnceUnderConcurrency(t *testing.T) {
	t.Parallel()
	b := setupBatch(t)
	b.setPlan(40, 200) // alerts at 30, 40 and 60 hooks; hard cap 80
	var wg sync.WaitGroup
	for _, bat := range []*hook.Batcher{b.running(smallBatches), b.running(smallBatches)} {
		wg.Go(func() {
			for _, r := range createAll(b.ctx, bat, repeat(40, b.project), func(int) hook.New { return newHook("/a", "") }) {
				require.NoError(t, r.err)
			}
		})
	}
	wg.Wait()
	require.Equal(t, int64(80), b.used())
	require.Equal(t, map[int32]int{75: 1, 100: 1, 150: 1}, b.recorder.got)
	alerts, err := storetest.New(b.pool).ListAlertsForTest(b.ctx, b.project)
	require.NoError(t, err)
	require.Len(t, alerts, 3)
}

// TestBatcherBadRequestFailsAlone puts a hook PostgreSQL refuses (a NUL
// character in its data, which the API would have refused) in a batch: the
// batch is created again one by one, and only that request fails.
func TestBatcherBadRequestFailsAlone(t *testing.T) {
	t.Parallel()
	b := setupBatch(t)
	bat, start := b.batcher(hook.BatchConfig{MaxBatch: 64, Linger: 0, InFlight: 1, Timeout: 10 * time.Second})
	const bad = 4
	var (
		results []result
		done    = make(chan struct{})
	)
	go func() {
		results = createAll(b.ctx, bat, repeat(10, b.project), func(i int) hook.New {
			n := newHook("/a", "")
			if i == bad {
				n.Data = json.RawMessage(`{"k":"\u0000"}`)
			}
			return n
		})
		close(done)
	}()
	require.Eventually(t, func() bool { return bat.Active() == 10 }, 10*time.Second, time.Millisecond)
	start()
	<-done

	for i, r := range results {
		if i == bad {
			require.Error(t, r.err)
			require.NotErrorIs(t, r.err, quota.ErrExhausted)
			continue
		}
		require.NoError(t, r.err)
	}
	require.Equal(t, int64(9), b.used(), "the bad request is not counted")
	hooks, err := storetest.New(b.pool).ListProjectHooksForBulkTest(b.ctx, b.project)
	require.NoError(t, err)
	require.Len(t, hooks, 9)
	b.requireLogged("created request by request")
}

// TestBatcherLeavesIdempotentCreatesToTheService checks that a key still
// names one hook through a batcher.
func TestBatcherLeavesIdempotentCreatesToTheService(t *testing.T) {
	t.Parallel()
	b := setupBatch(t)
	bat := b.running(smallBatches)
	results := createAll(b.ctx, bat, repeat(8, b.project), func(int) hook.New { return newHook("/a", "key") })
	for _, r := range results {
		require.NoError(t, r.err)
		require.Equal(t, results[0].hook.ID, r.hook.ID)
	}
	require.Equal(t, int64(1), b.used())
}

func TestBatcherAfterRunAnswersStopped(t *testing.T) {
	t.Parallel()
	b := setupBatch(t)
	log := slog.New(slog.NewJSONHandler(b.logs, nil))
	bat, err := hook.NewBatcher(hook.NewService(b.pool), smallBatches, log)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(b.ctx)
	cancel()
	bat.Run(ctx)
	_, _, err = bat.Create(b.ctx, b.project, newHook("/a", ""))
	require.ErrorIs(t, err, batch.ErrStopped)
}

func TestNewBatcherRefusesBadConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []hook.BatchConfig{
		{MaxBatch: 0, InFlight: 1, Timeout: time.Second},
		{MaxBatch: hook.MaxBatchSize + 1, InFlight: 1, Timeout: time.Second},
		{MaxBatch: 1, Linger: -1, InFlight: 1, Timeout: time.Second},
		{MaxBatch: 1, Linger: hook.MaxLinger + 1, InFlight: 1, Timeout: time.Second},
		{MaxBatch: 1, InFlight: 0, Timeout: time.Second},
		{MaxBatch: 1, InFlight: 1},
	} {
		_, err := hook.NewBatcher(nil, cfg, slog.Default())
		require.Error(t, err, "%+v", cfg)
	}
}
