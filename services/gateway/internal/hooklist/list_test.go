package hooklist_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/hook"
	"github.com/sundial-run/sundial/services/gateway/internal/hooklist"
	"github.com/sundial-run/sundial/services/gateway/internal/hooklist/hooklisttest"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// base is the start of the fixtures' times.
var base = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type env struct {
	pool    *pgxpool.Pool
	lister  *hooklist.Lister
	project uuid.UUID
	// other is a second project with hooks at the same times: none of them
	// may ever appear in the first one's lists.
	other uuid.UUID
}

func setup(t *testing.T) env {
	t.Helper()
	pool, _ := pgtest.NewPool(t)
	return env{pool: pool, lister: hooklist.NewLister(pool), project: newProject(t, pool), other: newProject(t, pool)}
}

func newProject(t testing.TB, pool *pgxpool.Pool) uuid.UUID {
	t.Helper()
	created, err := project.Create(t.Context(), pool, secrettest.Keyring(), "listing "+uuid.NewString()[:8], "hooks.example.com")
	require.NoError(t, err)
	return created.ID
}

func (e env) load(t *testing.T, project uuid.UUID, hooks []hooklisttest.Hook) {
	t.Helper()
	require.NoError(t, hooklisttest.Load(t.Context(), e.pool, project, hooks))
}

// randomHooks makes n hooks with many ties: created on whole seconds of
// the span after from, due on whole minutes around it.
func randomHooks(rng *rand.Rand, n int, from time.Time, span time.Duration) []hooklisttest.Hook {
	hooks := make([]hooklisttest.Hook, n)
	for i := range hooks {
		hooks[i] = hooklisttest.Hook{
			ID:        uuid.New(),
			Status:    hooklist.Statuses[rng.IntN(len(hooklist.Statuses))],
			CreatedAt: from.Add(time.Duration(rng.Int64N(int64(span/time.Second))) * time.Second),
			PostAt:    from.Add(time.Duration(rng.Int64N(int64(2*span/time.Minute))-int64(span/2/time.Minute)) * time.Minute),
		}
	}
	return hooks
}

// expected lists what a query must return, computed without the database.
func expected(all []hooklisttest.Hook, q hooklist.Query) []uuid.UUID {
	var match []hooklisttest.Hook
	for _, h := range all {
		if (q.Status == "" || h.Status == q.Status) && hasAll(h.Tags, q.Tags) && ofKey(h, q.OrderingKey) &&
			inside(h.CreatedAt, q.CreatedAtAfter, q.CreatedAtBefore) && inside(h.PostAt, q.PostAtAfter, q.PostAtBefore) {
			match = append(match, h)
		}
	}
	slices.SortFunc(match, func(a, b hooklisttest.Hook) int {
		c := compare(q.SortBy, a, b)
		if q.Order == hooklist.Desc {
			return -c
		}
		return c
	})
	ids := make([]uuid.UUID, len(match))
	for i, h := range match {
		ids[i] = h.ID
	}
	return ids
}

func hasAll(tags, want []string) bool {
	for _, w := range want {
		if !slices.Contains(tags, w) {
			return false
		}
	}
	return true
}

// ofKey reports whether h is of the ordering key (any hook, for none).
func ofKey(h hooklisttest.Hook, key string) bool {
	return key == "" || (h.OrderingKey != nil && *h.OrderingKey == key)
}

func inside(t time.Time, after, before *time.Time) bool {
	return (after == nil || t.After(*after)) && (before == nil || t.Before(*before))
}

// compare orders hooks as PostgreSQL does: by the sort column, then by id
// bytewise.
func compare(by hooklist.SortBy, a, b hooklisttest.Hook) int {
	at, bt := a.CreatedAt, b.CreatedAt
	if by == hooklist.SortByPostAt {
		at, bt = a.PostAt, b.PostAt
	}
	if c := at.Compare(bt); c != 0 {
		return c
	}
	return bytes.Compare(a.ID[:], b.ID[:])
}

// walk follows the cursors from the first page to the last, checking the
// shape of every page, and returns the hooks in the order received.
func (e env) walk(t *testing.T, raw string) ([]hook.Hook, []hooklist.Page) {
	t.Helper()
	var (
		hooks []hook.Hook
		pages []hooklist.Page
	)
	cursor := ""
	for range 10_000 {
		p := e.page(t, raw, cursor)
		for _, h := range p.Hooks {
			require.Equal(t, e.project, h.ProjectID, "another project's hook in the list")
		}
		pages = append(pages, p)
		hooks = append(hooks, p.Hooks...)
		if p.NextCursor == "" {
			return hooks, pages
		}
		cursor = p.NextCursor
	}
	t.Fatal("paging does not end")
	return nil, nil
}

func (e env) page(t *testing.T, raw, cursor string) hooklist.Page {
	t.Helper()
	values := mustQuery(t, raw)
	if cursor != "" {
		values.Set("cursor", cursor)
	}
	q, err := hooklist.Parse(values)
	require.NoError(t, err, raw)
	p, err := e.lister.List(t.Context(), e.project, q)
	require.NoError(t, err, raw)
	return p
}

func ids(hooks []hook.Hook) []uuid.UUID {
	out := make([]uuid.UUID, len(hooks))
	for i, h := range hooks {
		out[i] = h.ID
	}
	return out
}

func TestSortsAndFilters(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rng := rand.New(rand.NewPCG(1, 2))
	all := randomHooks(rng, 400, base, 5*time.Minute)
	e.load(t, e.project, all)
	e.load(t, e.other, randomHooks(rng, 400, base, 5*time.Minute))

	// Window bounds on existing values, to show that they are exclusive.
	created := []string{"", "&createdAtAfter=" + stamp(all[0].CreatedAt), "&createdAtBefore=" + stamp(all[1].CreatedAt),
		"&createdAtAfter=" + stamp(base.Add(time.Minute)) + "&createdAtBefore=" + stamp(base.Add(3*time.Minute))}
	posted := []string{"", "&postAtAfter=" + stamp(base), "&postAtBefore=" + stamp(all[2].PostAt),
		"&postAtAfter=" + stamp(base.Add(-time.Minute)) + "&postAtBefore=" + stamp(base.Add(2*time.Minute))}
	for _, status := range []string{"", "failed", "pending"} {
		for _, sort := range []string{"createdAt", "postAt"} {
			for _, order := range []string{"desc", "ASC"} {
				for i, c := range created {
					p := posted[(i+len(status))%len(posted)]
					raw := "limit=7&sortBy=" + sort + "&sortOrder=" + order + c + p
					if status != "" {
						raw += "&status=" + status
					}
					q, err := hooklist.Parse(mustQuery(t, raw))
					require.NoError(t, err)
					want := expected(all, q)
					require.NotEmpty(t, want, "a case that tests nothing: %s", raw)

					got, pages := e.walk(t, raw)
					require.Equal(t, want, ids(got), raw)
					for n, page := range pages {
						require.Equal(t, int64(len(want)), page.TotalItems, raw)
						require.False(t, page.TotalCapped)
						if n < len(pages)-1 {
							require.Len(t, page.Hooks, 7, "only the last page is short")
						}
					}
				}
			}
		}
	}
}

func TestExclusiveBounds(t *testing.T) {
	t.Parallel()
	e := setup(t)
	at := func(d time.Duration) time.Time { return base.Add(d) }
	hooks := []hooklisttest.Hook{
		{ID: uuid.New(), Status: "completed", CreatedAt: at(-time.Microsecond), PostAt: at(-time.Microsecond)},
		{ID: uuid.New(), Status: "completed", CreatedAt: at(0), PostAt: at(0)},
		{ID: uuid.New(), Status: "completed", CreatedAt: at(time.Microsecond), PostAt: at(time.Microsecond)},
	}
	e.load(t, e.project, hooks)
	for _, field := range []string{"createdAt", "postAt"} {
		got, _ := e.walk(t, field+"After="+stamp(base))
		require.Equal(t, []uuid.UUID{hooks[2].ID}, ids(got), field+"After")
		got, _ = e.walk(t, field+"Before="+stamp(base))
		require.Equal(t, []uuid.UUID{hooks[0].ID}, ids(got), field+"Before")
		got, _ = e.walk(t, field+"After="+stamp(at(-time.Microsecond))+"&"+field+"Before="+stamp(at(time.Microsecond)))
		require.Equal(t, []uuid.UUID{hooks[1].ID}, ids(got), "both")
		// A bound finer than PostgreSQL's microseconds keeps the hooks
		// strictly inside it.
		got, _ = e.walk(t, field+"After="+url.QueryEscape("2026-03-01T11:59:59.9999995Z")+"&"+field+"Before="+url.QueryEscape("2026-03-01T12:00:00.0000005Z"))
		require.Equal(t, []uuid.UUID{hooks[1].ID}, ids(got), "sub-microsecond bounds")
	}
}

func TestLimit(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.load(t, e.project, randomHooks(rand.New(rand.NewPCG(3, 4)), 250, base, time.Hour))

	first := e.page(t, "", "")
	require.Len(t, first.Hooks, 100, "default limit")
	require.NotEmpty(t, first.NextCursor)
	require.Equal(t, int64(250), first.TotalItems)

	all := e.page(t, "limit=1000", "")
	require.Len(t, all.Hooks, 250)
	require.Empty(t, all.NextCursor, "no next page when everything fits")

	exact := e.page(t, "limit=250", "")
	require.Len(t, exact.Hooks, 250)
	require.Empty(t, exact.NextCursor, "a full last page has no next cursor either")

	one := e.page(t, "limit=249", "")
	require.NotEmpty(t, one.NextCursor)
	rest := e.page(t, "limit=249", one.NextCursor)
	require.Len(t, rest.Hooks, 1)
	require.Empty(t, rest.NextCursor)
	require.Equal(t, ids(all.Hooks), append(ids(one.Hooks), ids(rest.Hooks)...))
}

func TestEmptyProject(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.load(t, e.other, randomHooks(rand.New(rand.NewPCG(5, 6)), 20, base, time.Hour))
	p := e.page(t, "", "")
	require.Empty(t, p.Hooks)
	require.Zero(t, p.TotalItems)
	require.Empty(t, p.NextCursor)
}

func TestCursorMayChangeLimit(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.load(t, e.project, randomHooks(rand.New(rand.NewPCG(7, 8)), 60, base, time.Minute))
	all, _ := e.walk(t, "sortBy=postAt&sortOrder=asc&limit=1000")
	first := e.page(t, "sortBy=postAt&sortOrder=asc&limit=5", "")
	second := e.page(t, "sortBy=postAt&sortOrder=asc&limit=50", first.NextCursor)
	require.Equal(t, ids(all[5:55]), ids(second.Hooks))
	// The same instant in another offset, and the order in another case,
	// are the same query.
	q1 := "sortOrder=desc&createdAtBefore=" + url.QueryEscape("2026-03-01T13:00:30+01:00")
	q2 := "sortOrder=DESC&createdAtBefore=2026-03-01T12:00:30Z&limit=3"
	p := e.page(t, q1+"&limit=4", "")
	require.Equal(t, e.page(t, q1, p.NextCursor).Hooks[:3], e.page(t, q2, p.NextCursor).Hooks)
}

func TestCursorBoundToQuery(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.load(t, e.project, randomHooks(rand.New(rand.NewPCG(9, 10)), 100, base, time.Hour))
	const origin = "status=completed&sortBy=postAt&sortOrder=asc&postAtAfter=2026-03-01T11:00:00Z&limit=2"
	cursor := e.page(t, origin, "").NextCursor
	require.NotEmpty(t, cursor)
	others := []string{
		"status=failed&sortBy=postAt&sortOrder=asc&postAtAfter=2026-03-01T11:00:00Z",
		"sortBy=postAt&sortOrder=asc&postAtAfter=2026-03-01T11:00:00Z",
		"status=completed&sortBy=createdAt&sortOrder=asc&postAtAfter=2026-03-01T11:00:00Z",
		"status=completed&sortOrder=asc&postAtAfter=2026-03-01T11:00:00Z",
		"status=completed&sortBy=postAt&sortOrder=desc&postAtAfter=2026-03-01T11:00:00Z",
		"status=completed&sortBy=postAt&sortOrder=asc&postAtAfter=2026-03-01T11:00:00.000001Z",
		"status=completed&sortBy=postAt&sortOrder=asc",
		"status=completed&sortBy=postAt&sortOrder=asc&postAtAfter=2026-03-01T11:00:00Z&postAtBefore=2026-03-02T00:00:00Z",
		"status=completed&sortBy=postAt&sortOrder=asc&createdAtAfter=2026-03-01T11:00:00Z",
	}
	for _, raw := range others {
		values := mustQuery(t, raw)
		values.Set("cursor", cursor)
		q, err := hooklist.Parse(values)
		require.NoError(t, err, "the cursor itself is sound")
		_, err = e.lister.List(t.Context(), e.project, q)
		requireCursorError(t, err, "does not belong to this query")
	}

	values := mustQuery(t, origin)
	values.Set("cursor", cursor)
	q, err := hooklist.Parse(values)
	require.NoError(t, err)
	_, err = e.lister.List(t.Context(), e.other, q)
	requireCursorError(t, err, "does not belong to this query")
	_, err = e.lister.List(t.Context(), e.project, q)
	require.NoError(t, err)
}

func TestTamperedCursor(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.load(t, e.project, randomHooks(rand.New(rand.NewPCG(11, 12)), 10, base, time.Hour))
	cursor := e.page(t, "limit=2", "").NextCursor
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	require.NoError(t, err)
	for i := range raw {
		for _, bit := range []byte{0x01, 0x80} {
			b := slices.Clone(raw)
			b[i] ^= bit
			_, err := hooklist.Parse(url.Values{"cursor": {base64.RawURLEncoding.EncodeToString(b)}})
			requireCursorError(t, err, "start again without cursor")
		}
	}
	for _, bad := range []string{cursor[:len(cursor)-1], cursor + "A", cursor + "=", " " + cursor, "x" + cursor[1:],
		base64.RawURLEncoding.EncodeToString(append(slices.Clone(raw), 0)), base64.StdEncoding.EncodeToString(raw)} {
		_, err := hooklist.Parse(url.Values{"cursor": {bad}})
		requireCursorError(t, err, "start again without cursor")
	}
	_, err = hooklist.Parse(url.Values{"cursor": {cursor}})
	require.NoError(t, err)
}

func requireCursorError(t *testing.T, err error, message string) {
	t.Helper()
	var invalid *hooklist.InvalidError
	require.ErrorAs(t, err, &invalid)
	require.Len(t, invalid.Problems, 1)
	require.Equal(t, "cursor", invalid.Problems[0].Field)
	require.Contains(t, invalid.Problems[0].Message, message)
}

func TestCountIsCapped(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	require.NoError(t, hooklisttest.LoadRealistic(ctx, e.pool, e.project, hooklist.CountCap, 24*time.Hour, base, 1))
	p := e.page(t, "limit=1", "")
	require.Equal(t, int64(hooklist.CountCap), p.TotalItems)
	require.False(t, p.TotalCapped, "exactly the cap is an exact count")

	e.load(t, e.project, []hooklisttest.Hook{{ID: uuid.New(), Status: "failed", CreatedAt: base, PostAt: base}})
	p = e.page(t, "limit=1", "")
	require.Equal(t, int64(hooklist.CountCap), p.TotalItems)
	require.True(t, p.TotalCapped)

	// A filter on the other time column that matches more than the cap:
	// the page walks the sort index and filters.
	after := base.Add(-25 * time.Hour)
	p = e.page(t, "limit=50&postAtAfter="+stamp(after), "")
	require.True(t, p.TotalCapped)
	require.Len(t, p.Hooks, 50)
	require.Equal(t, base, p.Hooks[0].CreatedAt.UTC(), "the newest hook first")
	for i, h := range p.Hooks {
		require.True(t, h.PostAt.After(after))
		if i > 0 {
			require.Positive(t, compare(hooklist.SortByCreatedAt, view(p.Hooks[i-1]), view(h)))
		}
	}

	p = e.page(t, "limit=1&status=failed", "")
	require.Less(t, p.TotalItems, int64(hooklist.CountCap/10), "the filters apply to the count")
	require.False(t, p.TotalCapped)
	p2 := e.page(t, "limit=1&status=failed", p.NextCursor)
	require.Equal(t, p.TotalItems, p2.TotalItems, "the cursor does not change the count")
}

// TestPagingWhileInserting is the listing's promise: while another
// goroutine keeps inserting hooks (before, among and after the existing
// ones, with the same timestamps too), paging returns every hook that
// existed when it started exactly once, and in order.
func TestPagingWhileInserting(t *testing.T) {
	t.Parallel()
	for _, sort := range []string{"sortBy=createdAt&sortOrder=desc", "sortBy=createdAt&sortOrder=asc",
		"sortBy=postAt&sortOrder=desc", "sortBy=postAt&sortOrder=asc", "sortBy=postAt&sortOrder=asc&status=completed"} {
		t.Run(sort, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			rng := rand.New(rand.NewPCG(13, uint64(len(sort))))
			existing := randomHooks(rng, 1500, base, 30*time.Minute)
			e.load(t, e.project, existing)

			batches := make(chan int)
			ctx, stop := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- insertUntilStopped(ctx, e, batches) }()

			raw := sort + "&limit=15"
			q, err := hooklist.Parse(mustQuery(t, raw))
			require.NoError(t, err)
			var seen []hook.Hook
			pages, inserted := 0, 0
			cursor := ""
			for range 1000 {
				p := e.page(t, raw, cursor)
				seen = append(seen, p.Hooks...)
				pages++
				// At least one more batch lands before the next page.
				inserted = <-batches
				if p.NextCursor == "" {
					break
				}
				cursor = p.NextCursor
			}
			stop()
			require.NoError(t, <-done)

			times := map[uuid.UUID]int{}
			for i, h := range seen {
				times[h.ID]++
				require.Equal(t, 1, times[h.ID], "hook %s seen twice", h.ID)
				require.Equal(t, e.project, h.ProjectID)
				if i > 0 {
					c := compare(q.SortBy, view(seen[i-1]), view(h))
					require.True(t, (q.Order == hooklist.Asc && c < 0) || (q.Order == hooklist.Desc && c > 0),
						"hook %d is out of order", i)
				}
			}
			before := map[uuid.UUID]bool{}
			for _, h := range existing {
				before[h.ID] = true
			}
			var seenExisting []uuid.UUID
			for _, h := range seen {
				if before[h.ID] {
					seenExisting = append(seenExisting, h.ID)
				}
			}
			want := expected(existing, q)
			require.Equal(t, want, seenExisting, "every hook there at the start, exactly once, in order")
			require.Greater(t, pages, 20)
			t.Logf("%d pages, %d hooks seen, %d of them among the %d inserted meanwhile",
				pages, len(seen), len(seen)-len(want), inserted*insertBatch)
		})
	}
}

const insertBatch = 25

// insertUntilStopped inserts batches of hooks into both projects, telling
// each batch on batches, until ctx ends.
func insertUntilStopped(ctx context.Context, e env, batches chan<- int) error {
	rng := rand.New(rand.NewPCG(99, 100))
	for n := 1; ; n++ {
		hooks := randomHooks(rng, insertBatch, base.Add(-5*time.Minute), 40*time.Minute)
		project := e.project
		if n%3 == 0 {
			project = e.other
		}
		if err := hooklisttest.Load(ctx, e.pool, project, hooks); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("insert batch %d: %w", n, err)
		}
		select {
		case batches <- n:
		case <-ctx.Done():
			return nil
		}
	}
}

func view(h hook.Hook) hooklisttest.Hook {
	return hooklisttest.Hook{ID: h.ID, Status: h.Status, CreatedAt: h.CreatedAt, PostAt: h.PostAt}
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// tagged gives each hook some of the tags a, b and c (or none), at random.
func tagged(rng *rand.Rand, hooks []hooklisttest.Hook) []hooklisttest.Hook {
	for i := range hooks {
		for _, tag := range []string{"a", "b", "c:1"} {
			if rng.IntN(2) == 0 {
				hooks[i].Tags = append(hooks[i].Tags, tag)
			}
		}
	}
	return hooks
}

func TestTagFilter(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rng := rand.New(rand.NewPCG(3, 4))
	all := tagged(rng, randomHooks(rng, 300, base, 5*time.Minute))
	e.load(t, e.project, all)
	e.load(t, e.other, tagged(rng, randomHooks(rng, 300, base, 5*time.Minute)))

	for _, tags := range []string{"&tag=a", "&tag=b&tag=a", "&tag=c:1&tag=a&tag=b"} {
		for _, rest := range []string{"", "&status=completed", "&sortBy=postAt&sortOrder=asc", "&postAtAfter=" + stamp(base)} {
			raw := "limit=9" + tags + rest
			q, err := hooklist.Parse(mustQuery(t, raw))
			require.NoError(t, err)
			want := expected(all, q)
			require.NotEmpty(t, want, "a case that tests nothing: %s", raw)
			got, pages := e.walk(t, raw)
			require.Equal(t, want, ids(got), raw)
			require.Equal(t, int64(len(want)), pages[0].TotalItems, raw)
		}
	}
	none, err := hooklist.Parse(mustQuery(t, "tag=nothing"))
	require.NoError(t, err)
	p, err := e.lister.List(t.Context(), e.project, none)
	require.NoError(t, err)
	require.Empty(t, p.Hooks)
	require.Zero(t, p.TotalItems)
}

func TestTagFilterValidation(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{"tag=", "tag=a%20b", "tag=" + strings.Repeat("t", 65),
		"tag=1&tag=2&tag=3&tag=4&tag=5&tag=6&tag=7&tag=8&tag=9&tag=10&tag=11"} {
		_, err := hooklist.Parse(mustQuery(t, raw))
		var invalid *hooklist.InvalidError
		require.ErrorAs(t, err, &invalid, raw)
		require.Equal(t, "tag", invalid.Problems[0].Field, raw)
	}
	a, err := hooklist.Parse(mustQuery(t, "tag=b&tag=a&tag=b"))
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, a.Tags, "sorted, once each")
}

func TestTagsOrderMakesNoOtherQueryForTheCursor(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rng := rand.New(rand.NewPCG(5, 6))
	e.load(t, e.project, tagged(rng, randomHooks(rng, 100, base, time.Minute)))
	first := e.page(t, "limit=2&tag=a&tag=b", "")
	require.NotEmpty(t, first.NextCursor)
	e.page(t, "limit=2&tag=b&tag=a", first.NextCursor)

	q, err := hooklist.Parse(mustQuery(t, "limit=2&tag=a&cursor="+url.QueryEscape(first.NextCursor)))
	require.NoError(t, err)
	_, err = e.lister.List(t.Context(), e.project, q)
	requireCursorError(t, err, "does not belong to this query")
}

// keyed gives each hook one of the ordering keys "k/1" and "k 2", or none,
// at random.
func keyed(rng *rand.Rand, hooks []hooklisttest.Hook) []hooklisttest.Hook {
	keys := []string{"k/1", "k 2"}
	for i := range hooks {
		if n := rng.IntN(3); n < len(keys) {
			hooks[i].OrderingKey = &keys[n]
		}
	}
	return hooks
}

func TestOrderingKeyFilter(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rng := rand.New(rand.NewPCG(7, 8))
	all := tagged(rng, keyed(rng, randomHooks(rng, 300, base, 5*time.Minute)))
	e.load(t, e.project, all)
	// The other project's hooks have the same keys.
	e.load(t, e.other, keyed(rng, randomHooks(rng, 300, base, 5*time.Minute)))

	for _, key := range []string{"k%2F1", "k%202"} {
		for _, rest := range []string{"", "&sortOrder=asc", "&status=completed", "&sortBy=postAt", "&sortBy=postAt&sortOrder=asc&status=failed",
			"&postAtAfter=" + stamp(base), "&createdAtBefore=" + stamp(base.Add(2*time.Minute)), "&tag=a"} {
			raw := "limit=9&orderingKey=" + key + rest
			q, err := hooklist.Parse(mustQuery(t, raw))
			require.NoError(t, err)
			want := expected(all, q)
			require.NotEmpty(t, want, "a case that tests nothing: %s", raw)
			got, pages := e.walk(t, raw)
			require.Greater(t, len(pages), 1, "a case of one page: %s", raw)
			require.Equal(t, want, ids(got), raw)
			require.Equal(t, int64(len(want)), pages[0].TotalItems, raw)
		}
	}
	none, err := hooklist.Parse(mustQuery(t, "orderingKey=k"))
	require.NoError(t, err)
	p, err := e.lister.List(t.Context(), e.project, none)
	require.NoError(t, err)
	require.Empty(t, p.Hooks)
	require.Zero(t, p.TotalItems)

	// A key's cursor is not another key's, nor the unfiltered list's.
	first := e.page(t, "limit=2&orderingKey=k%2F1", "")
	require.NotEmpty(t, first.NextCursor)
	for _, raw := range []string{"limit=2&orderingKey=k%202", "limit=2"} {
		q, err := hooklist.Parse(mustQuery(t, raw+"&cursor="+url.QueryEscape(first.NextCursor)))
		require.NoError(t, err)
		_, err = e.lister.List(t.Context(), e.project, q)
		requireCursorError(t, err, "does not belong to this query")
	}
}

// TestOrderingKeyFilterValidation: the bounds of a hook's orderingKey.
func TestOrderingKeyFilterValidation(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{"orderingKey=", "orderingKey=" + strings.Repeat("k", 256), "orderingKey=caf%C3%A9",
		"orderingKey=tab%09here", "orderingKey=a&orderingKey=b"} {
		_, err := hooklist.Parse(mustQuery(t, raw))
		var invalid *hooklist.InvalidError
		require.ErrorAs(t, err, &invalid, raw)
		require.Len(t, invalid.Problems, 1, raw)
		require.Equal(t, "orderingKey", invalid.Problems[0].Field, raw)
	}
	q, err := hooklist.Parse(mustQuery(t, "orderingKey="+strings.Repeat("k", 255)))
	require.NoError(t, err)
	require.Equal(t, strings.Repeat("k", 255), q.OrderingKey)
}
