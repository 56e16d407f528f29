package gcdefault

import (
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

	applied := apply(Settings{GOGC: 250, MemoryLimitMiB: 90}, getenv)
	require.Equal(t, Settings{GOGC: 250, MemoryLimitMiB: 90}, applied)
	require.Equal(t, 250, debug.SetGCPercent(250), "GOGC in effect")
	require.Equal(t, int64(90<<20), debug.SetMemoryLimit(-1))

	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)
	env["GOGC"] = "50"
	env["GOMEMLIMIT"] = "1GiB"
	applied = apply(Settings{GOGC: 250, MemoryLimitMiB: 90}, getenv)
	require.Equal(t, Settings{}, applied, "the operator's settings win")
	require.Equal(t, 100, debug.SetGCPercent(100))
	require.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1))
}
