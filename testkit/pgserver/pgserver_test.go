package pgserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/envconf"
)

type bundle struct {
	ctx  context.Context
	dir  string
	opts Options
}

// setup gives a test a data folder and options that force a cluster there.
func setup(t *testing.T) bundle {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	dir := filepath.Join(t.TempDir(), "pg")
	return bundle{ctx: ctx, dir: dir, opts: Options{ForceCluster: true, DataDir: dir}}
}

// ensure starts a server and stops it when the test ends.
func (b bundle) ensure(t *testing.T, opts Options) *Server {
	t.Helper()
	srv, err := Ensure(b.ctx, opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Stop(context.Background())) })
	return srv
}

func closedPortURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
}

func TestForcedClusterStartsAndStops(t *testing.T) {
	t.Parallel()
	b := setup(t)

	srv, err := Ensure(b.ctx, b.opts)
	require.NoError(t, err)

	require.Equal(t, Cluster, srv.Source)
	require.NotEqual(t, DefaultLocalURL, srv.URL, "a forced cluster must not be the machine's server")
	require.NoError(t, Ping(b.ctx, srv.URL))
	require.FileExists(t, filepath.Join(b.dir, "postmaster.pid"))

	require.NoError(t, srv.Stop(b.ctx))
	require.Error(t, Ping(b.ctx, srv.URL), "the server must be gone after Stop")
	require.NoFileExists(t, filepath.Join(b.dir, "postmaster.pid"))
	require.NoError(t, srv.Stop(b.ctx), "a second Stop changes nothing")
}

func TestKeptClusterKeepsItsData(t *testing.T) {
	t.Parallel()
	b := setup(t)

	first, err := Ensure(b.ctx, b.opts)
	require.NoError(t, err)
	_, err = EnsureDatabase(b.ctx, first.URL, "kept")
	require.NoError(t, err)
	require.NoError(t, first.Stop(b.ctx))

	second := b.ensure(t, b.opts)
	keptURL, err := WithDatabase(second.URL, "kept")
	require.NoError(t, err)
	require.NoError(t, Ping(b.ctx, keptURL), "a database made in the first run must still be there")
}

func TestRunningClusterIsAdopted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.ensure(t, b.opts)

	second := b.ensure(t, b.opts)

	require.Equal(t, first.URL, second.URL)
	require.NoError(t, second.Stop(b.ctx))
	require.Error(t, Ping(b.ctx, first.URL))
}

func TestEnvironmentComesFirst(t *testing.T) {
	t.Parallel()
	const want = "postgres://someone@db.example:5432/sundial"
	opts := Options{
		EnvVars:  []string{"SUNDIAL_TEST_DATABASE_URL", "SUNDIAL_DATABASE_URL"},
		Lookup:   envconf.Map(map[string]string{"SUNDIAL_TEST_DATABASE_URL": "  ", "SUNDIAL_DATABASE_URL": want}),
		LocalURL: closedPortURL(t),
	}

	srv, err := Ensure(context.Background(), opts)

	require.NoError(t, err)
	require.Equal(t, want, srv.URL)
	require.Equal(t, FromEnv, srv.Source)
	require.Equal(t, "SUNDIAL_DATABASE_URL", srv.EnvVar)
	require.NoError(t, srv.Stop(context.Background()))
}

func TestAnsweringLocalServerIsUsed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	running := b.ensure(t, b.opts)

	srv, err := Ensure(b.ctx, Options{
		EnvVars:  []string{"SUNDIAL_DATABASE_URL"},
		Lookup:   envconf.Map(nil),
		LocalURL: running.URL,
		DataDir:  filepath.Join(t.TempDir(), "unused"),
	})

	require.NoError(t, err)
	require.Equal(t, Local, srv.Source)
	require.Equal(t, running.URL, srv.URL)
	require.NoError(t, srv.Stop(b.ctx))
	require.NoError(t, Ping(b.ctx, running.URL), "Stop must not touch a server it did not start")
}

func TestSilentLocalServerFallsBackToCluster(t *testing.T) {
	t.Parallel()
	b := setup(t)

	srv := b.ensure(t, Options{Lookup: envconf.Map(nil), LocalURL: closedPortURL(t), DataDir: b.dir})

	require.Equal(t, Cluster, srv.Source)
	require.NoError(t, Ping(b.ctx, srv.URL))
}

func TestEnsureDatabaseCreatesOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := b.ensure(t, b.opts)

	first, err := EnsureDatabase(b.ctx, srv.URL, "sundial")
	require.NoError(t, err)
	second, err := EnsureDatabase(b.ctx, srv.URL, "sundial")
	require.NoError(t, err)

	require.Equal(t, first, second)
	require.NoError(t, Ping(b.ctx, first))
}

// fakeInstall makes root/<version>/bin with initdb and a pg_ctl that
// answers --version like the real one.
func fakeInstall(t *testing.T, root, version string) string {
	t.Helper()
	bin := filepath.Join(root, version, "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "initdb"), []byte("#!/bin/sh\nexit 1\n"), 0o755))
	script := fmt.Sprintf("#!/bin/sh\necho 'pg_ctl (PostgreSQL) %s.3 (Debian)'\n", version)
	require.NoError(t, os.WriteFile(filepath.Join(bin, "pg_ctl"), []byte(script), 0o755))
	return bin
}

func TestBinariesSearchOrder(t *testing.T) {
	t.Parallel()
	lib := t.TempDir()
	for _, v := range []string{"9.6", "13", "16"} {
		fakeInstall(t, lib, v)
	}
	onPath := t.TempDir()
	require.NoError(t, os.Symlink(filepath.Join(lib, "13", "bin", "initdb"), filepath.Join(onPath, "initdb")))
	ctx := context.Background()

	tests := []struct {
		name, path, want, wantDir, wantMajor string
	}{
		{name: "PATH first, through symlinks", path: onPath, wantDir: filepath.Join(lib, "13", "bin"), wantMajor: "13"},
		{name: "newest installed version", path: t.TempDir(), wantDir: filepath.Join(lib, "16", "bin"), wantMajor: "16"},
		{name: "version of an existing cluster", path: onPath, want: "9.6", wantDir: filepath.Join(lib, "9.6", "bin"), wantMajor: "9.6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := findBinaries(ctx, tt.path, lib, tt.want)
			require.NoError(t, err)
			require.Equal(t, binaries{dir: tt.wantDir, major: tt.wantMajor}, got)
		})
	}
}

func TestMissingBinariesSayWhatToInstall(t *testing.T) {
	t.Parallel()
	lib := t.TempDir()
	fakeInstall(t, lib, "16")

	_, err := findBinaries(context.Background(), t.TempDir(), t.TempDir(), "")
	require.ErrorContains(t, err, InstallHint)

	_, err = findBinaries(context.Background(), t.TempDir(), lib, "12")
	require.ErrorContains(t, err, "apt-get install postgresql-12")

	_, err = Ensure(context.Background(), Options{ForceCluster: true, DataDir: t.TempDir(), searchPath: t.TempDir(), libRoot: t.TempDir()})
	require.ErrorContains(t, err, "throwaway cluster")
	require.ErrorContains(t, err, InstallHint)
}

func TestRestartKeepsPortAndData(t *testing.T) {
	t.Parallel()
	for _, mode := range []StopMode{Fast, Immediate} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			srv := b.ensure(t, b.opts)
			dbURL, err := EnsureDatabase(b.ctx, srv.URL, "kept")
			require.NoError(t, err)

			var downErr error
			require.NoError(t, srv.Restart(b.ctx, mode, func() { downErr = Ping(b.ctx, dbURL) }))

			require.Error(t, downErr, "the server must be down while whileDown runs")
			require.NoError(t, Ping(b.ctx, dbURL), "the same URL must answer after the restart, with its database")
		})
	}
}

func TestRestartRefusesServersItDidNotStart(t *testing.T) {
	t.Parallel()
	srv := &Server{URL: DefaultLocalURL, Source: Local}

	err := srv.Restart(context.Background(), Fast, nil)

	require.ErrorContains(t, err, "only a cluster")
}
