package pgserver

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A base backup restored with the WAL archive holds what was committed
// during and after the copy, up to the last segment archived, and the
// restored server ends its recovery by itself and takes writes.
func TestBackupRestoredUpToTheArchive(t *testing.T) {
	t.Parallel()
	b := setup(t)
	root := filepath.Dir(b.dir)
	opts := b.opts
	opts.ArchiveDir = filepath.Join(root, "wal")
	primary := b.ensure(t, opts)
	_, err := EnsureDatabase(b.ctx, primary.URL, "before")
	require.NoError(t, err)

	require.NoError(t, primary.BaseBackup(b.ctx, filepath.Join(root, "backup")))
	require.FileExists(t, filepath.Join(root, "backup", "base.tar.gz"))
	// Committed after the backup ended: only the archive has it.
	_, err = EnsureDatabase(b.ctx, primary.URL, "after")
	require.NoError(t, err)
	segment, err := primary.ArchiveWAL(b.ctx)
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(opts.ArchiveDir, segment))
	require.NoError(t, primary.Stop(b.ctx))

	restored, err := RestoreBackup(b.ctx, filepath.Join(root, "backup"), opts.ArchiveDir, Options{DataDir: filepath.Join(root, "restored")})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, restored.Stop(context.Background())) })
	require.NotEqual(t, primary.Addr(), restored.Addr())
	for _, name := range []string{"before", "after"} {
		dbURL, err := WithDatabase(restored.URL, name)
		require.NoError(t, err)
		require.NoError(t, Ping(b.ctx, dbURL), "database %s must be restored", name)
	}
	_, err = EnsureDatabase(b.ctx, restored.URL, "restored")
	require.NoError(t, err, "the restored server must take writes")
}

func TestBackupNeedsAClusterOfOurs(t *testing.T) {
	t.Parallel()
	srv := &Server{URL: DefaultLocalURL, Source: Local}

	require.ErrorContains(t, srv.BaseBackup(context.Background(), t.TempDir()), "only a cluster")
	_, err := srv.ArchiveWAL(context.Background())
	require.ErrorContains(t, err, "only a cluster")
	_, err = archiveDir("/tmp/a folder")
	require.ErrorContains(t, err, "only letters")
}
