package pgserver

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// osUser is the unprivileged account that runs initdb, pg_ctl and postgres
// when we are root: all three refuse to run as root.
type osUser struct {
	name     string
	uid, gid uint32
}

// serviceUser returns nil when we are not root, else the postgres account,
// else a dedicated sundial account (created when missing).
func serviceUser(ctx context.Context, log *slog.Logger) (*osUser, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "sundial"} {
		if u, err := lookupUser(name); err == nil {
			return u, nil
		}
	}
	log.Info("postgres: creating system user sundial to run the cluster (PostgreSQL refuses to run as root)")
	out, err := exec.CommandContext(ctx, "useradd", "--system", "--no-create-home",
		"--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", "sundial").CombinedOutput()
	// Another process may have created it at the same moment: look again.
	if u, lerr := lookupUser("sundial"); lerr == nil {
		return u, nil
	}
	return nil, fmt.Errorf("running as root, and neither user postgres nor sundial exists; useradd sundial: %v: %s",
		err, strings.TrimSpace(string(out)))
}

func lookupUser(name string) (*osUser, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, err
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %s: uid %q: %w", name, u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %s: gid %q: %w", name, u.Gid, err)
	}
	return &osUser{name: name, uid: uint32(uid), gid: uint32(gid)}, nil
}

// credential makes a command run as u.
func (u *osUser) credential() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.uid, Gid: u.gid}}
}

// chownTree gives dir and everything in it to u.
func (u *osUser) chownTree(dir string) error {
	return filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, int(u.uid), int(u.gid))
	})
}

// reach makes sure u can walk down to dir. Folders that a temporary folder
// holds (os.MkdirTemp makes them 0700, t.TempDir among them) get search
// permission for others; elsewhere we refuse to loosen permissions behind
// the person's back and say what to do instead.
func (u *osUser) reach(dir string, log *slog.Logger) error {
	tmp, err := filepath.Abs(os.TempDir())
	if err != nil {
		return err
	}
	if real, err := filepath.EvalSymlinks(tmp); err == nil {
		tmp = real
	}
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		if err := u.reachOne(p, tmp, log); err != nil {
			return err
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

func (u *osUser) reachOne(p, tmp string, log *slog.Logger) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if u.canSearch(fi) {
		return nil
	}
	if !strings.HasPrefix(p, tmp+string(filepath.Separator)) {
		return fmt.Errorf("user %s, which runs PostgreSQL, cannot reach the data folder through %s: "+
			"run `chmod o+x %s`, choose a data folder elsewhere, or set SUNDIAL_DATABASE_URL", u.name, p, p)
	}
	log.Info("postgres: letting the cluster's user through a temporary folder", "folder", p, "user", u.name)
	return os.Chmod(p, fi.Mode().Perm()|0o001)
}

func (u *osUser) canSearch(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	perm := fi.Mode().Perm()
	switch {
	case st.Uid == u.uid:
		return perm&0o100 != 0
	case st.Gid == u.gid:
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}
