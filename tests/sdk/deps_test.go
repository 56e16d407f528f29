package sdk

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSDKNeedsOnlyTheStandardLibrary: the SDK's build, its tests included,
// imports nothing outside the standard library, and its go.mod requires
// nothing, so that a program that imports it takes no other dependency.
func TestSDKNeedsOnlyTheStandardLibrary(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "..", "sdk")
	cmd := exec.Command("go", "list", "-test", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	// One line per package: the SDK's own (its test variants included)
	// or anything else, which is what must not be.
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.NotEmpty(t, lines)
	for _, p := range lines {
		require.True(t, strings.HasPrefix(p, "github.com/sundial-run/sundial/sdk"), "the SDK imports %s", p)
	}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	require.NotContains(t, string(mod), "require", "the SDK's go.mod requires a module")
}
