// Package proc runs Sundial's commands as real processes for the suites
// that kill them (tests/crash) or drive them as a user would
// (tests/listen): binaries built once per test run without the race
// detector, started on an environment, killed with SIGKILL, their output
// logged when the test fails.
package proc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/testkit/logtest"
)

// Binaries builds a set of commands once, at the first Path, for every
// test of the run. Tests register with Use before t.Parallel, so that the
// folder outlives every test that may exec from it; the last one to finish
// removes it (a TestMain that exits has no hook for that).
type Binaries struct {
	// Packages are the commands' import paths; each binary is named after
	// the last element of its path.
	Packages []string

	mu    sync.Mutex
	users int
	dir   string
	err   error
}

// Use registers t as a user of the binaries until it ends.
func (b *Binaries) Use(t *testing.T) {
	b.mu.Lock()
	b.users++
	b.mu.Unlock()
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.users--
		if b.users == 0 && b.dir != "" {
			_ = os.RemoveAll(b.dir)
			b.dir, b.err = "", nil
		}
	})
}

// Path returns the path of a command's binary, building all of them at the
// first call (one go build links them in parallel).
func (b *Binaries) Path(t *testing.T, name string) string {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	require.Positive(t, b.users, "call Use before t.Parallel")
	if b.dir == "" && b.err == nil {
		b.dir, b.err = build(b.Packages)
	}
	require.NoError(t, b.err)
	return filepath.Join(b.dir, name)
}

func build(packages []string) (string, error) {
	dir, err := os.MkdirTemp("", "sundial-test-bin-")
	if err != nil {
		return "", err
	}
	args := append([]string{"build", "-o", dir + string(filepath.Separator)}, packages...)
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return dir, nil
}

// Process is a running command.
type Process struct {
	Name   string
	Cmd    *exec.Cmd
	Output *logtest.Buffer
	done   chan struct{}
}

// Start runs path with args on this process's environment plus env (later
// maps win). The process is killed at cleanup if still running, and its
// output logged if the test failed.
func Start(t *testing.T, name, path string, env []map[string]string, args ...string) *Process {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Env = os.Environ()
	for _, m := range env {
		for k, v := range m {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.SysProcAttr = procAttr()
	p := &Process{Name: name, Cmd: cmd, Output: &logtest.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.Output, p.Output
	require.NoError(t, cmd.Start())
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("%s pid %d output:\n%s", name, cmd.Process.Pid, p.Output.Tail(logtest.FailureTail))
		}
	})
	return p
}

// Lines returns the lines of the process's output that contain sub, at
// most max of them (the first ones).
func (p *Process) Lines(sub string, max int) []string {
	var out []string
	for line := range strings.Lines(p.Output.String()) {
		if len(out) == max {
			break
		}
		if strings.Contains(line, sub) {
			out = append(out, strings.TrimSuffix(line, "\n"))
		}
	}
	return out
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitCode is the process's exit code once Done (-1 if killed by a signal).
func (p *Process) ExitCode() int { return p.Cmd.ProcessState.ExitCode() }

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Process) Kill() {
	_ = p.Cmd.Process.Kill()
	<-p.done
}

// Signal sends sig (SIGTERM, say) without waiting.
func (p *Process) Signal(sig os.Signal) error { return p.Cmd.Process.Signal(sig) }
