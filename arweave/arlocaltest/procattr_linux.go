//go:build linux

package arlocaltest

import "syscall"

// procAttr puts arlocal in its own process group (Stop kills the group) and
// asks the kernel to kill it if the test process dies without calling Stop.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
