package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/migrations"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// emptyDB creates a database with no schema at all (a pgtest database is
// already migrated) and drops it when t ends.
func emptyDB(t *testing.T) string {
	t.Helper()
	ctx := t.Context()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "sundial_empty_" + hex.EncodeToString(b)
	admin := pgtest.ServerURL()
	exec(t, ctx, admin, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	t.Cleanup(func() {
		exec(t, context.Background(), admin, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	})
	u, err := url.Parse(admin)
	require.NoError(t, err)
	u.Path = "/" + name
	return u.String()
}

func exec(t *testing.T, ctx context.Context, dbURL, stmt string, args ...any) {
	t.Helper()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, stmt, args...)
	require.NoError(t, err)
}

func queryInt(t *testing.T, ctx context.Context, dbURL, query string) int {
	t.Helper()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var n int
	require.NoError(t, conn.QueryRow(ctx, query).Scan(&n))
	return n
}

// allVersions lists the versions of every migration file, in order: what a
// fresh database must get.
func allVersions(t *testing.T) []int64 {
	t.Helper()
	entries, err := fs.ReadDir(migrations.FS, ".")
	require.NoError(t, err)
	var versions []int64
	for _, e := range entries {
		prefix, _, ok := strings.Cut(e.Name(), "_")
		if !ok || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		v, err := strconv.ParseInt(prefix, 10, 64)
		require.NoError(t, err, e.Name())
		versions = append(versions, v)
	}
	require.NotEmpty(t, versions)
	return versions
}

// schemaCount counts the tables of the first migration and the rows goose
// recorded as applied.
func schemaCount(t *testing.T, dbURL string) (tables, versionRows int) {
	t.Helper()
	ctx := t.Context()
	tables = queryInt(t, ctx, dbURL, `SELECT count(*) FROM information_schema.tables
		WHERE table_schema = 'public' AND table_name IN
		('projects', 'api_keys', 'signing_keys', 'hooks', 'hook_attempts', 'usage_periods')`)
	versionRows = queryInt(t, ctx, dbURL, `SELECT count(DISTINCT version_id) FROM goose_db_version WHERE version_id > 0 AND is_applied`)
	return tables, versionRows
}

func TestMigrateFreshDatabase(t *testing.T) {
	t.Parallel()
	dbURL := emptyDB(t)

	applied, err := postgres.Migrate(t.Context(), dbURL)
	require.NoError(t, err)
	want := allVersions(t)
	require.Equal(t, want, applied)
	tables, rows := schemaCount(t, dbURL)
	require.Equal(t, 6, tables)
	require.Equal(t, len(want), rows)

	again, err := postgres.Migrate(t.Context(), dbURL)
	require.NoError(t, err)
	require.Empty(t, again, "nothing is pending the second time")
	tables, rows = schemaCount(t, dbURL)
	require.Equal(t, 6, tables)
	require.Equal(t, len(want), rows)
}

func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	dbURL := emptyDB(t)

	const n = 2
	start := make(chan struct{})
	results := make([][]int64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			results[i], errs[i] = postgres.Migrate(t.Context(), dbURL)
		})
	}
	close(start)
	wg.Wait()

	var all []int64
	for i := range n {
		require.NoError(t, errs[i], "migrator %d", i)
		all = append(all, results[i]...)
	}
	want := allVersions(t)
	slices.Sort(all)
	require.Equal(t, want, all, "each migration is applied exactly once, by one of them")
	tables, rows := schemaCount(t, dbURL)
	require.Equal(t, 6, tables)
	require.Equal(t, len(want), rows)
}

func TestMigrateBadURL(t *testing.T) {
	t.Parallel()
	_, err := postgres.Migrate(t.Context(), "postgres://%zz")
	require.Error(t, err)
}

func TestConnect(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDB(t)

	pool, err := postgres.Connect(t.Context(), dbURL, 3)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.Equal(t, int32(3), pool.Config().MaxConns)
	require.NoError(t, pool.Ping(t.Context()))
}

func TestConnectFailsWhenNothingListens(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	_, err := postgres.Connect(ctx, "postgres://postgres@127.0.0.1:1/x?sslmode=disable&connect_timeout=5", 1)
	require.Error(t, err)
	_, err = postgres.Connect(ctx, "not a url", 1)
	require.Error(t, err)
}

func TestTranslateNoRows(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewPool(t)
	var id string
	queryErr := pool.QueryRow(t.Context(), "SELECT id::text FROM projects WHERE id = gen_random_uuid()").Scan(&id)

	err := postgres.Translate(queryErr)
	require.ErrorIs(t, err, postgres.ErrNotFound)
	require.ErrorIs(t, err, pgx.ErrNoRows, "the original still matches")
	require.NotErrorIs(t, err, postgres.ErrConflict)

	wrapped := postgres.Translate(fmt.Errorf("get hook: %w", pgx.ErrNoRows))
	require.ErrorIs(t, wrapped, postgres.ErrNotFound)
}

func TestTranslateUniqueViolation(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewPool(t)
	const insert = "INSERT INTO projects (id, name, domain, async_secret_sealed) VALUES ('0190a3c4-6f1e-7c2b-9d3e-1a2b3c4d5e6f', 'p', 'example.com', 'v1:test:unopened')"
	_, err := pool.Exec(t.Context(), insert)
	require.NoError(t, err)
	_, dupErr := pool.Exec(t.Context(), insert)
	require.Error(t, dupErr)

	err = postgres.Translate(dupErr)
	require.ErrorIs(t, err, postgres.ErrConflict)
	require.NotErrorIs(t, err, postgres.ErrNotFound)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr, "the driver error is still reachable")
	require.Equal(t, "23505", pgErr.Code)
	require.Contains(t, err.Error(), "projects_pkey", "the message names the constraint")
}

func TestTranslatePassesOtherErrorsThrough(t *testing.T) {
	t.Parallel()
	require.NoError(t, postgres.Translate(nil))

	plain := errors.New("connection reset")
	require.Same(t, plain, postgres.Translate(plain))

	pool, _ := pgtest.NewPool(t)
	_, checkErr := pool.Exec(t.Context(), "INSERT INTO projects (id, name, domain, async_secret_sealed) VALUES (gen_random_uuid(), '', 'example.com', 'v1:test:unopened')")
	require.Error(t, checkErr)
	err := postgres.Translate(checkErr)
	require.Equal(t, checkErr, err, "a check violation is neither not-found nor conflict")
	require.NotErrorIs(t, err, postgres.ErrConflict)
	require.NotErrorIs(t, err, postgres.ErrNotFound)
}

func TestConnectSendsAndReadsUUIDs(t *testing.T) {
	t.Parallel()
	pool, err := postgres.Connect(t.Context(), pgtest.NewDB(t), 2)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	ctx := t.Context()
	a, b := uuid.New(), uuid.New()

	var text string
	var back uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, "SELECT $1::uuid::text, $1::uuid", a).Scan(&text, &back))
	require.Equal(t, a.String(), text)
	require.Equal(t, a, back)

	var ids []uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, "SELECT $1::uuid[]", []uuid.UUID{a, b}).Scan(&ids))
	require.Equal(t, []uuid.UUID{a, b}, ids)

	var maybe *uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, "SELECT $1::uuid", (*uuid.UUID)(nil)).Scan(&maybe))
	require.Nil(t, maybe)
	require.NoError(t, pool.QueryRow(ctx, "SELECT $1::uuid", &b).Scan(&maybe))
	require.Equal(t, b, *maybe)

	require.Error(t, pool.QueryRow(ctx, "SELECT NULL::uuid").Scan(&back), "NULL needs a pointer")
}

// A write sent to a server that takes none (a standby, simulated by
// default_transaction_read_only) and a transaction whose connection the
// server closed are "unavailable": the gateway answers them 503 with
// Retry-After, as during a failover (docs/operations.md).
func TestUnavailableOnARealServer(t *testing.T) {
	t.Parallel()
	t.Run("read-only", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		u, err := url.Parse(emptyDB(t))
		require.NoError(t, err)
		q := u.Query()
		q.Set("default_transaction_read_only", "on")
		u.RawQuery = q.Encode()

		_, err = postgres.Migrate(ctx, u.String())

		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr)
		require.Equal(t, "25006", pgErr.Code)
		require.True(t, postgres.Unavailable(err), "%v", err)
	})
	t.Run("terminated under a transaction", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		conn, err := pgx.Connect(ctx, pgtest.NewDB(t))
		require.NoError(t, err)
		defer conn.Close(context.Background())
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		exec(t, ctx, pgtest.ServerURL(), "SELECT pg_terminate_backend($1)", conn.PgConn().PID())

		_, err = tx.Exec(ctx, "SELECT 1")
		require.True(t, postgres.Unavailable(err), "the statement after the server closed the session: %v", err)
		err = tx.Commit(ctx)
		require.ErrorIs(t, err, pgconn.ErrConnClosed)
		require.True(t, postgres.Unavailable(err), "the commit after: %v", err)
	})
}

// TestAwaitSchemaWaitsForTheMigrations: a service started on a database
// without its migrations waits for them (a `gateway migrate` beside it)
// and goes on once they are applied; given up on, it names the cause.
func TestAwaitSchemaWaitsForTheMigrations(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	log := slog.New(slog.DiscardHandler)

	current := pgtest.NewDB(t)
	pool, err := postgres.Connect(ctx, current, 2)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, postgres.AwaitSchema(ctx, pool, 0, log), "a migrated database")

	dbURL := emptyDB(t)
	pool, err = postgres.Connect(ctx, dbURL, 2)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.Error(t, postgres.AwaitSchema(ctx, pool, 0, log), "no migration applied")

	done := make(chan error, 1)
	go func() { done <- postgres.AwaitSchema(ctx, pool, time.Minute, log) }()
	_, err = postgres.Migrate(ctx, dbURL)
	require.NoError(t, err)
	require.NoError(t, <-done, "the wait ends once the migrations are applied")

	exec(t, ctx, dbURL, "DELETE FROM goose_db_version WHERE version_id = (SELECT max(version_id) FROM goose_db_version)")
	err = postgres.AwaitSchema(ctx, pool, 0, log)
	require.ErrorIs(t, err, postgres.ErrSchemaBehind)
	require.ErrorContains(t, err, "gateway migrate")
}
