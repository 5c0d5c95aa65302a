package controllermanager

import "syscall"

// sysProcAttr puts the process in a group of its own and ends it when the
// thread that started it dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
