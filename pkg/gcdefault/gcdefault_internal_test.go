package gcdefault

import (
	"errors"
	"io/fs"
	"math"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// Not parallel: the collector's settings are the process's.
func TestApplySetsWhatTheEnvironmentLeavesUnset(t *testing.T) {
	t.Cleanup(func() {
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
	})
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }

	applied := apply(Settings{GOGC: 250, MemoryLimitMiB: 90}, getenv, 0)
	require.Equal(t, Settings{GOGC: 250, MemoryLimitMiB: 90}, applied)
	require.Equal(t, 250, debug.SetGCPercent(250), "GOGC in effect")
	require.Equal(t, int64(90<<20), debug.SetMemoryLimit(-1))

	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)
	env["GOGC"] = "50"
	env["GOMEMLIMIT"] = "1GiB"
	applied = apply(Settings{GOGC: 250, MemoryLimitMiB: 90}, getenv, 64<<20)
	require.Equal(t, Settings{}, applied, "the operator's settings win")
	require.Equal(t, 100, debug.SetGCPercent(100))
	require.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1))
}

// Not parallel: the collector's settings are the process's.
func TestTheSoftLimitFitsTheContainer(t *testing.T) {
	t.Cleanup(func() { debug.SetMemoryLimit(math.MaxInt64) })
	none := func(string) string { return "" }

	require.Equal(t, int64(204), apply(Settings{}, none, 256<<20).MemoryLimitMiB, "80 % of the container's limit")
	require.Equal(t, int64(51), apply(Settings{MemoryLimitMiB: 80}, none, 64<<20).MemoryLimitMiB,
		"a default over the container's limit yields to it")
	require.Equal(t, int64(80), apply(Settings{MemoryLimitMiB: 80}, none, 1<<30).MemoryLimitMiB,
		"a default under it stands")
	debug.SetMemoryLimit(math.MaxInt64)
	require.Equal(t, Settings{}, apply(Settings{}, none, 0), "outside a container, no limit")
	require.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1))
}

func TestContainerLimitReadsTheCgroup(t *testing.T) {
	t.Parallel()
	files := func(m map[string]string) func(string) ([]byte, error) {
		return func(name string) ([]byte, error) {
			if v, ok := m[name]; ok {
				return []byte(v), nil
			}
			return nil, fs.ErrNotExist
		}
	}
	require.Equal(t, int64(268435456), containerLimit(files(map[string]string{"/sys/fs/cgroup/memory.max": "268435456\n"})))
	require.Zero(t, containerLimit(files(map[string]string{"/sys/fs/cgroup/memory.max": "max\n"})))
	require.Equal(t, int64(134217728), containerLimit(files(map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "134217728\n"})))
	require.Zero(t, containerLimit(files(map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"})))
	require.Zero(t, containerLimit(func(string) ([]byte, error) { return nil, errors.New("no cgroup") }))
}
