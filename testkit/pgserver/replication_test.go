package pgserver

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// createDatabase is a write that needs no schema.
const createDatabase = "CREATE DATABASE in_place"

// A standby holds what the primary committed; once the primary is killed
// and the standby promoted, it takes writes on its own port (its commits
// wait for no standby of its own).
func TestStandbyTakesOverAfterKill(t *testing.T) {
	t.Parallel()
	b := setup(t)
	opts := b.opts
	opts.Durable, opts.SynchronousStandby = true, true
	primary := b.ensure(t, opts)
	standby, err := primary.StartStandby(b.ctx, filepath.Join(filepath.Dir(b.dir), "standby"), Options{Durable: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, standby.Stop(context.Background())) })
	require.NotEqual(t, primary.Addr(), standby.Addr())

	// CREATE DATABASE commits on the primary and returns only once the
	// synchronous standby has flushed it; replaying it follows.
	_, err = EnsureDatabase(b.ctx, primary.URL, "before")
	require.NoError(t, err)
	onStandby, err := WithDatabase(standby.URL, "before")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return Ping(b.ctx, onStandby) == nil }, 30*time.Second, 20*time.Millisecond,
		"the standby must replay what the primary committed")

	// A session opened on the standby before the promotion: PostgreSQL
	// decides read-only per transaction, so it takes writes afterwards
	// (docs/operations.md relies on it: a pool keeps no read-only session).
	session, err := pgx.Connect(b.ctx, standby.URL)
	require.NoError(t, err)
	defer session.Close(context.Background())
	_, err = session.Exec(b.ctx, createDatabase)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "25006", pgErr.Code, "a standby refuses writes")

	require.NoError(t, primary.Kill())
	require.Error(t, Ping(b.ctx, primary.URL), "the killed primary must refuse connections")
	require.NoError(t, standby.Promote(b.ctx))

	_, err = EnsureDatabase(b.ctx, standby.URL, "after")
	require.NoError(t, err, "the promoted standby must take writes")
	_, err = session.Exec(b.ctx, createDatabase)
	require.NoError(t, err, "a session opened before the promotion must take writes after it")
	require.NoError(t, primary.Stop(b.ctx), "stopping a killed cluster changes nothing")
}

func TestStandbyNeedsAClusterOfOurs(t *testing.T) {
	t.Parallel()
	srv := &Server{URL: DefaultLocalURL, Source: Local}

	_, err := srv.StartStandby(context.Background(), t.TempDir(), Options{})

	require.ErrorContains(t, err, "only a cluster")
	require.ErrorContains(t, srv.Promote(context.Background()), "only a standby")
	require.ErrorContains(t, srv.Kill(), "only a cluster")
}
