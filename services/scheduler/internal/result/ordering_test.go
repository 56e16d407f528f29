package result_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/retry"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
)

// keyed creates a hook of the project with an ordering key, due dueIn from
// the database's now.
func (b bundle) keyed(t *testing.T, project uuid.UUID, key string, dueIn time.Duration) storetest.Hook {
	t.Helper()
	return fixture.Insert(t, b.q, fixture.Hook{ProjectID: project, Domain: domain, Path: "/p", DueIn: dueIn, OrderingKey: key})
}

// requireLeased checks that the hook is out for delivery.
func (b bundle) requireLeased(t *testing.T, id uuid.UUID) storetest.Hook {
	t.Helper()
	row := fixture.Get(t, b.q, id)
	require.NotNil(t, row.LeaseExpiresAt, "hook %s is leased", id)
	return row
}

// requireWaiting checks that the hook waits behind its key's head: not
// leased, never attempted, and not due before the claim's recheck.
func (b bundle) requireWaiting(t *testing.T, id uuid.UUID) {
	t.Helper()
	row := fixture.Get(t, b.q, id)
	require.Nil(t, row.LeaseExpiresAt, "hook %s is not leased", id)
	require.Equal(t, "pending", row.Status)
	require.NotNil(t, row.RunAt)
	require.True(t, row.RunAt.After(fixture.DBNow(t, b.q).Add(4*time.Minute)), "hook %s waits for a wake, not for its due time", id)
}

// requireWoken checks that the hook is due now.
func (b bundle) requireWoken(t *testing.T, id uuid.UUID) {
	t.Helper()
	row := fixture.Get(t, b.q, id)
	require.Nil(t, row.LeaseExpiresAt)
	require.NotNil(t, row.RunAt)
	require.False(t, row.RunAt.After(fixture.DBNow(t, b.q)), "hook %s is due", id)
}

func (b bundle) claimN(t *testing.T, want int) {
	t.Helper()
	n, err := b.claimer(t, time.Minute).ClaimOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, want, n)
}

func TestAKeysHooksGoOneAtATimeInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := fixture.Project(t, b.q, domain, fixed30)
	// Created out of order: postAt decides, not creation.
	third := b.keyed(t, project, "order-7", -time.Second)
	first := b.keyed(t, project, "order-7", -3*time.Second)
	second := b.keyed(t, project, "order-7", -2*time.Second)
	other := b.keyed(t, project, "order-8", -time.Second)
	plain := fixture.Insert(t, b.q, fixture.Hook{ProjectID: project, Domain: domain, DueIn: -time.Second})

	b.claimN(t, 3)
	head := b.requireLeased(t, first.ID)
	b.requireLeased(t, other.ID)
	b.requireLeased(t, plain.ID)
	b.requireWaiting(t, second.ID)
	b.requireWaiting(t, third.ID)
	got, err := b.q.GetOrderingKeyHeadForTest(context.Background(), storetest.GetOrderingKeyHeadForTestParams{ProjectID: project, OrderingKey: "order-7"})
	require.NoError(t, err)
	require.Equal(t, first.ID, got)

	require.NoError(t, b.handle(t, resultFor(head, eventv1.Outcome_OUTCOME_SUCCESS, 200, "")))
	b.requireWoken(t, second.ID)
	b.requireWaiting(t, third.ID)
	b.claimN(t, 1)
	head = b.requireLeased(t, second.ID)

	// A retry keeps the key: the next waits through it.
	require.NoError(t, b.handle(t, resultFor(head, eventv1.Outcome_OUTCOME_FAILURE, 500, "HTTP 500")))
	require.Equal(t, "retry", fixture.Get(t, b.q, second.ID).Status)
	b.requireWaiting(t, third.ID)
	n, err := b.q.RunNowForTest(context.Background(), second.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	b.claimN(t, 1)
	head = b.requireLeased(t, second.ID)
	require.EqualValues(t, 1, head.Attempts)
	b.requireWaiting(t, third.ID)

	require.NoError(t, b.handle(t, resultFor(head, eventv1.Outcome_OUTCOME_SUCCESS, 200, "")))
	b.requireWoken(t, third.ID)
	b.claimN(t, 1)
	b.requireLeased(t, third.ID)
}

func TestARedrivenHeadGoesBeforeTheNext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := fixture.Project(t, b.q, domain, fixed30)
	first := b.keyed(t, project, "k", -2*time.Second)
	second := b.keyed(t, project, "k", -time.Second)
	b.claimN(t, 1)
	require.EqualValues(t, 1, b.requireLeased(t, first.ID).LeaseSeq)

	// The lease runs out (a dispatcher died) while the next is due too.
	for _, id := range []uuid.UUID{first.ID, second.ID} {
		_, err := b.q.RunNowForTest(context.Background(), id)
		require.NoError(t, err)
	}
	b.claimN(t, 1)
	require.EqualValues(t, 2, b.requireLeased(t, first.ID).LeaseSeq)
	b.requireWaiting(t, second.ID)
}

func TestAFinalFailureMovesOnOrHoldsTheKey(t *testing.T) {
	t.Parallel()
	noRetries := retry.Policy{MinRetries: 0, DelaySecs: 30, Strategy: retry.StrategyFixed, BackoffFactor: 2, MaxDelaySecs: 3600}
	for _, tc := range []struct {
		name   string
		policy string
		// free frees a held key: nil when the key moves on by itself.
		free func(t *testing.T, b bundle, project uuid.UUID, failed uuid.UUID)
	}{
		{name: "continue", policy: "continue"},
		{name: "hold until resumed", policy: "hold", free: func(t *testing.T, b bundle, project, _ uuid.UUID) {
			require.NoError(t, b.q.ResumeOrderingKeyForTest(context.Background(),
				storetest.ResumeOrderingKeyForTestParams{ProjectID: project, OrderingKey: "k"}))
		}},
		{name: "hold until the failed hook is deleted", policy: "hold", free: func(t *testing.T, b bundle, _, failed uuid.UUID) {
			n, err := b.q.DeleteHookForTest(context.Background(), failed)
			require.NoError(t, err)
			require.EqualValues(t, 1, n)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			project := fixture.Project(t, b.q, domain, noRetries)
			_, err := b.q.SetOrderingOnFailureForTest(context.Background(),
				storetest.SetOrderingOnFailureForTestParams{ID: project, OrderingOnFailure: tc.policy})
			require.NoError(t, err)
			first := b.keyed(t, project, "k", -2*time.Second)
			second := b.keyed(t, project, "k", -time.Second)
			b.claimN(t, 1)
			head := b.requireLeased(t, first.ID)
			require.NoError(t, b.handle(t, resultFor(head, eventv1.Outcome_OUTCOME_FAILURE, 500, "HTTP 500")))
			require.Equal(t, "failed", fixture.Get(t, b.q, first.ID).Status)

			if tc.free != nil {
				b.requireWaiting(t, second.ID)
				// Due or not, a held key's next hook is not leased.
				_, err := b.q.RunNowForTest(context.Background(), second.ID)
				require.NoError(t, err)
				b.claimN(t, 0)
				b.requireWaiting(t, second.ID)
				tc.free(t, b, project, first.ID)
			}
			b.requireWoken(t, second.ID)
			b.claimN(t, 1)
			b.requireLeased(t, second.ID)
		})
	}
}

func TestConcurrentClaimsLeaseEachKeysFirstHookOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := fixture.Project(t, b.q, domain, fixed30)
	const keys, perKey = 20, 5
	var firsts []uuid.UUID
	for k := range keys {
		key := "key-" + string(rune('a'+k))
		for i := range perKey {
			h := b.keyed(t, project, key, -time.Duration(perKey-i)*time.Second)
			if i == 0 {
				firsts = append(firsts, h.ID)
			}
		}
	}
	claimers := make([]interface {
		ClaimOnce(context.Context) (int, error)
	}, 4)
	for i := range claimers {
		claimers[i] = b.claimer(t, time.Minute)
	}
	// Rounds of concurrent claims until one claims nothing; a hook put off
	// for 100 ms by a race is due again within a few rounds.
	total := 0
	for round := 0; round < 100; round++ {
		var mu sync.Mutex
		claimed := 0
		var g errgroup.Group
		for _, c := range claimers {
			g.Go(func() error {
				n, err := c.ClaimOnce(context.Background())
				mu.Lock()
				claimed += n
				mu.Unlock()
				return err
			})
		}
		require.NoError(t, g.Wait())
		total += claimed
		if total == keys {
			break
		}
	}
	require.Equal(t, keys, total, "one hook per key")
	for _, id := range firsts {
		b.requireLeased(t, id)
	}
}

func TestAHookDoesNotOvertakeAnEarlierOneAnotherClaimHolds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := fixture.Project(t, b.q, domain, fixed30)
	first := b.keyed(t, project, "k", -2*time.Second)
	second := b.keyed(t, project, "k", -time.Second)

	// Another claim holds the first: this one sees only the second.
	ctx := context.Background()
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	require.NoError(t, b.q.WithTx(tx).LockHookForTest(ctx, first.ID))
	b.claimN(t, 0)
	b.requireWaiting(t, second.ID)
	require.NoError(t, tx.Rollback(ctx))

	b.claimN(t, 1)
	b.requireLeased(t, first.ID)
	b.requireWaiting(t, second.ID)
}

func TestAHeadWaitingForItsAsyncAnswerKeepsTheKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := fixture.Project(t, b.q, domain, fixed30)
	first := b.keyed(t, project, "k", -2*time.Second)
	second := b.keyed(t, project, "k", -time.Second)
	b.claimN(t, 1)
	head := b.requireLeased(t, first.ID)

	waiting := b.accepted(t, head, 3600)
	require.Nil(t, waiting.RunAt)
	require.NotNil(t, waiting.AsyncDeadline)
	b.requireWaiting(t, second.ID)
	// Due or not, the next is not leased while the head waits.
	_, err := b.q.RunNowForTest(context.Background(), second.ID)
	require.NoError(t, err)
	b.claimN(t, 0)
	b.requireWaiting(t, second.ID)

	b.ack(t, waiting)
	require.True(t, b.endWait(t, first.ID))
	require.Equal(t, "completed", fixture.Get(t, b.q, first.ID).Status)
	b.requireWoken(t, second.ID)
	b.claimN(t, 1)
	b.requireLeased(t, second.ID)
}

// A hook created while its key's head is being finished by a transaction
// that has not committed yet (a batch of results) is not left to the
// 5-minute recheck. The head's end wakes the key's next hook as that
// transaction sees it, which is not the new hook; the claim that finds
// the head still unfinished, but its row locked, looks again soon.
func TestAHookCreatedWhileItsHeadFinishesIsNotLeftWaiting(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := fixture.Project(t, b.q, domain, fixed30)
	first := b.keyed(t, project, "k", -time.Second)
	b.claimN(t, 1)
	b.requireLeased(t, first.ID)

	ctx := context.Background()
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	require.NoError(t, b.q.WithTx(tx).FinishHookForTest(ctx, first.ID))
	next := b.keyed(t, project, "k", -time.Millisecond)
	b.claimN(t, 0)
	require.NoError(t, tx.Commit(ctx))

	row := fixture.Get(t, b.q, next.ID)
	require.Nil(t, row.LeaseExpiresAt)
	require.NotNil(t, row.RunAt)
	require.True(t, row.RunAt.Before(fixture.DBNow(t, b.q).Add(time.Second)), "looked at again within a second, not at %s", row.RunAt)
}
