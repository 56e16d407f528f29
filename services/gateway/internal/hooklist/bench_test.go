package hooklist

import (
	"context"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/hooklist/hooklisttest"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

// benchHooks is the size of each of the two projects the benchmark loads.
const benchHooks = 1_000_000

// BenchmarkList measures what GET /v1/hooks costs in the database (the page
// and the count) on a project of a million hooks, beside another project of
// a million: the projects' hooks are loaded in alternating chunks of 50,000
// over 60 days, so that they share the table's pages as they would in
// production. Each case reports p50 and p99 of List in milliseconds, and
// the p50 of its two parts run alone: the page query and the count.
func BenchmarkList(b *testing.B) {
	pool, _ := pgtest.NewPool(b)
	ctx := b.Context()
	project, other := benchProject(b, pool), benchProject(b, pool)
	end := time.Now().UTC().Truncate(time.Microsecond)
	start := time.Now()
	loadInterleaved(b, pool, end, project, other)
	require.NoError(b, hooklisttest.Vacuum(ctx, pool))
	b.Logf("loaded %d hooks in two projects in %s", 2*benchHooks, time.Since(start).Round(time.Second))

	lister := NewLister(pool)
	parse := func(b *testing.B, raw, cursor string) Query {
		values, err := url.ParseQuery(raw)
		require.NoError(b, err)
		if cursor != "" {
			values.Set("cursor", cursor)
		}
		q, err := Parse(values)
		require.NoError(b, err)
		return q
	}
	window := "&createdAtAfter=" + stamp(end.Add(-30*24*time.Hour)) + "&createdAtBefore=" + stamp(end.Add(-29*24*time.Hour))
	cases := []struct {
		name, query string
		// pages to follow before the measured one.
		skip int
	}{
		{"first page", "", 0},
		{"page 51", "", 50},
		{"status failed", "status=failed", 0},
		{"status failed, page 51", "status=failed", 50},
		{"createdAt window of a day", window[1:], 0},
		{"postAt window of a day, by postAt", "sortBy=postAt&sortOrder=asc&postAtAfter=" + stamp(end.Add(-10*24*time.Hour)) +
			"&postAtBefore=" + stamp(end.Add(-9*24*time.Hour)), 0},
		{"pending, by postAt", "status=pending&sortBy=postAt&sortOrder=asc", 0},
		{"first page, limit 1000", "limit=1000", 0},
		// Filters on the other time column than the sort's.
		{"postAt window of a day 50 days back, by createdAt", "postAtAfter=" + stamp(end.Add(-50*24*time.Hour)) +
			"&postAtBefore=" + stamp(end.Add(-49*24*time.Hour)), 0},
		{"created in the last 3 days, by postAt asc", "sortBy=postAt&sortOrder=asc&createdAtAfter=" + stamp(end.Add(-3*24*time.Hour)), 0},
		{"created in the last 30 days, by postAt desc", "sortBy=postAt&createdAtAfter=" + stamp(end.Add(-30*24*time.Hour)), 0},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			cursor := ""
			for range c.skip {
				p, err := lister.List(ctx, project, parse(b, c.query, cursor))
				require.NoError(b, err)
				cursor = p.NextCursor
				require.NotEmpty(b, cursor)
			}
			q := parse(b, c.query, cursor)
			few := false
			if q.selective() {
				n, err := lister.count(ctx, project, q)
				require.NoError(b, err)
				few = n <= CountCap
			}
			var list, page, count []time.Duration
			for b.Loop() {
				t0 := time.Now()
				_, err := lister.List(ctx, project, parse(b, c.query, cursor))
				t1 := time.Now()
				require.NoError(b, err)
				_, err = lister.page(ctx, project, q, few)
				t2 := time.Now()
				require.NoError(b, err)
				_, err = lister.count(ctx, project, q)
				require.NoError(b, err)
				list, page, count = append(list, t1.Sub(t0)), append(page, t2.Sub(t1)), append(count, time.Since(t2))
			}
			b.ReportMetric(percentile(list, 0.50), "p50-ms")
			b.ReportMetric(percentile(list, 0.99), "p99-ms")
			b.ReportMetric(percentile(page, 0.50), "page-p50-ms")
			b.ReportMetric(percentile(count, 0.50), "count-p50-ms")
		})
	}
}

func loadInterleaved(b *testing.B, pool *pgxpool.Pool, end time.Time, projects ...uuid.UUID) {
	const chunk, span = 50_000, 60 * 24 * time.Hour
	chunks := benchHooks / chunk
	for i := range chunks {
		chunkEnd := end.Add(-time.Duration(chunks-1-i) * span / time.Duration(chunks))
		for n, p := range projects {
			err := hooklisttest.LoadRealistic(context.Background(), pool, p, chunk, span/time.Duration(chunks), chunkEnd, uint64(i*len(projects)+n))
			require.NoError(b, err)
		}
	}
}

// percentile returns the p-quantile of took, in milliseconds.
func percentile(took []time.Duration, p float64) float64 {
	if len(took) == 0 {
		return 0
	}
	took = slices.Clone(took)
	slices.Sort(took)
	return float64(took[min(len(took)-1, int(p*float64(len(took))))]) / float64(time.Millisecond)
}

func benchProject(b *testing.B, pool *pgxpool.Pool) uuid.UUID {
	created, err := project.Create(b.Context(), pool, secrettest.Keyring(), "listing benchmark", "hooks.example.com")
	require.NoError(b, err)
	return created.ID
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
