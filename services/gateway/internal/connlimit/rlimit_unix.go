//go:build unix

package connlimit

import "syscall"

// fdShare is the share of the process's file descriptor limit that
// connections may take: the rest is for the database pool, NATS, logs and
// the listener itself.
const fdShare = 0.75

// Cap is the most connections to allow: want, but at most three quarters
// of the process's open file limit (RLIMIT_NOFILE, whose soft value Go
// raises to the hard one at start). It also returns the limit it read, 0
// when it could not read one.
func Cap(want int) (int, uint64) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return want, 0
	}
	fit := uint64(float64(rl.Cur) * fdShare)
	if fit < uint64(want) {
		return max(1, int(fit)), rl.Cur
	}
	return want, rl.Cur
}
