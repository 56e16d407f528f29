package cli

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// toolModules are the modules the tool's build may take besides the
// standard library: its own, the SDK (and its WebSocket client), cobra
// (and pflag, and mousetrap on Windows), and the TOML decoder of
// sundial.toml.
var toolModules = []string{
	"github.com/sundial-run/sundial/cmd/sundial",
	"github.com/sundial-run/sundial/sdk",
	"github.com/coder/websocket",
	"github.com/spf13/cobra",
	"github.com/spf13/pflag",
	"github.com/inconshreveable/mousetrap",
	"github.com/BurntSushi/toml",
}

// TestToolBuildsNoServiceCode: the sundial binary (its tests aside)
// imports nothing of the services, pkg or the test kit: it stays a small
// download that talks to the API like any client.
func TestToolBuildsNoServiceCode(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./...")
	cmd.Dir = filepath.Join("..", "..", "cmd", "sundial")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	pkgs := strings.Fields(string(out))
	require.NotEmpty(t, pkgs)
	for _, p := range pkgs {
		require.True(t, fromToolModule(p), "the tool imports %s", p)
	}
}

func fromToolModule(pkg string) bool {
	for _, m := range toolModules {
		if pkg == m || strings.HasPrefix(pkg, m+"/") {
			return true
		}
	}
	return false
}
