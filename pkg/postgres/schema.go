package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/sundial-run/sundial/migrations"
)

// ErrSchemaBehind says that the database's schema lacks migrations this
// build was written against: `gateway migrate` has not applied them yet.
var ErrSchemaBehind = errors.New("the database's schema is older than this build")

// DefaultSchemaWait is how long a service waits at startup for the
// migrations it needs (AwaitSchema, SUNDIAL_SCHEMA_WAIT) before it gives
// up: long enough for a migration running beside it (another pod's
// migrate init container) to finish, short enough that an orchestrator
// restarting the service shows the cause.
const DefaultSchemaWait = 30 * time.Second

// MaxSchemaWait bounds SUNDIAL_SCHEMA_WAIT.
const MaxSchemaWait = time.Hour

// CheckSchemaWait says what is wrong with a SUNDIAL_SCHEMA_WAIT value.
func CheckSchemaWait(d time.Duration) error {
	if d < 0 || d > MaxSchemaWait {
		return fmt.Errorf("SUNDIAL_SCHEMA_WAIT=%s: want 0 to %s", d, MaxSchemaWait)
	}
	return nil
}

// AwaitSchema returns once the database holds every migration this build
// embeds, checking every second: a service started beside the migration
// that its code needs (a rolling upgrade, or a first install where every
// pod starts at once) waits for it rather than failing on a missing
// column. After wait it gives up with ErrSchemaBehind (or what kept the
// version from being read), which names the versions. It reads the
// version without taking the migrations' lock.
func AwaitSchema(ctx context.Context, pool *pgxpool.Pool, wait time.Duration, log *slog.Logger) error {
	deadline := time.Now().Add(wait)
	warned := false
	for {
		err := CheckSchema(ctx, pool)
		if err == nil || !time.Now().Before(deadline) {
			return err
		}
		if !warned {
			log.Warn("waiting for the database's migrations", "err", err, "for_at_most", wait)
			warned = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (%w)", err, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// CheckSchema returns nil when the database answers and holds every
// migration this build embeds, else ErrSchemaBehind naming both versions
// (or what kept the version from being read). AwaitSchema runs it at
// startup; the services' readiness on each probe, so that a database
// restored from a backup older than the running build takes the service
// out of rotation with the cause named, instead of statements failing on
// missing columns. It reads the version without taking the migrations'
// lock.
func CheckSchema(ctx context.Context, pool *pgxpool.Pool) error {
	db := stdlib.OpenDBFromPool(pool)
	defer func() { _ = db.Close() }()
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	current, target, err := provider.GetVersions(ctx)
	if err != nil {
		return fmt.Errorf("read the schema's version: %w", err)
	}
	if current < target {
		return fmt.Errorf("%w: it is at migration %d, this build needs %d: run `gateway migrate`", ErrSchemaBehind, current, target)
	}
	return nil
}

// Ready is the database's part of a service's readiness: CheckSchema on
// pool, which also shows that the server answers.
func Ready(pool *pgxpool.Pool) func(context.Context) error {
	return func(ctx context.Context) error { return CheckSchema(ctx, pool) }
}
