//go:build !unix

package connlimit

// Cap is want: this system has no RLIMIT_NOFILE to fit under.
func Cap(want int) (int, uint64) {
	return want, 0
}
