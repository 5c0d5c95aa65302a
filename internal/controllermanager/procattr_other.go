//go:build !unix

package controllermanager

import "syscall"

// sysProcAttr has nothing to set.
func sysProcAttr() *syscall.SysProcAttr { return nil }
