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

// SchemaWait is how long a service waits at startup for the migrations it
// needs (AwaitSchema) before it gives up: long enough for a migration
// running beside it (another pod's migrate init container) to finish,
// short enough that an orchestrator restarting the service shows the
// cause.
const SchemaWait = 30 * time.Second

// AwaitSchema returns once the database holds every migration this build
// embeds, checking every second: a service started beside the migration
// that its code needs (a rolling upgrade, or a first install where every
// pod starts at once) waits for it rather than failing on a missing
// column. After wait it gives up with ErrSchemaBehind (or what kept the
// version from being read), which names the versions. It reads the
// version without taking the migrations' lock.
func AwaitSchema(ctx context.Context, pool *pgxpool.Pool, wait time.Duration, log *slog.Logger) error {
	db := stdlib.OpenDBFromPool(pool)
	defer func() { _ = db.Close() }()
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	deadline := time.Now().Add(wait)
	warned := false
	for {
		current, target, err := provider.GetVersions(ctx)
		if err == nil && current >= target {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("%w: it is at migration %d, this build needs %d: run `gateway migrate`", ErrSchemaBehind, current, target)
		} else {
			err = fmt.Errorf("read the schema's version: %w", err)
		}
		if time.Now().After(deadline) {
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
