package claim_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/services/scheduler/internal/claim"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/testkit/natstest"
)

func TestDueBatchCarriesAClaimsHooksTogether(t *testing.T) {
	t.Parallel()
	b := setup(t)
	want := map[string]bool{}
	for range 5 {
		want[b.hook(t, -time.Second).ID.String()] = true
	}
	n, err := b.claimer(t, claim.Config{DueBatch: 2}).ClaimOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, 5, n)

	msgs := natstest.StreamMessages(t, b.js, event.StreamDue)
	require.Len(t, msgs, 3, "two batches of 2, and the last hook in a batch of its own")
	got := map[string]bool{}
	for i, m := range msgs {
		hooks := fixture.DueHooks(t, m)
		ids, seqs := make([]string, len(hooks)), make([]int64, len(hooks))
		for j, h := range hooks {
			require.False(t, got[h.GetHookId()], "hook %s published twice", h.GetHookId())
			got[h.GetHookId()] = true
			ids[j], seqs[j] = h.GetHookId(), h.GetLeaseSeq()
			require.Equal(t, time.Minute, h.GetLeaseDuration().AsDuration(), "each hook keeps its lease")
		}
		require.Len(t, hooks, []int{2, 2, 1}[i])
		require.Equal(t, event.TypeDueHooks, m.Header.Get(event.TypeHeader), "a batch of one is a DueHooks too")
		require.Equal(t, event.DuesMsgID(ids, seqs), fixture.MsgID(m))
	}
	require.Equal(t, want, got)
}

func TestDueBatchOfOnePublishesEachHookInABatchOfItsOwn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	want := map[string]bool{}
	for range 3 {
		want[b.hook(t, -time.Second).ID.String()] = true
	}
	n, err := b.claimer(t, claim.Config{DueBatch: 1}).ClaimOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, 3, n)

	msgs := natstest.StreamMessages(t, b.js, event.StreamDue)
	require.Len(t, msgs, 3)
	got := map[string]bool{}
	for _, m := range msgs {
		require.Equal(t, event.TypeDueHooks, m.Header.Get(event.TypeHeader))
		due := fixture.DueHook(t, m)
		got[due.GetHookId()] = true
		require.Equal(t, dueMsgID(uuid.MustParse(due.GetHookId()), 1), fixture.MsgID(m))
	}
	require.Equal(t, want, got)
}

func TestDueBatchBoundsTheDataOfOneMessage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	big := json.RawMessage(`{"pad":"` + strings.Repeat("x", 100<<10) + `"}`)
	for range 3 {
		fixture.Insert(t, b.q, fixture.Hook{ProjectID: b.project, Domain: b.domain, DueIn: -time.Second, Data: big})
	}
	n, err := b.claimer(t, claim.Config{DueBatch: 10}).ClaimOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, 3, n)

	msgs := natstest.StreamMessages(t, b.js, event.StreamDue)
	require.Len(t, msgs, 2, "two hooks of 100 KiB fill a batch's 256 KiB; the third goes in another")
	require.Len(t, fixture.DueHooks(t, msgs[0]), 2)
	require.Len(t, fixture.DueHooks(t, msgs[1]), 1)
}
