// Package gcdefault applies a service's garbage-collector defaults where
// the operator set none: a service that allocates a lot per unit of work
// collects less often than Go's default (GOGC=100), and a soft memory limit
// keeps its heap under the container limit that docs/operations.md gives.
// GOGC and GOMEMLIMIT, when set, win.
package gcdefault

import (
	"os"
	"runtime/debug"
)

// Settings are a service's defaults.
type Settings struct {
	// GOGC is the heap growth, in percent, that starts a collection.
	GOGC int
	// MemoryLimitMiB is the soft limit: the collector runs more often as
	// the heap nears it, whatever GOGC allows.
	MemoryLimitMiB int64
}

// Apply sets s where the environment has no GOGC or GOMEMLIMIT. A zero
// field leaves Go's default.
func Apply(s Settings) {
	apply(s, os.Getenv)
}

// apply returns what it set.
func apply(s Settings, getenv func(string) string) (applied Settings) {
	if getenv("GOGC") == "" && s.GOGC > 0 {
		debug.SetGCPercent(s.GOGC)
		applied.GOGC = s.GOGC
	}
	if getenv("GOMEMLIMIT") == "" && s.MemoryLimitMiB > 0 {
		debug.SetMemoryLimit(s.MemoryLimitMiB << 20)
		applied.MemoryLimitMiB = s.MemoryLimitMiB
	}
	return applied
}
