//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package delivery

import (
	"syscall"
	"time"
)

// usable reports whether an idle connection may carry a delivery: idle for
// less than ttl, and nothing arrived on it meanwhile. A receiver closing an
// idle connection sends a FIN (after a TLS close_notify, perhaps): either
// shows as something to read, and a delivery written on that connection
// would fail. net/http's transport noticed at once with a goroutine
// blocked reading each idle connection; one peek of the socket before
// reuse (MSG_PEEK, MSG_DONTWAIT) finds the same without the goroutine.
func (c *conn) usable(now time.Time, ttl time.Duration) bool {
	if now.Sub(c.idleSince) >= ttl {
		return false
	}
	if c.raw == nil {
		return true
	}
	silent := false
	err := c.raw.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), c.peek[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		silent = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true
	})
	return err == nil && silent
}
