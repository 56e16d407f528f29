// Package gcdefault applies a service's garbage-collector defaults where
// the operator set none: a service that allocates a lot per unit of work
// collects less often than Go's default (GOGC=100), and a soft memory limit
// keeps its heap under its container's limit, so that the collector works
// harder as the heap nears the limit instead of the kernel killing the
// process. GOGC and GOMEMLIMIT, when set, win.
package gcdefault

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Settings are a service's defaults.
type Settings struct {
	// GOGC is the heap growth, in percent, that starts a collection.
	GOGC int
	// MemoryLimitMiB is the soft limit: the collector runs more often as
	// the heap nears it, whatever GOGC allows. In a container with a
	// memory limit (a cgroup's), the soft limit is at most containerShare
	// of it; with 0 it is that share, or none outside a container.
	MemoryLimitMiB int64
}

// containerShare is the part of a container's memory limit the heap may
// take: the rest is the runtime's own memory (stacks, the collector's
// work) and what the kernel counts besides the heap, which the gateway's
// largest requests make a tenth of the limit or more
// (tests/exhaustion).
const containerShare = 0.8

// Apply sets s where the environment has no GOGC or GOMEMLIMIT.
func Apply(s Settings) {
	apply(s, os.Getenv, containerLimit(os.ReadFile))
}

// apply returns what it set; container is the cgroup's memory limit in
// bytes, 0 for none.
func apply(s Settings, getenv func(string) string, container int64) (applied Settings) {
	if getenv("GOGC") == "" && s.GOGC > 0 {
		debug.SetGCPercent(s.GOGC)
		applied.GOGC = s.GOGC
	}
	soft := s.MemoryLimitMiB << 20
	if share := int64(float64(container) * containerShare); container > 0 && (soft == 0 || share < soft) {
		soft = share
	}
	if getenv("GOMEMLIMIT") == "" && soft > 0 {
		debug.SetMemoryLimit(soft)
		applied.MemoryLimitMiB = soft >> 20
	}
	return applied
}

// cgroup files that hold a memory limit: v2's, then v1's.
var limitFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// noLimit: cgroup v1 reports "no limit" as a number near the largest int64
// (rounded to the page size); anything above is no limit.
const noLimit = 1 << 60

// containerLimit is the memory limit of the process's cgroup, 0 when it
// has none or none can be read.
func containerLimit(read func(string) ([]byte, error)) int64 {
	for _, name := range limitFiles {
		raw, err := read(name)
		if err != nil {
			continue
		}
		v := strings.TrimSpace(string(raw))
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || n >= noLimit {
			return 0 // "max", or unreadable
		}
		return n
	}
	return 0
}
