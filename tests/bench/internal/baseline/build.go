package baseline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Build compiles cmd/riverbase into outDir with the workspace the current
// folder is in, and returns the binary's path.
func Build(ctx context.Context, outDir string) (string, error) {
	root, err := workspaceRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(outDir, "riverbase")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./tests/bench/cmd/riverbase")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build riverbase: %w\n%s", err, out)
	}
	return bin, nil
}

// workspaceRoot is the folder of go.work at or above the current one.
func workspaceRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.work in this folder or above it: build riverbase from the repository")
		}
		dir = parent
	}
}
