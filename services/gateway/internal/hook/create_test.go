package hook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/hook"
	"github.com/sundial-run/sundial/services/gateway/internal/idempotency"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type createBundle struct {
	t       *testing.T
	ctx     context.Context
	pool    *pgxpool.Pool
	q       *store.Queries
	project uuid.UUID
	hooks   *hook.Service
}

func setupCreate(t *testing.T, opts ...hook.Option) createBundle {
	t.Helper()
	pool, _ := pgtest.NewPool(t)
	created, err := project.Create(t.Context(), pool, secrettest.Keyring(), "Acme", "example.com")
	require.NoError(t, err)
	return createBundle{
		t: t, ctx: t.Context(), pool: pool, q: store.New(pool), project: created.ID,
		hooks: hook.NewService(pool, opts...),
	}
}

func (b createBundle) setPlan(quotaHooks int64, hardCapPercent int32) {
	b.t.Helper()
	require.NoError(b.t, project.SetPlan(b.ctx, b.q, b.project, project.Plan{Quota: quotaHooks, HardCapPercent: hardCapPercent}))
}

func (b createBundle) used() int64 {
	b.t.Helper()
	l, err := quota.Read(b.ctx, b.q, b.project)
	require.NoError(b.t, err)
	return l.Usage.Used
}

func newHook(path, key string) hook.New {
	return hook.New{Path: path, Data: json.RawMessage(`{"n":1}`), PostIn: time.Minute, IdempotencyKey: key}
}

func at(s string) *time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return &t
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	type step struct {
		n hook.New
		// same names an earlier step whose hook this one must return; -1
		// means a new hook.
		same int
		err  error
	}
	withData := func(n hook.New, data string) hook.New { n.Data = json.RawMessage(data); return n }
	withPostAt := func(n hook.New, s string) hook.New { n.PostAt = at(s); n.PostIn = 0; return n }
	withRetry := func(n hook.New, r string) hook.New { n.RetryOverride = json.RawMessage(r); return n }
	tests := []struct {
		name    string
		ttl     time.Duration
		steps   []step
		deleted int // the step whose hook is deleted after it, or -1
	}{
		{"a repeat returns the first hook", idempotency.TTL, []step{
			{newHook("/a", "k"), -1, nil},
			{newHook("/a", "k"), 0, nil},
			{newHook("/a", "k"), 0, nil},
		}, -1},
		{"without a key every request creates", idempotency.TTL, []step{
			{newHook("/a", ""), -1, nil},
			{newHook("/a", ""), -1, nil},
		}, -1},
		{"different keys create different hooks", idempotency.TTL, []step{
			{newHook("/a", "k1"), -1, nil},
			{newHook("/a", "k2"), -1, nil},
			{newHook("/a", "k1"), 0, nil},
		}, -1},
		{"another path with the same key is refused", idempotency.TTL, []step{
			{newHook("/a", "k"), -1, nil},
			{newHook("/b", "k"), -1, idempotency.ErrKeyReused},
			{newHook("/a", "k"), 0, nil},
		}, -1},
		{"other data with the same key is refused", idempotency.TTL, []step{
			{newHook("/a", "k"), -1, nil},
			{withData(newHook("/a", "k"), `{"n":2}`), -1, idempotency.ErrKeyReused},
		}, -1},
		{"the same data with its members in another order is a repeat", idempotency.TTL, []step{
			{withData(newHook("/a", "k"), `{"a":1,"b":{"c":[1,{"d":2,"e":3}],"f":"x"}}`), -1, nil},
			{withData(newHook("/a", "k"), `{"b":{"f":"x","c":[1,{"e":3,"d":2}]},"a":1}`), 0, nil},
			{withData(newHook("/a", "k"), " {\n \"a\" : 1, \"b\":{\"c\":[1,{\"d\":2,\"e\":3}],\"f\":\"\\u0078\"}}"), 0, nil},
		}, -1},
		{"the same members in another array order are other data", idempotency.TTL, []step{
			{withData(newHook("/a", "k"), `{"a":[1,2]}`), -1, nil},
			{withData(newHook("/a", "k"), `{"a":[2,1]}`), -1, idempotency.ErrKeyReused},
		}, -1},
		{"a retryOverride with its members in another order is a repeat", idempotency.TTL, []step{
			{withRetry(newHook("/a", "k"), `{"minRetries":1,"delaySecs":5,"strategy":"fixed","backoffFactor":2,"jitter":false}`), -1, nil},
			{withRetry(newHook("/a", "k"), `{"jitter":false,"strategy":"fixed","delaySecs":5,"backoffFactor":2,"minRetries":1}`), 0, nil},
		}, -1},
		{"another schedule with the same key is refused", idempotency.TTL, []step{
			{newHook("/a", "k"), -1, nil},
			{withPostAt(newHook("/a", "k"), "2030-01-01T00:00:00Z"), -1, idempotency.ErrKeyReused},
		}, -1},
		{"another retryOverride with the same key is refused", idempotency.TTL, []step{
			{newHook("/a", "k"), -1, nil},
			{withRetry(newHook("/a", "k"), `{"minRetries":1,"delaySecs":5,"strategy":"fixed","backoffFactor":2,"jitter":false}`), -1, idempotency.ErrKeyReused},
		}, -1},
		{"the same instant written with another offset is a repeat", idempotency.TTL, []step{
			{withPostAt(newHook("/a", "k"), "2030-01-01T00:00:00Z"), -1, nil},
			{withPostAt(newHook("/a", "k"), "2030-01-01T01:00:00+01:00"), 0, nil},
		}, -1},
		{"after the time to live the key creates a new hook", 0, []step{
			{newHook("/a", "k"), -1, nil},
			{newHook("/a", "k"), -1, nil},
			{newHook("/b", "k"), -1, nil},
		}, -1},
		{"the key of a deleted hook is refused", idempotency.TTL, []step{
			{newHook("/a", "k"), -1, nil},
			{newHook("/a", "k"), -1, idempotency.ErrHookDeleted},
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupCreate(t, hook.WithIdempotencyTTL(tt.ttl))
			var ids []uuid.UUID
			created := int64(0)
			for i, s := range tt.steps {
				h, usage, err := b.hooks.Create(b.ctx, b.project, s.n)
				if s.err != nil {
					require.ErrorIs(t, err, s.err, "step %d", i)
					ids = append(ids, uuid.Nil)
					continue
				}
				require.NoError(t, err, "step %d", i)
				ids = append(ids, h.ID)
				if s.same >= 0 {
					require.Equal(t, ids[s.same], h.ID, "step %d returns the hook of step %d", i, s.same)
				} else {
					require.NotContains(t, ids[:i], h.ID, "step %d creates a hook", i)
					created++
				}
				require.Equal(t, created, usage.Used, "step %d: repeats count nothing", i)
				if i == tt.deleted {
					require.NoError(t, b.hooks.Delete(b.ctx, b.project, h.ID))
				}
			}
			require.Equal(t, created, b.used())
		})
	}
}

func TestARepeatIsAnsweredPastTheHardCap(t *testing.T) {
	t.Parallel()
	b := setupCreate(t)
	b.setPlan(1, 100)
	first, _, err := b.hooks.Create(b.ctx, b.project, newHook("/a", "k"))
	require.NoError(t, err)
	_, _, err = b.hooks.Create(b.ctx, b.project, newHook("/a", "other"))
	require.ErrorIs(t, err, quota.ErrExhausted)

	again, usage, err := b.hooks.Create(b.ctx, b.project, newHook("/a", "k"))
	require.NoError(t, err, "a repeat creates nothing, so the quota does not refuse it")
	require.Equal(t, first.ID, again.ID)
	require.Equal(t, int64(1), usage.Used)
	require.Equal(t, int64(1), usage.Limit)
}

func TestARefusedCreateLeavesItsKeyFree(t *testing.T) {
	t.Parallel()
	b := setupCreate(t)
	b.setPlan(1, 100)
	_, _, err := b.hooks.Create(b.ctx, b.project, newHook("/a", ""))
	require.NoError(t, err)
	_, usage, err := b.hooks.Create(b.ctx, b.project, newHook("/b", "k"))
	var exhausted *quota.ExhaustedError
	require.ErrorAs(t, err, &exhausted)
	require.Equal(t, int64(1), usage.Used, "the usage comes with the refusal")

	b.setPlan(10, 100)
	_, _, err = b.hooks.Create(b.ctx, b.project, newHook("/c", "k"))
	require.NoError(t, err, "the refused request did not keep the key")
	require.Equal(t, int64(2), b.used())
}

func TestConcurrentRequestsWithOneKeyCreateOneHook(t *testing.T) {
	t.Parallel()
	b := setupCreate(t)
	const requests = 20
	ids := make(chan uuid.UUID, requests)
	errs := make(chan error, requests)
	var wg sync.WaitGroup
	for range requests {
		wg.Go(func() {
			h, _, err := b.hooks.Create(b.ctx, b.project, newHook("/a", "same"))
			if err != nil {
				errs <- err
				return
			}
			ids <- h.ID
		})
	}
	wg.Wait()
	close(ids)
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	distinct := map[uuid.UUID]int{}
	for id := range ids {
		distinct[id]++
	}
	require.Len(t, distinct, 1, "one hook, returned to every request")
	require.Equal(t, int64(1), b.used(), "counted once")
}

// recorder counts the crossings a gateway announces, and passes them on.
type recorder struct {
	next hook.Announcer
	mu   sync.Mutex
	got  map[int32]int
}

func (r *recorder) Announce(ctx context.Context, crossed []quota.Crossing) {
	r.mu.Lock()
	for _, c := range crossed {
		r.got[c.Percent]++
	}
	r.mu.Unlock()
	r.next.Announce(ctx, crossed)
}

// TestThresholdAlertsAreSentOnceAcrossGateways runs two gateways' hook
// services, each with its own alert publisher, on one database and one
// NATS server, and creates hooks from both at once past every threshold.
func TestThresholdAlertsAreSentOnceAcrossGateways(t *testing.T) {
	t.Parallel()
	b := setupCreate(t)
	b.setPlan(40, 200) // alerts at 30, 40 and 60 hooks; hard cap 80
	ns := natstest.Start(t, natstest.Options{})
	_, js := ns.Connect(t)
	require.NoError(t, event.EnsureStreams(b.ctx, js, event.DefaultReplicas))

	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	var gateways []*hook.Service
	var recorders []*recorder
	for range 2 {
		alerts, err := quota.NewAlerts(js, event.DefaultReplicas, log, 5*time.Second)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { alerts.Run(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
		r := &recorder{next: alerts, got: map[int32]int{}}
		recorders = append(recorders, r)
		gateways = append(gateways, hook.NewService(b.pool, hook.WithAnnouncer(r)))
	}

	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		statuses  = map[string]int{}
		unexpects []error
	)
	for worker := range 16 {
		wg.Go(func() {
			g := gateways[worker%2]
			for range 6 {
				_, _, err := g.Create(b.ctx, b.project, newHook("/a", ""))
				mu.Lock()
				switch {
				case err == nil:
					statuses["created"]++
				case errors.Is(err, quota.ErrExhausted):
					statuses["exhausted"]++
				default:
					unexpects = append(unexpects, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Empty(t, unexpects)
	require.Equal(t, map[string]int{"created": 80, "exhausted": 16}, statuses)

	announced := map[int32]int{}
	for _, r := range recorders {
		for pct, n := range r.got {
			announced[pct] += n
		}
	}
	require.Equal(t, map[int32]int{75: 1, 100: 1, 150: 1}, announced, "one gateway announced each threshold, once")

	stream, err := js.Stream(b.ctx, event.StreamAlerts)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		info, err := stream.Info(b.ctx)
		return err == nil && info.State.Msgs == 3
	}, 10*time.Second, 10*time.Millisecond)
	got := map[int32]string{}
	for seq := uint64(1); seq <= 3; seq++ {
		msg, err := stream.GetMsg(b.ctx, seq)
		require.NoError(t, err)
		var a eventv1.Alert
		require.NoError(t, proto.Unmarshal(msg.Data, &a))
		require.Equal(t, eventv1.AlertKind_ALERT_KIND_QUOTA_THRESHOLD, a.GetKind())
		require.Equal(t, b.project.String(), a.GetProjectId())
		require.Equal(t, int64(40), a.GetQuota())
		require.GreaterOrEqual(t, a.GetUsage()*100, int64(40)*int64(a.GetThresholdPercent()))
		require.Equal(t, event.MsgID(event.KindAlert, a.GetAlertId(), 0), msg.Header.Get(jetstream.MsgIDHeader))
		got[a.GetThresholdPercent()] = a.GetAlertId()
	}
	require.Len(t, got, 3)
	for _, pct := range []int32{75, 100, 150} {
		require.Contains(t, got, pct)
	}
}

// A create's statements run on generic plans from their first execution,
// with or without an IdempotencyKey: PostgreSQL planned InsertHooks anew at
// every create before (a custom plan each time, about a third of the
// statement's cost).
func TestCreatesArePlannedOncePerConnection(t *testing.T) {
	t.Parallel()
	one, err := postgres.Connect(t.Context(), pgtest.NewDB(t), 1)
	require.NoError(t, err)
	t.Cleanup(one.Close)
	created, err := project.Create(t.Context(), one, secrettest.Keyring(), "Acme", "example.com")
	require.NoError(t, err)
	hooks := hook.NewService(one)
	for i := range 6 {
		key := ""
		if i%2 == 1 {
			key = fmt.Sprintf("k%d", i)
		}
		_, _, err := hooks.Create(t.Context(), created.ID, newHook("/a", key))
		require.NoError(t, err)
	}
	var generic, custom int64
	require.NoError(t, one.QueryRow(t.Context(),
		`SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE '-- name: InsertHooks %'`,
	).Scan(&generic, &custom))
	require.EqualValues(t, 6, generic)
	require.Zero(t, custom)
}
