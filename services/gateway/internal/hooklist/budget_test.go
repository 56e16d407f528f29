package hooklist_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/hooklist"
	"github.com/sundial-run/sundial/services/gateway/internal/hooklist/hooklisttest"
)

// blob is a data payload of about n bytes.
func blob(n int) json.RawMessage {
	return json.RawMessage(`{"b":"` + strings.Repeat("x", n) + `"}`)
}

// A page ends at MaxPageBytes whatever the limit, always holds one hook
// even when that hook alone is larger, and its cursor continues after it:
// walking the pages lists every hook once, in order.
func TestPagesEndAtTheByteBudget(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const mib = 1 << 20
	sizes := []int{
		3 * mib / 2, 3 * mib / 2, // two fit (3 MiB), the third would not
		5 * mib,                // alone past the budget: a page of its own
		100, 100, 3 * mib, 100, // fit together
		2 * mib, 2 * mib, // the second would exceed after the first
	}
	var hooks []hooklisttest.Hook
	for i, n := range sizes {
		at := base.Add(time.Duration(i) * time.Second)
		hooks = append(hooks, hooklisttest.Hook{ID: uuid.New(), Status: "pending", CreatedAt: at, PostAt: at, Data: blob(n)})
	}
	e.load(t, e.project, hooks)

	var got [][]uuid.UUID
	cursor := ""
	for range len(sizes) + 1 {
		p := e.page(t, "limit=1000&sortOrder=asc", cursor)
		got = append(got, ids(p.Hooks))
		if p.NextCursor == "" {
			break
		}
		cursor = p.NextCursor
	}
	want := [][]uuid.UUID{
		{hooks[0].ID, hooks[1].ID},
		{hooks[2].ID},
		{hooks[3].ID, hooks[4].ID, hooks[5].ID, hooks[6].ID},
		{hooks[7].ID},
		{hooks[8].ID},
	}
	require.Equal(t, want, got)
	require.Equal(t, 4<<20, hooklist.MaxPageBytes)
}

// When the budget ends a page exactly where the limit does, the page has
// a cursor, and the next page is the rest.
func TestBudgetAndLimitEndingTogether(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var hooks []hooklisttest.Hook
	for i := range 3 {
		at := base.Add(time.Duration(i) * time.Second)
		hooks = append(hooks, hooklisttest.Hook{ID: uuid.New(), Status: "pending", CreatedAt: at, PostAt: at, Data: blob(3 << 19)})
	}
	e.load(t, e.project, hooks)
	first := e.page(t, "limit=2&sortOrder=asc", "")
	require.Equal(t, []uuid.UUID{hooks[0].ID, hooks[1].ID}, ids(first.Hooks))
	require.NotEmpty(t, first.NextCursor)
	rest := e.page(t, "limit=2&sortOrder=asc", first.NextCursor)
	require.Equal(t, []uuid.UUID{hooks[2].ID}, ids(rest.Hooks))
	require.Empty(t, rest.NextCursor)
}

// A page also ends at the first row the shared budget (Query.Take) refuses,
// its cursor continuing from there; when it refuses the first row, the list
// fails with ErrBusy.
func TestPagesEndWhereTheSharedBudgetRefuses(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var hooks []hooklisttest.Hook
	for i := range 5 {
		at := base.Add(time.Duration(i) * time.Second)
		hooks = append(hooks, hooklisttest.Hook{ID: uuid.New(), Status: "pending", CreatedAt: at, PostAt: at, Data: blob(1000)})
	}
	e.load(t, e.project, hooks)
	q, err := hooklist.Parse(mustQuery(t, "limit=100&sortOrder=asc"))
	require.NoError(t, err)

	rows := 0
	q.Take = func(int) bool { rows++; return rows <= 2 }
	p, err := e.lister.List(t.Context(), e.project, q)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{hooks[0].ID, hooks[1].ID}, ids(p.Hooks))
	require.NotEmpty(t, p.NextCursor, "the cursor continues where the budget ended the page")

	q.Take = func(int) bool { return false }
	_, err = e.lister.List(t.Context(), e.project, q)
	require.ErrorIs(t, err, hooklist.ErrBusy)
}
