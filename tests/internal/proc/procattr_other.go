//go:build !linux

package proc

import "syscall"

// procAttr has nothing to add outside Linux: there, a test binary that dies
// may leave its processes running.
func procAttr() *syscall.SysProcAttr { return nil }
