//go:build unix && !linux

package controllermanager

import "syscall"

// sysProcAttr puts the process in a group of its own.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
