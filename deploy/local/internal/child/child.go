// Package child runs a command as a child process on behalf of a wrapper
// (withpg): it passes the wrapper's signals on, makes sure the child ends,
// and turns the way it ended into an exit code the wrapper can return.
package child

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Run starts cmd and waits for it. Every signal received on signals is
// passed on to the child; if the child is still running grace after the
// first one, it is killed. The exit code is the child's, or 128+N when
// signal N ended it (as shells report it), or 127 when it could not start.
func Run(cmd *exec.Cmd, signals <-chan os.Signal, grace time.Duration) (int, error) {
	if err := cmd.Start(); err != nil {
		return 127, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var deadline <-chan time.Time
	for {
		select {
		case err := <-done:
			return exitCode(err)
		case sig := <-signals:
			// The child may have exited already; then Wait reports it next.
			_ = cmd.Process.Signal(sig)
			if deadline == nil {
				deadline = time.After(grace)
			}
		case <-deadline:
			_ = cmd.Process.Kill()
			deadline = nil
		}
	}
}

func exitCode(err error) (int, error) {
	if err == nil {
		return 0, nil
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		return 1, err
	}
	if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return exitErr.ExitCode(), nil
}
