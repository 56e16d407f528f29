package hook_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/hook"
)

// plainSeeds are plain paths (letters, digits and "/-._~") of every shape
// the ".." rule cares about.
var plainSeeds = []string{
	"/", "/a", "/a/b", "/a/", "//", "/./", "/..", "/../", "/a/..", "/a/../b", "/..a", "/a..", "/...",
	"/a/.../b", "/.", "/a/.", "/~/_-.", "/webhooks/orders/created", "/A-Z_0.9~", "/../..", "/a//..//b",
}

// TestPlainPathAgrees checks the fast path of the path rule against the
// general one on plain paths: the same problem, or none, for each.
func TestPlainPathAgrees(t *testing.T) {
	t.Parallel()
	for _, path := range plainSeeds {
		require.True(t, hook.PlainPath(path), path)
		require.Equal(t, hook.EncodedProblem(path), hook.PlainProblem(path), "%q", path)
	}
	for _, path := range []string{"/a b", "/a?b", "/%2e%2e", "/a#b", "/a\\..", "/é", "/a:b", "/a@b"} {
		require.False(t, hook.PlainPath(path), "%q is not plain", path)
	}
}

// FuzzPlainPath checks the same on any plain path the fuzzer makes.
func FuzzPlainPath(f *testing.F) {
	for _, s := range plainSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		if !hook.PlainPath(path) {
			return
		}
		require.Equal(t, hook.EncodedProblem(path), hook.PlainProblem(path), "%q", path)
	})
}
