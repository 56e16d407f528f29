package testsupport_test

import (
	"bytes"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const repo = "github.com/sundial-run/sundial/"

// isTestSupport says whether a package is test support: the test kit, a
// storetest package, or a service's test-support package (fixture,
// notifiertest, hooklisttest...).
func isTestSupport(importPath string) bool {
	if !strings.HasPrefix(importPath, repo) {
		return false
	}
	if strings.HasPrefix(importPath, repo+"testkit/") {
		return true
	}
	name := path.Base(importPath)
	return strings.HasSuffix(name, "test") || name == "fixture"
}

// goList runs go list in dir and returns its output's lines.
func goList(t *testing.T, dir string, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list %v in %s: %s", args, dir, stderr.String())
	return strings.Fields(string(out))
}

// TestServicesBuildWithoutTestSupport: no non-test Go file of a service's
// production packages imports test support, directly or through another
// package. Test-support packages may import each other; tests import them.
func TestServicesBuildWithoutTestSupport(t *testing.T) {
	t.Parallel()
	for _, svc := range []string{"gateway", "scheduler", "dispatcher", "notifier"} {
		t.Run(svc, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join("..", "..", "services", svc)
			var production []string
			for _, p := range goList(t, dir, "./...") {
				if !isTestSupport(p) {
					production = append(production, p)
				}
			}
			require.NotEmpty(t, production)
			// One line per package of the production build: the package,
			// then what its non-test files import.
			listing := goList(t, dir, append([]string{"-deps", "-f", "{{.ImportPath}}={{join .Imports \",\"}}"}, production...)...)
			var offenders []string
			for _, line := range listing {
				pkg, imports, _ := strings.Cut(line, "=")
				if isTestSupport(pkg) {
					continue
				}
				for imp := range strings.SplitSeq(imports, ",") {
					if isTestSupport(imp) {
						offenders = append(offenders, pkg+" imports "+imp)
					}
				}
			}
			require.Empty(t, offenders, "production code of the %s imports test support", svc)
		})
	}
}
