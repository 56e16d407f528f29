package postgres_test

import (
	"io/fs"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/migrations"
	"github.com/sundial-run/sundial/pkg/postgres"
)

// migrationsUpTo is the migrations up to version last.
func migrationsUpTo(t *testing.T, last int64) fs.FS {
	t.Helper()
	out := fstest.MapFS{}
	entries, err := fs.ReadDir(migrations.FS, ".")
	require.NoError(t, err)
	for _, e := range entries {
		prefix, _, _ := strings.Cut(e.Name(), "_")
		v, err := strconv.ParseInt(prefix, 10, 64)
		if err != nil || v > last || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		raw, err := fs.ReadFile(migrations.FS, e.Name())
		require.NoError(t, err)
		out[e.Name()] = &fstest.MapFile{Data: raw}
	}
	return out
}

// figureRow is a row of delivery_minutes after migration 00019.
type figureRow struct {
	Step, Shard              int
	Minute                   time.Time
	Succeeded, Failed, Async int
	Buckets                  []int64
}

// migratedUpTo is a new empty database with the migrations up to version
// applied, for a test to put rows in before the next ones run.
func migratedUpTo(t *testing.T, version int64) string {
	t.Helper()
	dbURL := emptyDB(t)
	cfg, err := pgx.ParseConfig(dbURL)
	require.NoError(t, err)
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrationsUpTo(t, version))
	require.NoError(t, err)
	_, err = provider.Up(t.Context())
	require.NoError(t, err)
	return dbURL
}

// TestMigrationSumsStoredFiguresIntoSteps: migration 00019 adds, for the
// minutes already counted, their 5-minute and hour rows, shard by shard,
// the histograms added element by element, and keeps the minute rows.
func TestMigrationSumsStoredFiguresIntoSteps(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dbURL := migratedUpTo(t, 18)

	project := uuid.New()
	// Its async secret sealed (a placeholder), not in the plaintext
	// column: migration 00027 refuses plain text.
	exec(t, ctx, dbURL, `INSERT INTO projects (id, name, domain, async_secret, async_secret_sealed)
		VALUES ($1, 'p', 'example.com', NULL, 'v1:test:unopened')`, project)
	hour := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for _, r := range []figureRow{
		{Shard: 0, Minute: hour.Add(time.Minute), Succeeded: 1, Buckets: []int64{1, 2}},
		{Shard: 0, Minute: hour.Add(3 * time.Minute), Succeeded: 2, Buckets: []int64{0, 1, 5}},
		{Shard: 0, Minute: hour.Add(7 * time.Minute), Failed: 1, Buckets: []int64{}},
		{Shard: 2, Minute: hour.Add(3 * time.Minute), Async: 1, Buckets: []int64{3}},
	} {
		exec(t, ctx, dbURL, `INSERT INTO delivery_minutes (project_id, minute, shard, succeeded, failed, async, lateness_buckets)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, project, r.Minute, r.Shard, r.Succeeded, r.Failed, r.Async, r.Buckets)
	}
	applied, err := postgres.Migrate(ctx, dbURL)
	require.NoError(t, err)
	require.Contains(t, applied, int64(19))

	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT step_seconds, shard, minute, succeeded, failed, async, lateness_buckets
		FROM delivery_minutes WHERE step_seconds > 60 ORDER BY step_seconds, minute, shard`)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (figureRow, error) {
		var f figureRow
		err := r.Scan(&f.Step, &f.Shard, &f.Minute, &f.Succeeded, &f.Failed, &f.Async, &f.Buckets)
		f.Minute = f.Minute.UTC()
		return f, err
	})
	require.NoError(t, err)
	require.Equal(t, []figureRow{
		{Step: 300, Shard: 0, Minute: hour, Succeeded: 3, Buckets: []int64{1, 3, 5}},
		{Step: 300, Shard: 2, Minute: hour, Async: 1, Buckets: []int64{3}},
		{Step: 300, Shard: 0, Minute: hour.Add(5 * time.Minute), Failed: 1, Buckets: []int64{}},
		{Step: 3600, Shard: 0, Minute: hour, Succeeded: 3, Failed: 1, Buckets: []int64{1, 3, 5}},
		{Step: 3600, Shard: 2, Minute: hour, Async: 1, Buckets: []int64{3}},
	}, got)
	require.Equal(t, 4, queryInt(t, ctx, dbURL, `SELECT count(*) FROM delivery_minutes WHERE step_seconds = 60`))
}

// TestMigrationRefusesSecretsStillInPlainText: migration 00027 drops the
// plaintext columns of the secrets at rest. A value still in one (never
// sealed by a gateway's start-up) would be lost, so it refuses, and the
// column is still there; once sealed, it migrates.
func TestMigrationRefusesSecretsStillInPlainText(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dbURL := migratedUpTo(t, 26)

	// The async secret in plain text, from the column's default.
	project := uuid.New()
	exec(t, ctx, dbURL, `INSERT INTO projects (id, name, domain) VALUES ($1, 'p', 'example.com')`, project)
	_, err := postgres.Migrate(ctx, dbURL)
	require.ErrorContains(t, err, "secrets still stored in plain text")
	require.Equal(t, 1, queryInt(t, ctx, dbURL, `SELECT count(*) FROM projects WHERE async_secret IS NOT NULL`))

	exec(t, ctx, dbURL, `UPDATE projects SET async_secret = NULL, async_secret_sealed = 'v1:test:unopened' WHERE id = $1`, project)
	applied, err := postgres.Migrate(ctx, dbURL)
	require.NoError(t, err)
	require.Contains(t, applied, int64(27))
	require.Zero(t, queryInt(t, ctx, dbURL, `SELECT count(*) FROM information_schema.columns
		WHERE table_name IN ('projects', 'signing_keys', 'notification_channels')
		  AND column_name IN ('async_secret', 'authorization_header', 'secret', 'config')`))
}
