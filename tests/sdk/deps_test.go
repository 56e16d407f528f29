package sdk

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// websocketModule is the one module the SDK's code may import besides the
// standard library: Listen's WebSocket client, which has no dependencies of
// its own.
const websocketModule = "github.com/coder/websocket"

// TestSDKNeedsOnlyTheStandardLibrary: the SDK's code (its tests aside)
// imports nothing outside the standard library but coder/websocket, and its
// go.mod requires those two and testify (and testify's own), for its
// tests, so that a program that imports it builds no other module.
func TestSDKNeedsOnlyTheStandardLibrary(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "..", "sdk")
	// Without -test: the packages a program that imports the SDK builds.
	out := goCommand(t, dir, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./...")
	// One line per package: the SDK's own or anything else, which is what
	// must not be.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.NotEmpty(t, lines)
	for _, p := range lines {
		require.True(t, strings.HasPrefix(p, "github.com/sundial-run/sundial/sdk") || strings.HasPrefix(p, websocketModule),
			"the SDK imports %s", p)
	}
	var mod struct {
		Require []struct {
			Path     string
			Indirect bool
		}
	}
	require.NoError(t, json.Unmarshal([]byte(goCommand(t, dir, "mod", "edit", "-json")), &mod))
	var direct []string
	for _, r := range mod.Require {
		if !r.Indirect {
			direct = append(direct, r.Path)
		}
	}
	require.ElementsMatch(t, []string{websocketModule, "github.com/stretchr/testify"}, direct,
		"the SDK's go.mod requires a module other than coder/websocket and its tests' testify")
}

// goCommand runs the go command in dir and returns its output.
func goCommand(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go %s: %s", strings.Join(args, " "), stderr.String())
	return string(out)
}
