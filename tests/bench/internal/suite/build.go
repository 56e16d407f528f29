package suite

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Binaries are the built programs the suite runs.
type Binaries struct {
	Gateway, Scheduler, Dispatcher, Notifier, NATS string
	// Sundial is the `sundial` command (BuildCLI), when a scenario runs it.
	Sundial string
	// Profiled says the services serve net/http/pprof on BENCH_PPROF_ADDR.
	Profiled bool
}

// services maps each service to its main package, relative to the root.
var services = map[string]string{
	"gateway":    "services/gateway/cmd/gateway",
	"scheduler":  "services/scheduler/cmd/scheduler",
	"dispatcher": "services/dispatcher/cmd/dispatcher",
	"notifier":   "services/notifier/cmd/notifier",
}

// pprofMain is added to each service's main package when profiling: an
// extra file given to `go build -overlay`, so the services' sources stay
// untouched and the binaries of a normal run are exactly make build's.
//
//go:embed pprofmain.go.txt
var pprofMain []byte

// Root is the folder of go.work at or above dir.
func Root(dir string) (string, error) {
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.work in this folder or above it: run the benchmark from the repository")
		}
		dir = parent
	}
}

// Build compiles the four services and benchnats into dir with the
// workspace at root; with profiled, the services also serve pprof.
func Build(ctx context.Context, root, dir string, profiled bool) (Binaries, error) {
	args := []string{"build", "-o", dir + string(os.PathSeparator)}
	if profiled {
		overlay, err := writeOverlay(root, dir)
		if err != nil {
			return Binaries{}, err
		}
		args = append(args, "-overlay", overlay)
	}
	for _, name := range []string{"gateway", "scheduler", "dispatcher", "notifier"} {
		args = append(args, "./"+services[name])
	}
	args = append(args, "./tests/bench/cmd/benchnats")
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return Binaries{}, fmt.Errorf("go build: %w\n%s", err, out)
	}
	return Binaries{
		Gateway:    filepath.Join(dir, "gateway"),
		Scheduler:  filepath.Join(dir, "scheduler"),
		Dispatcher: filepath.Join(dir, "dispatcher"),
		Notifier:   filepath.Join(dir, "notifier"),
		NATS:       filepath.Join(dir, "benchnats"),
		Profiled:   profiled,
	}, nil
}

// writeOverlay writes the pprof file and the overlay that adds it to each
// service's main package.
func writeOverlay(root, dir string) (string, error) {
	src := filepath.Join(dir, "benchpprof.go")
	if err := os.WriteFile(src, pprofMain, 0o600); err != nil {
		return "", err
	}
	replace := map[string]string{}
	for _, pkg := range services {
		replace[filepath.Join(root, pkg, "zz_benchpprof.go")] = src
	}
	raw, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		return "", err
	}
	overlay := filepath.Join(dir, "overlay.json")
	return overlay, os.WriteFile(overlay, raw, 0o600)
}
