package crash

import "syscall"

// procAttr makes the kernel kill a service process when the test binary
// dies (a timeout's panic, say), so that no orphan keeps running.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
