package pgserver

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// plainPath is a path that needs no quoting in a shell command nor in a
// postgresql.conf string: archive_command and restore_command hold it.
var plainPath = regexp.MustCompile(`^[A-Za-z0-9/._+-]+$`)

// archiveDir checks and makes absolute a WAL archive's path; "" stays "".
func archiveDir(dir string) (string, error) {
	if dir == "" {
		return "", nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if !plainPath.MatchString(abs) {
		return "", fmt.Errorf("WAL archive %q: only letters, digits and / . _ + - may name it (it goes into a shell command)", abs)
	}
	return abs, nil
}

// archiveConf is the settings that archive every completed WAL segment to
// dir, as docs/operations.md, "Backups", gives them: a segment already
// archived is never overwritten.
func archiveConf(dir string) string {
	return fmt.Sprintf("archive_mode = on\narchive_command = 'test ! -f %[1]s/%%f && cp %%p %[1]s/%%f'\n", dir)
}

// BaseBackup copies the running cluster into dir with pg_basebackup as
// docs/operations.md, "Backups", runs it: tar format, compressed (base.tar.gz
// and pg_wal.tar.gz), with the WAL written during the copy, after a fast
// checkpoint. The backup is consistent as of its end; the WAL archive
// (Options.ArchiveDir) carries it further.
func (s *Server) BaseBackup(ctx context.Context, dir string) error {
	if s == nil || s.cluster == nil {
		return errors.New("pgserver: only a cluster started by Ensure can be backed up")
	}
	c := s.cluster
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	// pg_basebackup runs as the cluster's user, who must own the folder.
	if err := c.privateDir(ctx, dir); err != nil {
		return fmt.Errorf("backup folder: %w", err)
	}
	c.log.Info("postgres: taking a base backup", "dir", dir, "port", c.port)
	_, err = c.run(ctx, "pg_basebackup", "-D", dir, "-h", "127.0.0.1", "-p", strconv.Itoa(c.port),
		"-U", "postgres", "-Ft", "-z", "-X", "stream", "-c", "fast")
	return err
}

// ArchiveWAL closes the current WAL segment (pg_switch_wal) and waits until
// the archiver has copied it to Options.ArchiveDir: the archive then holds
// every commit made before the call. It returns the segment's name.
func (s *Server) ArchiveWAL(ctx context.Context) (string, error) {
	if s == nil || s.cluster == nil || s.cluster.archiveDir == "" {
		return "", errors.New("pgserver: only a cluster started by Ensure with an ArchiveDir archives WAL")
	}
	conn, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		return "", fmt.Errorf("connect to %s: %w", Redact(s.URL), err)
	}
	defer conn.Close(context.Background())
	var segment string
	// pg_walfile_name names the segment the switch closed, even when the
	// switch ended exactly at a segment's boundary.
	if err := conn.QueryRow(ctx, "SELECT pg_walfile_name(pg_switch_wal())").Scan(&segment); err != nil {
		return "", fmt.Errorf("switch WAL: %w", err)
	}
	err = poll(ctx, time.Minute, func() (bool, error) {
		var last string
		var failed int64
		err := conn.QueryRow(ctx, "SELECT coalesce(last_archived_wal, ''), failed_count FROM pg_stat_archiver").Scan(&last, &failed)
		if err != nil {
			return false, err
		}
		// Segments are archived in order, and their names sort in that
		// order; a history or backup label file's name starts otherwise.
		done := len(last) >= len(segment) && last[:len(segment)] >= segment
		if !done && failed > 0 {
			c := s.cluster
			return false, fmt.Errorf("archive_command failed %d times; last lines of %s:\n%s", failed,
				filepath.Join(c.dataDir, "server.log"), tail(filepath.Join(c.dataDir, "server.log"), 10))
		}
		return done, nil
	})
	if err != nil {
		return "", fmt.Errorf("archive WAL segment %s: %w", segment, err)
	}
	s.cluster.log.Info("postgres: archived the current WAL segment", "segment", segment, "archive", s.cluster.archiveDir)
	return segment, nil
}

// RestoreBackup restores a base backup (BaseBackup's folder) into
// opts.DataDir, as docs/operations.md, "Restore", says: UnpackBackup, unless
// the folder already holds a cluster, then the copy started on a port of
// its own. It returns once recovery has replayed every segment of the WAL
// archive and ended: with no recovery target the server then promotes
// itself, on a new timeline, and takes writes. The copy archives its own
// WAL only if opts.ArchiveDir says where.
func RestoreBackup(ctx context.Context, backupDir, archive string, opts Options) (*Server, error) {
	opts = opts.withDefaults()
	if err := UnpackBackup(ctx, backupDir, archive, opts); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, err
	}
	c := &cluster{dataDir: dir, log: opts.Log}
	if c.archiveDir, err = archiveDir(opts.ArchiveDir); err != nil {
		return nil, err
	}
	if c.bin, err = findBinaries(ctx, opts.searchPath, opts.libRoot, c.existingVersion()); err != nil {
		return nil, err
	}
	err = c.launch(ctx, opts.Durable, func() error { return errors.New("the backup was not unpacked") })
	if err == nil {
		err = c.waitWritable(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("restored cluster in %s: %w\nlast lines of its log:\n%s", dir, err,
			tail(filepath.Join(dir, "server.log"), 20))
	}
	c.log.Info("postgres: restored a base backup", "backup", backupDir, "dir", dir, "port", c.port)
	return &Server{URL: c.url(), Source: Cluster, DataDir: dir, cluster: c}, nil
}

// UnpackBackup is the first half of RestoreBackup, apart so that it can be
// timed apart: it unpacks the backup into the empty opts.DataDir, adds a
// restore_command copying segments back from the WAL archive folder to
// postgresql.auto.conf, and creates recovery.signal. A folder that already
// holds a cluster is left as it is.
func UnpackBackup(ctx context.Context, backupDir, archive string, opts Options) error {
	opts = opts.withDefaults()
	dir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return err
	}
	c := &cluster{dataDir: dir, log: opts.Log}
	if c.existingVersion() != "" {
		return nil
	}
	if err := c.unpackBackup(ctx, backupDir, archive); err != nil {
		return fmt.Errorf("restore %s into %s: %w", backupDir, dir, err)
	}
	return nil
}

// unpackBackup fills the empty data folder with the backup, and sets up
// the recovery that replays the archive on top of it.
func (c *cluster) unpackBackup(ctx context.Context, backupDir, archive string) error {
	archive, err := archiveDir(archive)
	if err != nil {
		return err
	}
	if archive == "" {
		return errors.New("no WAL archive to restore from")
	}
	if err := c.privateDir(ctx, c.dataDir); err != nil {
		return err
	}
	c.log.Info("postgres: unpacking a base backup", "backup", backupDir, "dir", c.dataDir)
	if err := untar(filepath.Join(backupDir, "base.tar.gz"), c.dataDir); err != nil {
		return err
	}
	if err := untar(filepath.Join(backupDir, "pg_wal.tar.gz"), filepath.Join(c.dataDir, "pg_wal")); err != nil {
		return err
	}
	// postgresql.auto.conf, where pg_basebackup -R writes a standby's
	// settings too: it outlives the rewrites of confFile at each start.
	recovery := fmt.Sprintf("\n# Added by Sundial's restore: where the archived WAL comes from.\nrestore_command = 'cp %s/%%f %%p'\n", archive)
	if err := appendFile(filepath.Join(c.dataDir, "postgresql.auto.conf"), recovery); err != nil {
		return err
	}
	// The files are ours until launch gives the folder to the cluster's
	// user.
	return os.WriteFile(filepath.Join(c.dataDir, "recovery.signal"), nil, 0o600)
}

// waitWritable waits until the server has ended recovery: pg_ctl start
// returns as soon as a server in recovery takes read-only sessions.
func (c *cluster) waitWritable(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, c.url())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return poll(ctx, time.Minute, func() (bool, error) {
		var recovering bool
		err := conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovering)
		return err == nil && !recovering, err
	})
}

// poll calls done every few milliseconds until it reports true or an
// error, or within has passed.
func poll(ctx context.Context, within time.Duration, done func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// untar unpacks the gzipped tar file path into dir: the folders, files
// and symbolic links (tablespaces) that pg_basebackup -Ft writes.
func untar(path, dir string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if err := unpackEntry(tr, h, dir); err != nil {
			return fmt.Errorf("%s: %s: %w", path, h.Name, err)
		}
	}
}

func unpackEntry(r io.Reader, h *tar.Header, dir string) error {
	if !filepath.IsLocal(h.Name) {
		return errors.New("names a place outside the folder")
	}
	target := filepath.Join(dir, h.Name)
	switch h.Typeflag {
	case tar.TypeDir:
		return os.MkdirAll(target, 0o700)
	case tar.TypeSymlink:
		return os.Symlink(h.Linkname, target)
	case tar.TypeReg:
		f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, r)
		return errors.Join(err, f.Close())
	default:
		return fmt.Errorf("unexpected entry type %q", h.Typeflag)
	}
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	return errors.Join(err, f.Close())
}
