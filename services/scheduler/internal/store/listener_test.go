package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/retry"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

// The claim statement's listener routing (docs/listener.md, "Routing"):
// a listening project's hooks are leased for the listener, a holding
// project's are held until its window ends, and a release gives them back
// in the order they fell due.

const listenDomain = "receiver.example.com"

type listenBundle struct {
	q       *Queries
	tq      *storetest.Queries
	project uuid.UUID
}

func setupListen(t *testing.T) listenBundle {
	t.Helper()
	pool, _ := pgtest.NewPool(t)
	tq := storetest.New(pool)
	project := fixture.Project(t, tq, listenDomain, retry.Policy{MinRetries: 3, DelaySecs: 5,
		Strategy: retry.StrategyFixed, BackoffFactor: 2, MaxDelaySecs: 60})
	return listenBundle{q: New(pool), tq: tq, project: project}
}

// presence writes the project's presence row of gateway "gw-1".
func (b listenBundle) presence(t *testing.T, connected bool, seenAgo, resumeIn time.Duration) {
	t.Helper()
	require.NoError(t, b.tq.UpsertPresenceForTest(context.Background(), storetest.UpsertPresenceForTestParams{
		ProjectID: b.project, GatewayID: "gw-1", Connected: connected,
		SeenAgoSeconds: seenAgo.Seconds(), ResumeInSeconds: resumeIn.Seconds(),
	}))
}

func (b listenBundle) hook(t *testing.T, dueIn time.Duration) storetest.Hook {
	t.Helper()
	return fixture.Insert(t, b.tq, fixture.Hook{ProjectID: b.project, Domain: listenDomain, DueIn: dueIn})
}

func (b listenBundle) claim(t *testing.T, batch int) []ClaimHooksRow {
	t.Helper()
	ids, err := b.q.LockDueHooks(context.Background(), int32(batch))
	require.NoError(t, err)
	return b.claimByID(t, ids...)
}

func (b listenBundle) claimByID(t *testing.T, ids ...uuid.UUID) []ClaimHooksRow {
	t.Helper()
	rows, err := b.q.ClaimHooks(context.Background(), ClaimHooksParams{LeaseSeconds: 30, Ids: ids})
	require.NoError(t, err)
	return rows
}

// requireLeased checks a hook the claim leased for delivery.
func (b listenBundle) requireLeased(t *testing.T, before storetest.Hook) {
	t.Helper()
	after := fixture.Get(t, b.tq, before.ID)
	require.Equal(t, before.LeaseSeq+1, after.LeaseSeq)
	require.NotNil(t, after.LeaseExpiresAt)
	require.Nil(t, after.HeldDueAt)
}

// requireHeld checks a hook the claim held for the listener until until.
func (b listenBundle) requireHeld(t *testing.T, before storetest.Hook, until time.Time) {
	t.Helper()
	after := fixture.Get(t, b.tq, before.ID)
	require.Equal(t, before.LeaseSeq, after.LeaseSeq, "no lease")
	require.Equal(t, before.Attempts, after.Attempts, "no attempt")
	require.Equal(t, before.Redrives, after.Redrives, "no re-drive")
	require.Equal(t, before.Status, after.Status)
	require.Nil(t, after.LeaseExpiresAt)
	require.NotNil(t, after.HeldDueAt)
	require.WithinDuration(t, *before.RunAt, *after.HeldDueAt, 0, "held_due_at keeps when it fell due")
	require.NotNil(t, after.RunAt)
	require.WithinDuration(t, until, *after.RunAt, time.Second, "run_at is the window's end")
}

func TestClaimLeasesAListeningProjectsHooksForTheListener(t *testing.T) {
	t.Parallel()
	b := setupListen(t)
	b.presence(t, true, 2*time.Second, 15*time.Minute)
	h := b.hook(t, -time.Second)

	rows := b.claim(t, 10)

	require.Len(t, rows, 1)
	require.True(t, rows[0].Listener)
	require.False(t, rows[0].Deferred)
	b.requireLeased(t, h)
}

func TestClaimByIDLeasesAListeningProjectsHooksForTheListener(t *testing.T) {
	t.Parallel()
	b := setupListen(t)
	b.presence(t, true, 0, 15*time.Minute)
	h := b.hook(t, -time.Second)

	rows := b.claimByID(t, h.ID)

	require.Len(t, rows, 1)
	require.True(t, rows[0].Listener)
	require.False(t, rows[0].Deferred)
	b.requireLeased(t, h)
}

func TestClaimHoldsAHoldingProjectsHooksUntilItsWindowEnds(t *testing.T) {
	t.Parallel()
	for name, claim := range map[string]func(b listenBundle, t *testing.T, h storetest.Hook) (deferred, listener bool, n int){
		"due": func(b listenBundle, t *testing.T, _ storetest.Hook) (bool, bool, int) {
			rows := b.claim(t, 10)
			if len(rows) != 1 {
				return false, false, len(rows)
			}
			return rows[0].Deferred, rows[0].Listener, 1
		},
		"by id": func(b listenBundle, t *testing.T, h storetest.Hook) (bool, bool, int) {
			rows := b.claimByID(t, h.ID)
			if len(rows) != 1 {
				return false, false, len(rows)
			}
			return rows[0].Deferred, rows[0].Listener, 1
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setupListen(t)
			b.presence(t, false, 5*time.Second, 10*time.Minute)
			h := b.hook(t, -3*time.Second)
			windowEnd := fixture.DBNow(t, b.tq).Add(10 * time.Minute)

			deferred, listener, n := claim(b, t, h)

			require.Equal(t, 1, n)
			require.True(t, deferred, "returned deferred, for the caller to leave out")
			require.False(t, listener)
			b.requireHeld(t, h, windowEnd)
		})
	}
}

func TestClaimHoldsWhenTheHeartbeatIsStaleAndTheWindowAhead(t *testing.T) {
	t.Parallel()
	b := setupListen(t)
	// Connected, but its gateway stopped refreshing 31 s ago (killed).
	b.presence(t, true, 31*time.Second, 5*time.Minute)
	h := b.hook(t, -time.Second)
	windowEnd := fixture.DBNow(t, b.tq).Add(5 * time.Minute)

	rows := b.claim(t, 10)

	require.Len(t, rows, 1)
	require.True(t, rows[0].Deferred)
	b.requireHeld(t, h, windowEnd)
}

func TestClaimLeasesForTheDomainWithNoPresenceOrAnEndedWindow(t *testing.T) {
	t.Parallel()
	for name, presence := range map[string]func(b listenBundle, t *testing.T){
		"no presence":  func(listenBundle, *testing.T) {},
		"window ended": func(b listenBundle, t *testing.T) { b.presence(t, false, 20*time.Minute, -time.Second) },
		"stale, window ended": func(b listenBundle, t *testing.T) {
			b.presence(t, true, 20*time.Minute, -time.Second)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setupListen(t)
			presence(b, t)
			h := b.hook(t, -time.Second)

			rows := b.claim(t, 10)

			require.Len(t, rows, 1)
			require.False(t, rows[0].Listener)
			require.False(t, rows[0].Deferred)
			b.requireLeased(t, h)
		})
	}
}

func TestAHookHeldAgainKeepsWhenItFirstFellDue(t *testing.T) {
	t.Parallel()
	b := setupListen(t)
	b.presence(t, false, 0, time.Minute)
	h := b.hook(t, -10*time.Second)
	require.Len(t, b.claim(t, 10), 1)
	// Its window's end arrives (a breaker's resume also moves run_at to
	// now) while a later socket's window holds the project again.
	_, err := b.tq.RunNowForTest(context.Background(), h.ID)
	require.NoError(t, err)
	b.presence(t, false, 0, 2*time.Minute)

	rows := b.claimByID(t, h.ID)

	require.Len(t, rows, 1)
	require.True(t, rows[0].Deferred)
	b.requireHeld(t, h, fixture.DBNow(t, b.tq).Add(2*time.Minute))
}

func TestListenerRoutingWinsOverAPausedDomain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("listening: leased for the listener, no probe taken", func(t *testing.T) {
		t.Parallel()
		b := setupListen(t)
		require.NoError(t, b.tq.PausedDomainForTest(ctx, storetest.PausedDomainForTestParams{ProjectID: b.project, Domain: listenDomain}))
		_, err := b.tq.EndPauseForTest(ctx, storetest.EndPauseForTestParams{ProjectID: b.project, Domain: listenDomain})
		require.NoError(t, err)
		b.presence(t, true, 0, 15*time.Minute)
		h1, h2 := b.hook(t, -2*time.Second), b.hook(t, -time.Second)

		rows := b.claim(t, 10)

		require.Len(t, rows, 2)
		for _, r := range rows {
			require.True(t, r.Listener)
			require.False(t, r.Deferred)
		}
		b.requireLeased(t, h1)
		b.requireLeased(t, h2)
		br, err := b.tq.GetBreakerForTest(ctx, storetest.GetBreakerForTestParams{ProjectID: b.project, Domain: listenDomain})
		require.NoError(t, err)
		require.Nil(t, br.ProbeHookID, "the listener's deliveries do not probe the domain")
	})
	t.Run("holding: held until the window's end, not the pause's", func(t *testing.T) {
		t.Parallel()
		b := setupListen(t)
		require.NoError(t, b.tq.PausedDomainForTest(ctx, storetest.PausedDomainForTestParams{ProjectID: b.project, Domain: listenDomain}))
		b.presence(t, false, 0, 10*time.Minute)
		h := b.hook(t, -time.Second)

		rows := b.claim(t, 10)

		require.Len(t, rows, 1)
		require.True(t, rows[0].Deferred)
		b.requireHeld(t, h, fixture.DBNow(t, b.tq).Add(10*time.Minute))
	})
}

func TestReleaseGivesHeldHooksBackOldestFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupListen(t)
	b.presence(t, false, 0, 10*time.Minute)
	// Inserted newest first, so that neither insertion nor id order is
	// the order they fell due in.
	hooks := []storetest.Hook{b.hook(t, -time.Second), b.hook(t, -3*time.Second), b.hook(t, -2*time.Second)}
	require.Len(t, b.claim(t, 10), 3)
	other := setupListenOther(t, b)

	b.presence(t, true, 0, 15*time.Minute)
	// Paced a microsecond apart: due (and claimed) by the time the claims
	// below run, in the order the spacing gives them.
	release := func(released int64) int64 {
		n, err := b.q.ReleaseListenerHeldHooks(ctx, ReleaseListenerHeldHooksParams{
			BatchSize: 2, Released: released, SpacingSeconds: 1e-6})
		require.NoError(t, err)
		return n
	}
	require.EqualValues(t, 2, release(0), "bounded by the batch")
	require.EqualValues(t, 1, release(2))
	require.Zero(t, release(3))

	runAt := map[uuid.UUID]time.Time{}
	for _, h := range hooks {
		after := fixture.Get(t, b.tq, h.ID)
		require.Nil(t, after.HeldDueAt)
		runAt[h.ID] = *after.RunAt
	}
	require.True(t, runAt[hooks[1].ID].Before(runAt[hooks[2].ID]), "paced in the order they fell due")
	require.True(t, runAt[hooks[2].ID].Before(runAt[hooks[0].ID]), "paced in the order they fell due, across statements")
	require.NotNil(t, fixture.Get(t, b.tq, other.ID).HeldDueAt, "a project still holding keeps its hooks held")

	var order []uuid.UUID
	for range 3 {
		rows := b.claim(t, 1)
		require.Len(t, rows, 1)
		require.True(t, rows[0].Listener)
		order = append(order, rows[0].ID)
	}
	require.Equal(t, []uuid.UUID{hooks[1].ID, hooks[2].ID, hooks[0].ID}, order)
}

// setupListenOther adds, in b's database, a second project holding one
// held hook.
func setupListenOther(t *testing.T, b listenBundle) storetest.Hook {
	t.Helper()
	other := listenBundle{q: b.q, tq: b.tq, project: fixture.Project(t, b.tq, listenDomain, retry.Policy{
		MinRetries: 3, DelaySecs: 5, Strategy: retry.StrategyFixed, BackoffFactor: 2, MaxDelaySecs: 60})}
	other.presence(t, false, 0, 10*time.Minute)
	h := other.hook(t, -time.Second)
	rows := other.claimByID(t, h.ID)
	require.Len(t, rows, 1)
	require.True(t, rows[0].Deferred)
	return h
}

func TestReleaseClearsAFinishedHooksHold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupListen(t)
	b.presence(t, false, 0, 10*time.Minute)
	h := b.hook(t, -time.Second)
	require.Len(t, b.claim(t, 10), 1)
	require.NoError(t, b.tq.FinishHookForTest(ctx, h.ID))
	b.presence(t, true, 0, 15*time.Minute)

	released, err := b.q.ReleaseListenerHeldHooks(ctx, ReleaseListenerHeldHooksParams{BatchSize: 10})

	require.NoError(t, err)
	require.EqualValues(t, 1, released)
	after := fixture.Get(t, b.tq, h.ID)
	require.Nil(t, after.HeldDueAt)
	require.Nil(t, after.RunAt, "a finished hook stays finished")
}
