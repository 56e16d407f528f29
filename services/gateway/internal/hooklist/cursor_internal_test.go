package hooklist

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func TestCursorRoundTrip(t *testing.T) {
	t.Parallel()
	project := uuid.New()
	for _, at := range []time.Time{
		time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999999000, time.UTC),
		time.Unix(0, 0).UTC(),
	} {
		q := Query{Status: "failed", SortBy: SortByPostAt, Order: Asc, Limit: 10}
		c := Cursor{At: at, ID: uuid.New(), query: q.hash(project)}
		s := c.encode()
		require.Len(t, s, 55)
		got, err := decodeCursor(s)
		require.NoError(t, err)
		require.Equal(t, c, got)
	}
}

func TestCursorFromAnotherVersion(t *testing.T) {
	t.Parallel()
	b := make([]byte, 1+bodyLen+8)
	b[0] = cursorVersion + 1
	_, err := decodeCursor(base64.RawURLEncoding.EncodeToString(b))
	require.ErrorIs(t, err, errCursorVersion)
}

func TestQueryHash(t *testing.T) {
	t.Parallel()
	project := uuid.New()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	q := Query{SortBy: SortByCreatedAt, Order: Desc, Limit: 100, CreatedAtBefore: &at}
	same := q
	same.Limit = 7
	same.Cursor = &Cursor{}
	require.Equal(t, q.hash(project), same.hash(project), "limit and cursor are not part of the query")

	zero := time.Unix(0, 0).UTC()
	variants := []func(*Query){
		func(q *Query) { q.Status = "pending" },
		func(q *Query) { q.SortBy = SortByPostAt },
		func(q *Query) { q.Order = Asc },
		func(q *Query) { q.CreatedAtBefore = nil },
		func(q *Query) { q.CreatedAtBefore, q.CreatedAtAfter = nil, &at },
		func(q *Query) { q.PostAtBefore = &at },
		func(q *Query) { q.PostAtAfter = &zero },
	}
	seen := map[queryHash]int{q.hash(project): -1}
	for i, change := range variants {
		v := q
		change(&v)
		h := v.hash(project)
		prev, dup := seen[h]
		require.False(t, dup, "variant %d hashes like %d", i, prev)
		seen[h] = i
	}
	require.NotEqual(t, q.hash(project), q.hash(uuid.New()), "bound to the project")
}

// A cursor is trusted for its position only as far as the query's own
// bounds allow: a forged one outside the window cannot widen it.
func TestScanArgsKeepTheTighterStart(t *testing.T) {
	t.Parallel()
	before := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	inside := Cursor{At: before.Add(-time.Hour), ID: uuid.New()}
	outside := Cursor{At: before.Add(time.Hour), ID: uuid.New()}
	q := Query{SortBy: SortByCreatedAt, Order: Desc, Limit: 10, CreatedAtBefore: &before}

	a := scanArgs(uuid.Nil, q)
	require.Equal(t, before, *a.KeyAt)
	require.Equal(t, uuid.Nil, a.KeyID, "(created_at, id) < (before, nil uuid) is created_at < before")
	require.Nil(t, a.EndAt)

	q.Cursor = &inside
	a = scanArgs(uuid.Nil, q)
	require.Equal(t, inside.At, *a.KeyAt)
	require.Equal(t, inside.ID, a.KeyID)

	q.Cursor = &outside
	a = scanArgs(uuid.Nil, q)
	require.Equal(t, before, *a.KeyAt, "a forged cursor cannot leave the window")

	after := before.Add(-24 * time.Hour)
	q = Query{SortBy: SortByPostAt, Order: Asc, Limit: 10, PostAtAfter: &after, PostAtBefore: &before,
		CreatedAtAfter: &after, Cursor: &Cursor{At: after.Add(-time.Hour), ID: uuid.New()}}
	a = scanArgs(uuid.Nil, q)
	require.Equal(t, after, *a.KeyAt)
	require.Equal(t, uuid.Max, a.KeyID, "(post_at, id) > (after, max uuid) is post_at > after")
	require.Equal(t, before, *a.EndAt)
	require.Equal(t, &after, a.OtherAfter)
	require.Nil(t, a.OtherBefore)
	require.Equal(t, int32(11), a.RowLimit, "one more row tells whether a next page exists")
}
