package proc

import "syscall"

// procAttr makes the kernel kill a started process when the test binary
// dies (a timeout's panic, say), so that no orphan keeps running.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
