package pgserver

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// binaries is one installation of PostgreSQL's server programs.
type binaries struct {
	dir   string // holds initdb, pg_ctl and postgres
	major string // "16", or "9.6" before version 10: what PG_VERSION holds
}

// candidateDirs lists folders holding both initdb and pg_ctl: those found
// through searchPath first (what the person chose), then the Debian layout
// libRoot/<version>/bin, newest version first.
func candidateDirs(searchPath, libRoot string) []string {
	var dirs []string
	add := func(dir string) {
		if isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "pg_ctl")) && !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	for _, p := range filepath.SplitList(searchPath) {
		if p == "" {
			continue
		}
		initdb := filepath.Join(p, "initdb")
		if !isExecutable(initdb) {
			continue
		}
		// Follow symlinks (/usr/local/bin/initdb -> /usr/lib/postgresql/15/bin)
		// so that pg_ctl and postgres come from the same installation.
		if real, err := filepath.EvalSymlinks(initdb); err == nil {
			add(filepath.Dir(real))
		}
		add(p)
	}
	versions, _ := os.ReadDir(libRoot)
	names := make([]string, 0, len(versions))
	for _, v := range versions {
		names = append(names, v.Name())
	}
	slices.SortFunc(names, func(a, b string) int { return compareVersions(b, a) })
	for _, v := range names {
		add(filepath.Join(libRoot, v, "bin"))
	}
	return dirs
}

// compareVersions orders "9.6" < "13" < "16.2"; names that are not versions
// sort before every version.
func compareVersions(a, b string) int {
	pa, pb := versionParts(a), versionParts(b)
	for i := 0; i < len(pa) && i < len(pb); i++ {
		if c := cmp.Compare(pa[i], pb[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(pa), len(pb))
}

func versionParts(s string) []int {
	var parts []int
	for _, f := range strings.Split(s, ".") {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil
		}
		parts = append(parts, n)
	}
	return parts
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

var versionRE = regexp.MustCompile(`\(PostgreSQL\) (\d+)(?:\.(\d+))?`)

// majorVersion asks pg_ctl for its version; --version works even as root.
func majorVersion(ctx context.Context, dir string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(dir, "pg_ctl"), "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", filepath.Join(dir, "pg_ctl"), err)
	}
	m := versionRE.FindStringSubmatch(string(out))
	if m == nil {
		return "", fmt.Errorf("%s --version: unexpected answer %q", filepath.Join(dir, "pg_ctl"), strings.TrimSpace(string(out)))
	}
	if n, _ := strconv.Atoi(m[1]); n < 10 && m[2] != "" {
		return m[1] + "." + m[2], nil
	}
	return m[1], nil
}

// findBinaries picks the installation to run. want is the major version of
// an existing cluster ("" for a new one): it must match, because PostgreSQL
// cannot open another major version's data folder.
func findBinaries(ctx context.Context, searchPath, libRoot, want string) (binaries, error) {
	dirs := candidateDirs(searchPath, libRoot)
	if len(dirs) == 0 {
		return binaries{}, fmt.Errorf("initdb and pg_ctl were found neither on PATH nor in %s/*/bin: %s", libRoot, InstallHint)
	}
	var seen []string
	for _, dir := range dirs {
		major, err := majorVersion(ctx, dir)
		if err != nil {
			seen = append(seen, err.Error())
			continue
		}
		if want == "" || major == want {
			return binaries{dir: dir, major: major}, nil
		}
		seen = append(seen, fmt.Sprintf("%s is version %s", dir, major))
	}
	if want == "" {
		return binaries{}, fmt.Errorf("no usable PostgreSQL installation (%s): %s", strings.Join(seen, "; "), InstallHint)
	}
	return binaries{}, fmt.Errorf("the data folder holds a PostgreSQL %s cluster, but %s: install PostgreSQL %s (e.g. apt-get install postgresql-%s) or remove the data folder",
		want, strings.Join(seen, "; "), want, want)
}
