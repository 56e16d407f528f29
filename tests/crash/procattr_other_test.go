//go:build !linux

package crash

import "syscall"

// procAttr has nothing to add outside Linux: there, a test binary that dies
// may leave its service processes running.
func procAttr() *syscall.SysProcAttr { return nil }
