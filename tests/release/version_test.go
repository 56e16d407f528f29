// Package release checks that the version has one source: VERSION at the
// repository's root, which make build stamps into every binary, which the
// SDK reports, which CHANGELOG.md has a section for, and which the Helm
// chart charts/sundial carries as its version and appVersion.
package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	sundial "github.com/sundial-run/sundial/sdk"
)

func TestVersionHasOneSource(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "VERSION"))
	require.NoError(t, err)
	version := strings.TrimSpace(string(raw))
	require.Regexp(t, `^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`, version, "VERSION is a semantic version")

	require.Equal(t, version, sundial.Version, "sdk.Version (sdk/client.go) is VERSION")

	changelog, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	require.NoError(t, err)
	require.Contains(t, string(changelog), "\n## ["+version+"]", "CHANGELOG.md has a section for VERSION")

	raw, err = os.ReadFile(filepath.Join(root, "charts", "sundial", "Chart.yaml"))
	require.NoError(t, err)
	var chart struct {
		Version    string `yaml:"version"`
		AppVersion string `yaml:"appVersion"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &chart))
	require.Equal(t, version, chart.Version, "charts/sundial/Chart.yaml's version is VERSION")
	require.Equal(t, version, chart.AppVersion, "charts/sundial/Chart.yaml's appVersion is VERSION")
}

// TestBuildStampsTheVersion builds the sundial tool and a service as make
// build does and asks each for its version.
func TestBuildStampsTheVersion(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	out, err := exec.Command("make", "-s", "-C", root, "--no-print-directory", "print-version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	version := strings.TrimSpace(string(out))

	dir := t.TempDir()
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-X main.version="+version,
		"-o", filepath.Join(dir, "sundial"), "./cmd/sundial")
	build.Dir = root
	out, err = build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command(filepath.Join(dir, "sundial"), "version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "sundial "+version)
}

// repoRoot is the repository's root, above this module.
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	return filepath.Join(wd, "..", "..")
}
