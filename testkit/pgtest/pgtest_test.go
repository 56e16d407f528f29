package pgtest_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func dbName(t *testing.T, dbURL string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	return strings.TrimPrefix(u.Path, "/")
}

func queryInt(t *testing.T, dbURL, query string, args ...any) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var n int
	require.NoError(t, conn.QueryRow(ctx, query, args...).Scan(&n))
	return n
}

func migrated(t *testing.T, dbURL string) bool {
	t.Helper()
	return queryInt(t, dbURL, `SELECT count(*) FROM information_schema.tables
		WHERE table_schema = 'public' AND table_name = 'hooks'`) == 1 &&
		queryInt(t, dbURL, "SELECT count(*) FROM goose_db_version WHERE version_id = 1 AND is_applied") == 1
}

func exists(t *testing.T, name string) bool {
	t.Helper()
	return queryInt(t, pgtest.ServerURL(), "SELECT count(*) FROM pg_database WHERE datname = $1", name) == 1
}

func TestNewDBGivesSeparateMigratedDatabases(t *testing.T) {
	t.Parallel()
	a, b := pgtest.NewDB(t), pgtest.NewDB(t)

	require.NotEqual(t, dbName(t, a), dbName(t, b))
	require.True(t, migrated(t, a))
	require.True(t, migrated(t, b))

	// What one test writes, the other does not see.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, a)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "INSERT INTO projects (id, name, domain, async_secret_sealed) VALUES (gen_random_uuid(), 'p', 'example.com', 'v1:test:unopened')")
	require.NoError(t, err)
	require.Equal(t, 1, queryInt(t, a, "SELECT count(*) FROM projects"))
	require.Equal(t, 0, queryInt(t, b, "SELECT count(*) FROM projects"))
}

func TestNewDBIsDroppedWhenTheTestEnds(t *testing.T) {
	t.Parallel()
	var name string
	// Not parallel: t.Run must return only once the subtest and its
	// cleanups have finished.
	t.Run("uses a database", func(t *testing.T) {
		name = dbName(t, pgtest.NewDB(t))
		require.True(t, exists(t, name))
	})

	require.NotEmpty(t, name)
	require.False(t, exists(t, name), "database %s outlived its test", name)
}

func TestNewPool(t *testing.T) {
	t.Parallel()
	pool, dbURL := pgtest.NewPool(t)

	require.True(t, migrated(t, dbURL))
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), "SELECT count(*) FROM hooks").Scan(&n))
	require.Zero(t, n)
}
