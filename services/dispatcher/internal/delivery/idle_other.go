//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package delivery

import "time"

// usable reports whether an idle connection may carry a delivery: idle for
// less than ttl. Where the socket cannot be peeked at (idle.go), a
// connection the receiver closed fails the delivery written on it.
func (c *conn) usable(now time.Time, ttl time.Duration) bool {
	return now.Sub(c.idleSince) < ttl
}
