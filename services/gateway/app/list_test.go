package app_test

import (
	"bytes"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/internal/hooklist/hooklisttest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

// listJSON is a page of GET /v1/hooks, decoded strictly.
type listJSON struct {
	Data []hookJSON `json:"data"`
	Meta struct {
		TotalItems       int64   `json:"totalItems"`
		TotalItemsCapped bool    `json:"totalItemsCapped"`
		NextCursor       *string `json:"nextCursor"`
	} `json:"meta"`
}

func (b bundle) list(query string) (response, listJSON) {
	b.t.Helper()
	res := b.do(http.MethodGet, "/v1/hooks?"+query, nil)
	if res.status != http.StatusOK {
		return res, listJSON{}
	}
	return res, decodeStrict[listJSON](b.t, res.body)
}

// loadHooks stores hooks of a project directly, with chosen times and
// statuses, which the API cannot make.
func (b bundle) loadHooks(projectID string, hooks []hooklisttest.Hook) {
	b.t.Helper()
	pool, err := postgres.Connect(b.ctx, b.dbURL, 1)
	require.NoError(b.t, err)
	defer pool.Close()
	require.NoError(b.t, hooklisttest.Load(b.ctx, pool, uuid.MustParse(projectID), hooks))
}

// listDay is in the past: hooks created through the API come after it.
var listDay = time.Date(2025, 4, 1, 0, 0, 0, 0, time.UTC)

func listFixture(n int) []hooklisttest.Hook {
	rng := rand.New(rand.NewPCG(21, 22))
	statuses := []string{"pending", "completed", "failed", "retry"}
	hooks := make([]hooklisttest.Hook, n)
	for i := range hooks {
		hooks[i] = hooklisttest.Hook{
			ID:        uuid.New(),
			Status:    statuses[rng.IntN(len(statuses))],
			CreatedAt: listDay.Add(time.Duration(rng.IntN(60)) * time.Minute),
			PostAt:    listDay.Add(time.Duration(rng.IntN(48)) * time.Hour),
		}
	}
	return hooks
}

func TestListHooksPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hooks := listFixture(23)
	b.loadHooks(b.creds.ProjectID, hooks)
	other, err := app.CreateProject(b.ctx, app.Database{URL: b.dbURL, SecretKeys: secrettest.Keys}, "Other", "other.example.com")
	require.NoError(t, err)
	b.loadHooks(other.ProjectID, listFixture(10))

	// postAt ascending, ties by id: what the pages must add up to.
	slices.SortFunc(hooks, func(x, y hooklisttest.Hook) int {
		if c := x.PostAt.Compare(y.PostAt); c != 0 {
			return c
		}
		return bytes.Compare(x.ID[:], y.ID[:])
	})
	var want, got []string
	for _, h := range hooks {
		want = append(want, h.ID.String())
	}

	query := "sortBy=postAt&sortOrder=asc&limit=5"
	pages := 0
	for cursor := ""; ; pages++ {
		require.Less(t, pages, 10, "paging does not end")
		res, page := b.list(query + "&cursor=" + url.QueryEscape(cursor))
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		require.Equal(t, int64(23), page.Meta.TotalItems)
		require.False(t, page.Meta.TotalItemsCapped)
		for _, h := range page.Data {
			got = append(got, h.ID)
		}
		if page.Meta.NextCursor == nil {
			require.Len(t, page.Data, 3, "the last page holds the rest")
			require.NotContains(t, string(res.body), "nextCursor", "absent, not null, on the last page")
			break
		}
		require.Len(t, page.Data, 5)
		cursor = *page.Meta.NextCursor
	}
	require.Equal(t, want, got)

	_, page := b.list("")
	require.Len(t, page.Data, 23, "default limit 100, newest first")
	require.Nil(t, page.Meta.NextCursor)
	for i := 1; i < len(page.Data); i++ {
		newer, err := time.Parse(time.RFC3339Nano, page.Data[i-1].CreatedAt)
		require.NoError(t, err)
		older, err := time.Parse(time.RFC3339Nano, page.Data[i].CreatedAt)
		require.NoError(t, err)
		require.False(t, newer.Before(older))
	}
}

func TestListHooksFilters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hooks := listFixture(40)
	b.loadHooks(b.creds.ProjectID, hooks)
	created := b.post(`{"path":"/new","data":{},"postIn":"1h"}`)
	require.Equal(t, http.StatusCreated, created.status, string(created.body))

	after, before := listDay.Add(6*time.Hour), listDay.Add(30*time.Hour)
	want := map[string]bool{}
	for _, h := range hooks {
		if h.Status == "failed" && h.PostAt.After(after) && h.PostAt.Before(before) {
			want[h.ID.String()] = true
		}
	}
	require.NotEmpty(t, want)
	res, page := b.list("status=failed&sortOrder=Asc&postAtAfter=" + url.QueryEscape(after.Format(time.RFC3339)) +
		"&postAtBefore=" + url.QueryEscape(before.In(time.FixedZone("", 2*3600)).Format(time.RFC3339)))
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.Equal(t, int64(len(want)), page.Meta.TotalItems)
	require.Len(t, page.Data, len(want))
	for _, h := range page.Data {
		require.True(t, want[h.ID], h.ID)
		require.Equal(t, "failed", h.Status)
	}

	_, page = b.list("status=pending&createdAtAfter=" + url.QueryEscape(listDay.Add(24*time.Hour).Format(time.RFC3339)))
	require.Len(t, page.Data, 1, "only the hook created through the API, now")
	require.Equal(t, created.hook(t).ID, page.Data[0].ID)
}

func TestListHooksNeverShowsAnotherProject(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other, err := app.CreateProject(b.ctx, app.Database{URL: b.dbURL, SecretKeys: secrettest.Keys}, "Other", "other.example.com")
	require.NoError(t, err)
	b.loadHooks(other.ProjectID, listFixture(15))
	for _, query := range []string{"", "status=failed", "sortBy=postAt&sortOrder=asc", "limit=1000"} {
		res, page := b.list(query)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		require.Empty(t, page.Data, query)
		require.NotNil(t, page.Data, "an empty page is [], not null")
		require.Zero(t, page.Meta.TotalItems)
	}

	// A cursor of the other project's list is refused, not followed.
	res := b.do(http.MethodGet, "/v1/hooks?limit=1", nil, header("X-API-Key", other.APIKey))
	theirs := decodeStrict[listJSON](t, res.body)
	require.NotNil(t, theirs.Meta.NextCursor)
	res, _ = b.list("limit=1&cursor=" + url.QueryEscape(*theirs.Meta.NextCursor))
	e := res.requireError(t, http.StatusBadRequest, "invalid_request", "cursor")
	require.Contains(t, e.Error, "does not belong to this query")
}

func TestListHooksRefusesBadQueries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.loadHooks(b.creds.ProjectID, listFixture(5))
	_, first := b.list("limit=2&sortBy=postAt")
	require.NotNil(t, first.Meta.NextCursor)
	cursor := *first.Meta.NextCursor
	damaged := []byte(cursor)
	damaged[5] = map[bool]byte{true: 'B', false: 'A'}[damaged[5] == 'A']

	tests := []struct {
		query, field, message string
	}{
		{"offset=100", "offset", "cursor"},
		{"offset=0&limit=10", "offset", "cursor"},
		{"limit=0", "limit", "1 to 1000"},
		{"limit=1001", "limit", "1 to 1000"},
		{"limit=ten", "limit", "number"},
		{"status=done", "status", "pending, completed, failed, retry"},
		{"status=", "status", "must be one of"},
		{"sortBy=updatedAt", "sortBy", "createdAt or postAt"},
		{"sortOrder=sideways", "sortOrder", "ASC or DESC"},
		{"postAtBefore=2030-04-01", "postAtBefore", "RFC 3339"},
		{"postAtAfter=tomorrow", "postAtAfter", "RFC 3339"},
		{"createdAtBefore=2030-04-01T10:00:00", "createdAtBefore", "RFC 3339"},
		{"createdAtAfter=2030-04-02T00:00:00Z&createdAtBefore=2030-04-01T00:00:00Z", "createdAtAfter", "earlier than createdAtBefore"},
		{"sortorder=asc", "sortorder", "is not a query parameter"},
		{"page=2", "page", "is not a query parameter"},
		{"cursor=garbage", "cursor", "start again without cursor"},
		{"cursor=" + string(damaged), "cursor", "start again without cursor"},
		{"status=failed&sortBy=postAt&limit=2&cursor=" + cursor, "cursor", "does not belong to this query"},
		{"limit=2&cursor=" + cursor, "cursor", "does not belong to this query"},
	}
	for _, tt := range tests {
		res, _ := b.list(tt.query)
		e := res.requireError(t, http.StatusBadRequest, "invalid_request", tt.field)
		require.Contains(t, e.Details[0].Message, tt.message, tt.query)
		require.True(t, strings.HasPrefix(e.Error, "invalid request: "+tt.field+": "), e.Error)
	}

	// Several at once are all named.
	res, _ := b.list("offset=1&limit=0&status=x")
	res.requireError(t, http.StatusBadRequest, "invalid_request", "offset", "limit", "status")

	// The same query with another page size follows the cursor.
	res, next := b.list("sortBy=postAt&limit=50&cursor=" + cursor)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.Equal(t, first.Meta.TotalItems-2, int64(len(next.Data)))
}
