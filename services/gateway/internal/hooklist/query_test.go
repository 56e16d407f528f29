package hooklist_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/hooklist"
)

func TestParseDefaults(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{"", "cursor="} {
		q, err := hooklist.Parse(mustQuery(t, raw))
		require.NoError(t, err, raw)
		require.Equal(t, hooklist.Query{SortBy: hooklist.SortByCreatedAt, Order: hooklist.Desc, Limit: 100}, q,
			"an empty cursor counts as none: %q", raw)
	}
}

func TestParseValid(t *testing.T) {
	t.Parallel()
	at := func(s string) *time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		require.NoError(t, err)
		v = v.UTC()
		return &v
	}
	tests := []struct {
		raw  string
		want func(*hooklist.Query)
	}{
		{"status=pending", func(q *hooklist.Query) { q.Status = "pending" }},
		{"status=completed", func(q *hooklist.Query) { q.Status = "completed" }},
		{"status=failed", func(q *hooklist.Query) { q.Status = "failed" }},
		{"status=retry", func(q *hooklist.Query) { q.Status = "retry" }},
		{"limit=1", func(q *hooklist.Query) { q.Limit = 1 }},
		{"limit=1000", func(q *hooklist.Query) { q.Limit = 1000 }},
		{"sortBy=postAt", func(q *hooklist.Query) { q.SortBy = hooklist.SortByPostAt }},
		{"sortBy=createdAt", func(*hooklist.Query) {}},
		{"sortOrder=asc", func(q *hooklist.Query) { q.Order = hooklist.Asc }},
		{"sortOrder=Asc", func(q *hooklist.Query) { q.Order = hooklist.Asc }},
		{"sortOrder=ASC", func(q *hooklist.Query) { q.Order = hooklist.Asc }},
		{"sortOrder=desc", func(*hooklist.Query) {}},
		{"sortOrder=dEsC", func(*hooklist.Query) {}},
		{"postAtBefore=2026-03-01T10:00:00Z", func(q *hooklist.Query) { q.PostAtBefore = at("2026-03-01T10:00:00Z") }},
		{"postAtAfter=2026-03-01T11:00:00%2B01:00", func(q *hooklist.Query) { q.PostAtAfter = at("2026-03-01T10:00:00Z") }},
		{"createdAtBefore=2026-03-01T10:00:00.5-03:30", func(q *hooklist.Query) { q.CreatedAtBefore = at("2026-03-01T13:30:00.5Z") }},
		{"createdAtAfter=2026-03-01T10:00:00.123456Z", func(q *hooklist.Query) { q.CreatedAtAfter = at("2026-03-01T10:00:00.123456Z") }},
		// PostgreSQL keeps microseconds: bounds round outward, so that a
		// hook stored at .000001 is after .0000005 and one at .000000 is
		// before it.
		{"createdAtAfter=2026-03-01T10:00:00.0000005Z", func(q *hooklist.Query) { q.CreatedAtAfter = at("2026-03-01T10:00:00Z") }},
		{"createdAtBefore=2026-03-01T10:00:00.0000005Z", func(q *hooklist.Query) { q.CreatedAtBefore = at("2026-03-01T10:00:00.000001Z") }},
		{"postAtAfter=1969-12-31T23:59:59.9999995Z", func(q *hooklist.Query) { q.PostAtAfter = at("1969-12-31T23:59:59.999999Z") }},
		{"postAtBefore=1969-12-31T23:59:59.9999995Z", func(q *hooklist.Query) { q.PostAtBefore = at("1970-01-01T00:00:00Z") }},
		{"postAtAfter=2026-03-01T10:00:00Z&postAtBefore=2026-03-01T10:00:00.000001Z", func(q *hooklist.Query) {
			q.PostAtAfter, q.PostAtBefore = at("2026-03-01T10:00:00Z"), at("2026-03-01T10:00:00.000001Z")
		}},
	}
	for _, tt := range tests {
		q, err := hooklist.Parse(mustQuery(t, tt.raw))
		require.NoError(t, err, tt.raw)
		want := hooklist.Query{SortBy: hooklist.SortByCreatedAt, Order: hooklist.Desc, Limit: 100}
		tt.want(&want)
		require.Equal(t, want, q, tt.raw)
	}
}

func TestParseInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw     string
		field   string
		message string
	}{
		{"offset=100", "offset", "page with cursor"},
		{"offset=0&limit=10", "offset", "meta.nextCursor"},
		{"page=2", "page", "is not a query parameter"},
		{"sortorder=asc", "sortorder", "sortOrder"},
		{"Status=failed", "Status", "is not a query parameter"},
		{"status=done", "status", "pending, completed, failed, retry"},
		{"status=Failed", "status", "must be one of"},
		{"status=failed&status=retry", "status", "at most once"},
		{"limit=0", "limit", "from 1 to 1000"},
		{"limit=1001", "limit", "from 1 to 1000"},
		{"limit=-5", "limit", "from 1 to 1000"},
		{"limit=ten", "limit", "integer"},
		{"limit=1.5", "limit", "integer"},
		{"limit=99999999999999999999", "limit", "integer"},
		{"sortBy=updatedAt", "sortBy", "createdAt or postAt"},
		{"sortBy=postat", "sortBy", "createdAt or postAt"},
		{"sortOrder=up", "sortOrder", "ASC or DESC"},
		{"sortOrder=ascending", "sortOrder", "ASC or DESC"},
		{"postAtBefore=2026-03-01", "postAtBefore", "RFC 3339"},
		{"postAtAfter=2026-03-01T10:00:00", "postAtAfter", "with an offset"},
		{"createdAtBefore=yesterday", "createdAtBefore", "RFC 3339"},
		{"createdAtAfter=1700000000", "createdAtAfter", "RFC 3339"},
		// An unencoded + reaches the server as a space.
		{"createdAtAfter=2026-03-01T10:00:00+01:00", "createdAtAfter", "%2B"},
		{"postAtAfter=2026-03-01T10:00:00Z&postAtBefore=2026-03-01T10:00:00Z", "postAtAfter", "earlier than postAtBefore"},
		{"createdAtAfter=2026-03-02T00:00:00Z&createdAtBefore=2026-03-01T00:00:00Z", "createdAtAfter", "earlier than createdAtBefore"},
		{"status=", "status", "must be one of"},
		{"limit=", "limit", "integer"},
		{"sortBy=", "sortBy", "createdAt or postAt"},
		{"sortOrder=", "sortOrder", "ASC or DESC"},
		{"postAtBefore=", "postAtBefore", "RFC 3339"},
		{"cursor=not-a-cursor", "cursor", "start again without cursor"},
		{"cursor=%2F%2F%2F", "cursor", "is not a cursor"},
		{"cursor=AQ", "cursor", "is not a cursor"},
	}
	for _, tt := range tests {
		_, err := hooklist.Parse(mustQuery(t, tt.raw))
		var invalid *hooklist.InvalidError
		require.ErrorAs(t, err, &invalid, tt.raw)
		require.Len(t, invalid.Problems, 1, tt.raw)
		require.Equal(t, tt.field, invalid.Problems[0].Field, tt.raw)
		require.Contains(t, invalid.Problems[0].Message, tt.message, tt.raw)
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := hooklist.Parse(mustQuery(t, "offset=5&status=x&limit=0&sortBy=id&sortOrder=sideways&postAtBefore=now"))
	var invalid *hooklist.InvalidError
	require.ErrorAs(t, err, &invalid)
	fields := make([]string, len(invalid.Problems))
	for i, p := range invalid.Problems {
		fields[i] = p.Field
	}
	require.Equal(t, []string{"offset", "status", "sortBy", "sortOrder", "limit", "postAtBefore"}, fields)
	require.Contains(t, err.Error(), "offset: is not supported")
}

func mustQuery(t *testing.T, raw string) url.Values {
	t.Helper()
	v, err := url.ParseQuery(raw)
	require.NoError(t, err)
	return v
}
