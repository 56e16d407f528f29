package bulk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/bulk"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// t0 is the start of the time range the tests select by.
var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

type bundle struct {
	pool   *pgxpool.Pool
	q      *store.Queries
	svc    *bulk.Service
	alerts *recorder
}

// recorder is an Announcer that keeps what it is told.
type recorder struct {
	mu      sync.Mutex
	crossed []quota.Crossing
}

func (r *recorder) Announce(_ context.Context, crossed []quota.Crossing) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.crossed = append(r.crossed, crossed...)
}

func (r *recorder) percents() []int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]int32, len(r.crossed))
	for i, c := range r.crossed {
		out[i] = c.Percent
	}
	return out
}

func setup(t *testing.T) bundle {
	t.Helper()
	pool, _ := pgtest.NewPool(t)
	alerts := &recorder{}
	return bundle{pool: pool, q: store.New(pool), svc: bulk.NewService(pool, alerts), alerts: alerts}
}

// project creates a project with a quota of planQuota hooks and a hard cap
// of capPercent of it.
func (b bundle) project(t *testing.T, planQuota int64, capPercent int32) uuid.UUID {
	t.Helper()
	id := uuid.Must(uuid.NewV7())
	require.NoError(t, storetest.New(b.pool).InsertProjectForBulkTest(context.Background(), storetest.InsertProjectForBulkTestParams{
		ID: id, Domain: "receiver.example.com", PlanQuota: planQuota, PlanHardCapPercent: capPercent,
	}))
	return id
}

// spec describes a hook to create; zero fields take defaults.
type spec struct {
	status     string
	postAt     time.Time
	path       string
	attempts   int32
	sequenceID *uuid.UUID
	tags       []string
	key        *string
	// want says whether the action under test should act on the hook.
	want bool
}

func (b bundle) hook(t *testing.T, projectID uuid.UUID, s spec) storetest.Hook {
	t.Helper()
	if s.path == "" {
		s.path = "/hook"
	}
	if s.postAt.IsZero() {
		s.postAt = t0.Add(time.Hour)
	}
	p := storetest.InsertHookForBulkTestParams{
		ID: uuid.Must(uuid.NewV7()), ProjectID: projectID, Path: s.path, Domain: "receiver.example.com",
		Data: json.RawMessage(fmt.Sprintf(`{"n":%q}`, uuid.NewString())), PostAt: s.postAt, Status: s.status,
		Attempts: s.attempts, SequenceID: s.sequenceID, Tags: s.tags, Key: s.key,
	}
	if s.status == "failed" || s.status == "retry" {
		p.FailureError = ptr("HTTP 503")
		p.TryAt = ptr(s.postAt.Add(time.Minute))
		p.Attempts = max(p.Attempts, 1)
	}
	if s.status == "completed" {
		p.TryAt = ptr(s.postAt)
		p.Attempts = max(p.Attempts, 1)
	}
	h, err := storetest.New(b.pool).InsertHookForBulkTest(context.Background(), p)
	require.NoError(t, err)
	return h
}

// get returns the hook, or false when it no longer exists.
func (b bundle) get(t *testing.T, id uuid.UUID) (storetest.Hook, bool) {
	t.Helper()
	h, err := storetest.New(b.pool).GetHookForBulkTest(context.Background(), id)
	if errors.Is(postgres.Translate(err), postgres.ErrNotFound) {
		return storetest.Hook{}, false
	}
	require.NoError(t, err)
	return h, true
}

func (b bundle) projectHooks(t *testing.T, projectID uuid.UUID) []storetest.Hook {
	t.Helper()
	hooks, err := storetest.New(b.pool).ListProjectHooksForBulkTest(context.Background(), projectID)
	require.NoError(t, err)
	return hooks
}

func (b bundle) usage(t *testing.T, projectID uuid.UUID) int64 {
	t.Helper()
	n, err := storetest.New(b.pool).GetUsageForBulkTest(context.Background(), projectID)
	require.NoError(t, err)
	return n
}

func selectIDs(t *testing.T, hooks ...storetest.Hook) bulk.Selection {
	t.Helper()
	raw := make([]string, len(hooks))
	for i, h := range hooks {
		raw[i] = h.ID.String()
	}
	sel, err := bulk.Request{HookIDs: &raw}.Validate()
	require.NoError(t, err)
	return sel
}

// action is one bulk action, the state it acts on, and how to tell that a
// hook was acted on.
type action struct {
	name  string
	state string
	run   func(b bundle, projectID uuid.UUID, sel bulk.Selection) (int64, error)
	// dryRun is run's dry run.
	dryRun func(b bundle, projectID uuid.UUID, sel bulk.Selection) (bulk.Result, error)
	// actedOn reports whether the action changed the hook, given the
	// project's hooks before and after.
	actedOn func(t *testing.T, b bundle, h storetest.Hook, after []storetest.Hook) bool
}

var actions = []action{
	{
		name: "retry", state: "failed",
		run: func(b bundle, p uuid.UUID, sel bulk.Selection) (int64, error) {
			out, err := b.svc.Retry(context.Background(), p, bulk.Order{Selection: sel})
			return out.Affected, err
		},
		dryRun: func(b bundle, p uuid.UUID, sel bulk.Selection) (bulk.Result, error) {
			return b.svc.Retry(context.Background(), p, bulk.Order{Selection: sel, DryRun: true})
		},
		actedOn: func(t *testing.T, b bundle, h storetest.Hook, _ []storetest.Hook) bool {
			row, ok := b.get(t, h.ID)
			require.True(t, ok)
			if row.UpdatedAt.Equal(h.UpdatedAt) {
				return false
			}
			require.Equal(t, "pending", row.Status)
			return true
		},
	},
	{
		name: "cancel", state: "pending",
		run: func(b bundle, p uuid.UUID, sel bulk.Selection) (int64, error) {
			out, err := b.svc.Cancel(context.Background(), p, bulk.Order{Selection: sel})
			return out.Affected, err
		},
		dryRun: func(b bundle, p uuid.UUID, sel bulk.Selection) (bulk.Result, error) {
			return b.svc.Cancel(context.Background(), p, bulk.Order{Selection: sel, DryRun: true})
		},
		actedOn: func(t *testing.T, b bundle, h storetest.Hook, _ []storetest.Hook) bool {
			_, ok := b.get(t, h.ID)
			return !ok
		},
	},
	{
		name: "replay", state: "completed",
		run: func(b bundle, p uuid.UUID, sel bulk.Selection) (int64, error) {
			out, err := b.svc.Replay(context.Background(), p, bulk.Order{Selection: sel})
			return out.Affected, err
		},
		dryRun: func(b bundle, p uuid.UUID, sel bulk.Selection) (bulk.Result, error) {
			return b.svc.Replay(context.Background(), p, bulk.Order{Selection: sel, DryRun: true})
		},
		actedOn: func(t *testing.T, b bundle, h storetest.Hook, after []storetest.Hook) bool {
			copies := 0
			for _, a := range after {
				if a.ID != h.ID && string(a.Data) == string(h.Data) {
					copies++
				}
			}
			require.LessOrEqual(t, copies, 1, "one replay per hook")
			return copies == 1
		},
	},
}

func TestRangeSelection(t *testing.T) {
	t.Parallel()
	seqA, seqB := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	cases := []struct {
		name  string
		req   func(r *bulk.Request)
		hooks []spec
	}{
		{"startTime inclusive, endTime exclusive", nil, []spec{
			{postAt: t0.Add(-time.Microsecond)},
			{postAt: t0, want: true},
			{postAt: t0.Add(time.Hour), want: true},
			{postAt: t0.Add(24*time.Hour - time.Microsecond), want: true},
			{postAt: t0.Add(24 * time.Hour)},
		}},
		{"limit takes the earliest", func(r *bulk.Request) { r.Limit = ptr(2) }, []spec{
			{postAt: t0.Add(3 * time.Hour)},
			{postAt: t0.Add(time.Hour), want: true},
			{postAt: t0.Add(2 * time.Hour)},
			{postAt: t0, want: true},
		}},
		{"endpoint key without a query string matches any query string", func(r *bulk.Request) { r.EndpointKey = ptr("/orders") }, []spec{
			{path: "/orders", want: true},
			{path: "/orders?id=1", want: true},
			{path: "/orders/1"},
			{path: "/orders2"},
			{path: "/other?next=/orders"},
		}},
		{"endpoint key with a query string matches exactly", func(r *bulk.Request) { r.EndpointKey = ptr("/orders?id=1") }, []spec{
			{path: "/orders"},
			{path: "/orders?id=1", want: true},
			{path: "/orders?id=12"},
		}},
		{"sequence", func(r *bulk.Request) { r.SequenceID = ptr(seqA.String()) }, []spec{
			{sequenceID: &seqA, want: true},
			{sequenceID: &seqA, postAt: t0.Add(25 * time.Hour)},
			{sequenceID: &seqB},
			{},
		}},
		{"tags: every one", func(r *bulk.Request) { r.Tags = []string{"campaign:spring", "user-42"} }, []spec{
			{tags: []string{"user-42", "campaign:spring"}, want: true},
			{tags: []string{"campaign:spring", "x", "user-42"}, want: true},
			{tags: []string{"campaign:spring"}},
			{tags: []string{"user-42"}},
			{},
		}},
		{"every filter at once", func(r *bulk.Request) {
			r.EndpointKey, r.SequenceID, r.Limit = ptr("/a"), ptr(seqA.String()), ptr(1)
		}, []spec{
			{path: "/a", sequenceID: &seqA, postAt: t0.Add(2 * time.Hour)},
			{path: "/a", sequenceID: &seqA, postAt: t0.Add(time.Hour), want: true},
			{path: "/b", sequenceID: &seqA, postAt: t0},
			{path: "/a", sequenceID: &seqB, postAt: t0},
		}},
	}
	b := setup(t)
	for _, a := range actions {
		for _, tc := range cases {
			t.Run(a.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				project := b.project(t, 100000, 200)
				var hooks []storetest.Hook
				wanted := 0
				for _, s := range tc.hooks {
					s.status = a.state
					hooks = append(hooks, b.hook(t, project, s))
					if s.want {
						wanted++
					}
				}
				req := bulk.Request{StartTime: ptr(t0.Format(time.RFC3339)), EndTime: ptr(t0.Add(24 * time.Hour).Format(time.RFC3339)), Limit: ptr(100)}
				if tc.req != nil {
					tc.req(&req)
				}
				sel, err := req.Validate()
				require.NoError(t, err)
				// The dry run before the action selects the same hooks,
				// and changes none.
				before := b.projectHooks(t, project)
				dry, err := a.dryRun(b, project, sel)
				require.NoError(t, err)
				require.EqualValues(t, wanted, dry.Affected, "dry run")
				require.Equal(t, before, b.projectHooks(t, project), "a dry run changes nothing")
				require.Equal(t, sampleOf(tc.hooks, hooks), idsOf(dry.Sample), "the sample: the wanted hooks, earliest first")

				n, err := a.run(b, project, sel)
				require.NoError(t, err)
				require.EqualValues(t, wanted, n, "affected")
				after := b.projectHooks(t, project)
				for i, h := range hooks {
					require.Equal(t, tc.hooks[i].want, a.actedOn(t, b, h, after), "hook %d (%s at %s)", i, h.Path, h.PostAt)
				}
			})
		}
	}
}

func TestHooksInOtherStatesAreSkipped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, a := range actions {
		for _, form := range []string{"ids", "range"} {
			t.Run(a.name+"/"+form, func(t *testing.T) {
				t.Parallel()
				project := b.project(t, 100000, 200)
				applicable := []string{a.state}
				if a.name == "cancel" {
					applicable = append(applicable, "retry")
				}
				var hooks []storetest.Hook
				for _, status := range []string{"pending", "retry", "completed", "failed"} {
					hooks = append(hooks, b.hook(t, project, spec{status: status}))
				}
				sel := selectIDs(t, hooks...)
				if form == "range" {
					sel = rangeOver(t, len(hooks))
					dry, err := a.dryRun(b, project, sel)
					require.NoError(t, err)
					require.EqualValues(t, len(applicable), dry.Affected, "dry run")
				}
				n, err := a.run(b, project, sel)
				require.NoError(t, err)
				require.EqualValues(t, len(applicable), n, "affected counts only the hooks acted on")
				after := b.projectHooks(t, project)
				for _, h := range hooks {
					require.Equal(t, slices.Contains(applicable, h.Status), a.actedOn(t, b, h, after), h.Status)
				}
			})
		}
	}
}

// sampleOf is the ids of the hooks specs want, by postAt then id, at most
// bulk.SampleSize of them: a dry run's sample.
func sampleOf(specs []spec, hooks []storetest.Hook) []uuid.UUID {
	var wanted []storetest.Hook
	for i, s := range specs {
		if s.want {
			wanted = append(wanted, hooks[i])
		}
	}
	slices.SortFunc(wanted, func(a, b storetest.Hook) int {
		if c := a.PostAt.Compare(b.PostAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID.String(), b.ID.String())
	})
	ids := []uuid.UUID{}
	for _, h := range wanted[:min(len(wanted), bulk.SampleSize)] {
		ids = append(ids, h.ID)
	}
	return ids
}

// idsOf is the ids of a dry run's sample, in order.
func idsOf(sample []bulk.Sampled) []uuid.UUID {
	ids := []uuid.UUID{}
	for _, h := range sample {
		ids = append(ids, h.ID)
	}
	return ids
}

// rangeOver selects every hook of t0's day, up to limit.
func rangeOver(t *testing.T, limit int) bulk.Selection {
	t.Helper()
	sel, err := bulk.Request{
		StartTime: ptr(t0.Format(time.RFC3339)), EndTime: ptr(t0.Add(24 * time.Hour).Format(time.RFC3339)), Limit: &limit,
	}.Validate()
	require.NoError(t, err)
	return sel
}

func TestOtherProjectsHooksAreNeverTouched(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, a := range actions {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			mine, theirs := b.project(t, 100000, 200), b.project(t, 100000, 200)
			hooks := []storetest.Hook{b.hook(t, theirs, spec{status: a.state}), b.hook(t, theirs, spec{status: a.state})}
			before := b.projectHooks(t, theirs)
			for _, sel := range []bulk.Selection{selectIDs(t, hooks...), rangeOver(t, 10)} {
				n, err := a.run(b, mine, sel)
				require.NoError(t, err)
				require.Zero(t, n)
			}
			require.Equal(t, before, b.projectHooks(t, theirs))
			require.Empty(t, b.projectHooks(t, mine))
			require.Zero(t, b.usage(t, mine))
		})
	}
}

func TestRetryStartsAFreshBudgetDueNow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := b.project(t, 100000, 200)
	failed := b.hook(t, project, spec{status: "failed", attempts: 3})
	for i := int32(1); i <= 3; i++ {
		require.NoError(t, storetest.New(b.pool).InsertAttemptForBulkTest(context.Background(), storetest.InsertAttemptForBulkTestParams{HookID: failed.ID, Attempt: i}))
	}
	out, err := b.svc.Retry(context.Background(), project, bulk.Order{Selection: selectIDs(t, failed, failed)})
	require.NoError(t, err)
	require.EqualValues(t, 1, out.Affected, "a duplicated id counts once")

	row, ok := b.get(t, failed.ID)
	require.True(t, ok)
	require.Equal(t, "pending", row.Status)
	require.EqualValues(t, 3, row.Attempts, "attempts made stay counted")
	require.EqualValues(t, 3, row.RetryBudgetBase, "the new budget starts after them")
	require.NotNil(t, row.RunAt)
	require.True(t, row.RunAt.Equal(row.UpdatedAt), "due now, by the database clock")
	require.True(t, row.UpdatedAt.After(failed.UpdatedAt))
	require.Nil(t, row.LeaseExpiresAt)
	require.False(t, row.WasNotified)
	require.Equal(t, failed.FailureError, row.FailureError, "the last error stays until the next attempt")
	require.Equal(t, failed.TryAt, row.TryAt, "tryAt still tells when the last attempt was made")
	require.True(t, failed.PostAt.Equal(row.PostAt), "postAt is when it was first scheduled")
	attempts, err := storetest.New(b.pool).CountAttemptsForBulkTest(context.Background(), failed.ID)
	require.NoError(t, err)
	require.EqualValues(t, 3, attempts, "history is kept")

	out, err = b.svc.Retry(context.Background(), project, bulk.Order{Selection: selectIDs(t, failed)})
	require.NoError(t, err)
	require.Zero(t, out.Affected, "a hook already retried is pending, not failed")
}

func TestCancelDeletesTheHookWithItsAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := b.project(t, 100000, 200)
	retrying := b.hook(t, project, spec{status: "retry", attempts: 2})
	for i := int32(1); i <= 2; i++ {
		require.NoError(t, storetest.New(b.pool).InsertAttemptForBulkTest(context.Background(), storetest.InsertAttemptForBulkTestParams{HookID: retrying.ID, Attempt: i}))
	}
	dry, err := b.svc.Cancel(context.Background(), project, bulk.Order{Selection: selectIDs(t, retrying), DryRun: true})
	require.NoError(t, err)
	require.EqualValues(t, 1, dry.Affected)
	attempts, err := storetest.New(b.pool).CountAttemptsForBulkTest(context.Background(), retrying.ID)
	require.NoError(t, err)
	require.EqualValues(t, 2, attempts, "a dry run deletes nothing")

	out, err := b.svc.Cancel(context.Background(), project, bulk.Order{Selection: selectIDs(t, retrying)})
	require.NoError(t, err)
	require.EqualValues(t, 1, out.Affected)
	_, ok := b.get(t, retrying.ID)
	require.False(t, ok)
	attempts, err = storetest.New(b.pool).CountAttemptsForBulkTest(context.Background(), retrying.ID)
	require.NoError(t, err)
	require.Zero(t, attempts)
}

// Attempts go with their hook by a trigger, not a foreign key (migration
// 00026): also when the hook goes in the cascade of its project's delete.
func TestADeletedProjectTakesItsHooksAttemptsWithIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project, other := b.project(t, 100000, 200), b.project(t, 100000, 200)
	gone, kept := b.hook(t, project, spec{status: "failed", attempts: 2}), b.hook(t, other, spec{status: "failed", attempts: 2})
	tq := storetest.New(b.pool)
	for _, h := range []uuid.UUID{gone.ID, kept.ID} {
		for i := int32(1); i <= 2; i++ {
			require.NoError(t, tq.InsertAttemptForBulkTest(context.Background(), storetest.InsertAttemptForBulkTestParams{HookID: h, Attempt: i}))
		}
	}
	n, err := tq.DeleteProject(context.Background(), project)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	attempts, err := tq.CountAttemptsForBulkTest(context.Background(), gone.ID)
	require.NoError(t, err)
	require.Zero(t, attempts, "the deleted project's attempts")
	attempts, err = tq.CountAttemptsForBulkTest(context.Background(), kept.ID)
	require.NoError(t, err)
	require.EqualValues(t, 2, attempts, "the other project's attempts")
}

func TestReplayCreatesNewHooksThatCount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := b.project(t, 100000, 200)
	seq := uuid.Must(uuid.NewV7())
	override := json.RawMessage(`{"minRetries": 1, "delaySecs": 10, "strategy": "fixed"}`)
	first := b.hook(t, project, spec{status: "completed", path: "/a?x=1", sequenceID: &seq, postAt: t0.Add(2 * time.Hour), tags: []string{"t"}})
	second, err := storetest.New(b.pool).InsertHookForBulkTest(context.Background(), storetest.InsertHookForBulkTestParams{
		ID: uuid.Must(uuid.NewV7()), ProjectID: project, Path: "/b", Domain: "old.example.com",
		Data: json.RawMessage(`{"nested":{"k":[1,2]}}`), PostAt: t0, Status: "completed", Attempts: 4,
		TryAt: ptr(t0), RetryOverride: override,
	})
	require.NoError(t, err)

	out, err := b.svc.Replay(context.Background(), project, bulk.Order{Selection: selectIDs(t, first, second, first)})
	require.NoError(t, err)
	require.EqualValues(t, 2, out.Affected)
	require.NotNil(t, out.Usage)
	require.EqualValues(t, 2, out.Usage.Used)
	require.EqualValues(t, 2, b.usage(t, project), "each replay counts against the quota")

	hooks := b.projectHooks(t, project)
	require.Len(t, hooks, 4)
	copies := map[string]storetest.Hook{}
	for _, h := range hooks {
		if h.ID != first.ID && h.ID != second.ID {
			copies[string(h.Data)] = h
		}
	}
	for _, src := range []storetest.Hook{first, second} {
		c, ok := copies[string(src.Data)]
		require.True(t, ok, "a copy of %s", src.ID)
		require.EqualValues(t, 7, c.ID.Version(), "a new time-ordered id")
		require.Equal(t, src.Path, c.Path)
		require.Equal(t, src.Domain, c.Domain, "the original's domain")
		require.JSONEq(t, string(src.Data), string(c.Data))
		require.Equal(t, "pending", c.Status)
		require.Zero(t, c.Attempts)
		require.Zero(t, c.RetryBudgetBase)
		require.Nil(t, c.FailureError)
		require.Nil(t, c.TryAt)
		require.NotNil(t, c.RunAt)
		require.True(t, c.PostAt.Equal(*c.RunAt), "due now")
		require.True(t, c.PostAt.Equal(c.CreatedAt), "postAt is the database's now")
		require.Nil(t, c.SequenceID, "a replay belongs to no sequence run")
		require.Equal(t, src.Tags, c.Tags, "a replay keeps the tags")
		if src.RetryOverride == nil {
			require.Nil(t, c.RetryOverride)
		} else {
			require.JSONEq(t, string(src.RetryOverride), string(c.RetryOverride))
		}
		orig, ok := b.get(t, src.ID)
		require.True(t, ok)
		require.Equal(t, src, orig, "the original is left as it was")
	}
	// Copies are created in the order of the originals' postAt.
	require.Less(t, copies[string(second.Data)].ID.String(), copies[string(first.Data)].ID.String())

	none, err := b.svc.Replay(context.Background(), project, bulk.Order{Selection: selectIDs(t, b.hook(t, project, spec{status: "failed"}))})
	require.NoError(t, err)
	require.Zero(t, none.Affected)
	require.Nil(t, none.Usage, "nothing replayed, nothing counted")
	require.EqualValues(t, 2, b.usage(t, project))
}

func TestReplayPastTheHardCapCreatesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// A quota of 4 with a hard cap of 150 %: 6 hooks at most.
	project := b.project(t, 4, 150)
	var done []storetest.Hook
	for i := range 7 {
		done = append(done, b.hook(t, project, spec{status: "completed", postAt: t0.Add(time.Duration(i) * time.Minute)}))
	}
	out, err := b.svc.Replay(context.Background(), project, bulk.Order{Selection: selectIDs(t, done[:5]...)})
	require.NoError(t, err)
	require.EqualValues(t, 5, out.Affected)
	require.Equal(t, []int32{75, 100}, b.alerts.percents(), "the thresholds the replays crossed are announced")

	// Two more would make 7, past the cap of 6: neither is created.
	_, err = b.svc.Replay(context.Background(), project, bulk.Order{Selection: rangeOver(t, 2)})
	var exhausted *quota.ExhaustedError
	require.ErrorAs(t, err, &exhausted)
	require.EqualValues(t, 5, exhausted.Usage.Used, "the standing without the refused hooks")
	require.EqualValues(t, 6, exhausted.Usage.HardCap)
	require.Len(t, b.projectHooks(t, project), 12, "nothing was created")
	require.EqualValues(t, 5, b.usage(t, project), "nothing was counted")

	// One still fits.
	out, err = b.svc.Replay(context.Background(), project, bulk.Order{Selection: selectIDs(t, done[6])})
	require.NoError(t, err)
	require.EqualValues(t, 1, out.Affected)
	require.EqualValues(t, 6, b.usage(t, project))
	require.Equal(t, []int32{75, 100, 150}, b.alerts.percents(), "150 % of 4 is 6 hooks: crossed now")
}

func TestRetryIDs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	mine, theirs := b.project(t, 100000, 200), b.project(t, 100000, 200)
	failed := b.hook(t, mine, spec{status: "failed"})
	completed := b.hook(t, mine, spec{status: "completed"})
	theirFailed := b.hook(t, theirs, spec{status: "failed"})
	raw := []string{failed.ID.String(), completed.ID.String(), theirFailed.ID.String(), uuid.NewString()}

	out, err := b.svc.RetryIDs(context.Background(), mine, bulk.RetryIDsRequest{ProjectID: ptr(theirs.String()), HookIDs: &raw})
	require.ErrorIs(t, err, bulk.ErrForbidden)
	require.Zero(t, out.Affected)
	row, _ := b.get(t, failed.ID)
	require.Equal(t, "failed", row.Status, "a forbidden request changes nothing")

	dry, err := b.svc.RetryIDs(context.Background(), mine, bulk.RetryIDsRequest{ProjectID: ptr(mine.String()), HookIDs: &raw, DryRun: true})
	require.NoError(t, err)
	require.EqualValues(t, 1, dry.Affected, "the dry run")
	require.Equal(t, []uuid.UUID{failed.ID}, idsOf(dry.Sample))
	row, _ = b.get(t, failed.ID)
	require.Equal(t, failed, row, "a dry run changes nothing")

	out, err = b.svc.RetryIDs(context.Background(), mine, bulk.RetryIDsRequest{ProjectID: ptr(mine.String()), HookIDs: &raw})
	require.NoError(t, err)
	require.EqualValues(t, 1, out.Affected, "unknown, other projects' and non-failed ids are skipped")
	row, _ = b.get(t, failed.ID)
	require.Equal(t, "pending", row.Status)
	row, _ = b.get(t, theirFailed.ID)
	require.Equal(t, "failed", row.Status)

	_, err = b.svc.RetryIDs(context.Background(), mine, bulk.RetryIDsRequest{ProjectID: ptr(mine.String())})
	var invalid *bulk.InvalidError
	require.ErrorAs(t, err, &invalid)
}

func TestConcurrentReplaysNeverPassTheHardCap(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := b.project(t, 10, 100)
	const batches = 8
	sels := make([]bulk.Selection, batches)
	for i := range sels {
		var done []storetest.Hook
		for range 3 {
			done = append(done, b.hook(t, project, spec{status: "completed"}))
		}
		sels[i] = selectIDs(t, done...)
	}
	errs := make(chan error, batches)
	for _, sel := range sels {
		go func() {
			_, err := b.svc.Replay(context.Background(), project, bulk.Order{Selection: sel})
			errs <- err
		}()
	}
	succeeded := 0
	for range batches {
		err := <-errs
		if err == nil {
			succeeded++
			continue
		}
		require.ErrorIs(t, err, quota.ErrExhausted)
	}
	// Batches of 3 against a cap of 10: three fit, whatever the order.
	require.Equal(t, 3, succeeded)
	require.EqualValues(t, 9, b.usage(t, project))
	require.Len(t, b.projectHooks(t, project), 3*batches+9, "every counted hook exists, and no other")
}

// A failed hook with a key is retried only while it is the newest hook of
// its key and none of them is unfinished: a key names one unfinished hook.
func TestRetryTakesOnlyTheNewestHookOfAKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := b.project(t, 100000, 200)
	taken := b.hook(t, project, spec{status: "failed", key: ptr("taken")})
	b.hook(t, project, spec{status: "pending", key: ptr("taken")})
	older := b.hook(t, project, spec{status: "failed", key: ptr("done")})
	b.hook(t, project, spec{status: "completed", key: ptr("done")})
	free := b.hook(t, project, spec{status: "failed", key: ptr("free")})
	first := b.hook(t, project, spec{status: "failed", key: ptr("twice")})
	second := b.hook(t, project, spec{status: "failed", key: ptr("twice")})

	rng := bulk.Range{Start: t0, End: t0.Add(24 * time.Hour), Limit: 100}
	dry, err := b.svc.Retry(context.Background(), project, bulk.Order{Selection: bulk.Selection{Range: &rng}, DryRun: true})
	require.NoError(t, err)
	require.EqualValues(t, 2, dry.Affected)
	out, err := b.svc.Retry(context.Background(), project, bulk.Order{Selection: selectIDs(t, taken, older, free, first, second)})
	require.NoError(t, err)
	require.EqualValues(t, 2, out.Affected, "the newest hook of free and of twice")
	for h, want := range map[uuid.UUID]string{taken.ID: "failed", older.ID: "failed", free.ID: "pending", first.ID: "failed", second.ID: "pending"} {
		row, _ := b.get(t, h)
		require.Equal(t, want, row.Status, "%s", row.Key)
	}

	third := b.hook(t, project, spec{status: "failed", key: ptr("again")})
	fourth := b.hook(t, project, spec{status: "failed", key: ptr("again")})
	out, err = b.svc.Retry(context.Background(), project, bulk.Order{Selection: bulk.Selection{Range: &rng}})
	require.NoError(t, err)
	require.EqualValues(t, 1, out.Affected, "by range too")
	row, _ := b.get(t, third.ID)
	require.Equal(t, "failed", row.Status)
	row, _ = b.get(t, fourth.ID)
	require.Equal(t, "pending", row.Status)
}

// A create that gives a key an unfinished hook while a bulk retry of the
// key's failed hook runs makes the retry collide on the key's unique
// index; the retry runs again, skips that hook and reports no error.
func TestRetryLosingARaceWithACreateOfItsKeySkipsTheHook(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := b.project(t, 100000, 200)
	failed := b.hook(t, project, spec{status: "failed", key: ptr("race")})

	tx, err := b.pool.Begin(t.Context())
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	created, err := storetest.New(tx).InsertHookForBulkTest(t.Context(), storetest.InsertHookForBulkTestParams{
		ID: uuid.Must(uuid.NewV7()), ProjectID: project, Path: "/hook", Domain: "receiver.example.com",
		Data: json.RawMessage(`{}`), PostAt: t0.Add(time.Hour), Status: "pending", Key: ptr("race"),
	})
	require.NoError(t, err)

	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := b.svc.Retry(context.Background(), project, bulk.Order{Selection: selectIDs(t, failed)})
		done <- result{out.Affected, err}
	}()
	require.Eventually(t, func() bool {
		waits, err := storetest.New(b.pool).CountLockWaitsForBulkTest(context.Background())
		return err == nil && waits > 0
	}, 10*time.Second, 10*time.Millisecond, "the retry never waited on the uncommitted create's key")
	require.NoError(t, tx.Commit(t.Context()))

	got := <-done
	require.NoError(t, got.err)
	require.Zero(t, got.n, "the key has an unfinished hook now")
	row, _ := b.get(t, failed.ID)
	require.Equal(t, "failed", row.Status)
	row, ok := b.get(t, created.ID)
	require.True(t, ok)
	require.Equal(t, "pending", row.Status)
}
