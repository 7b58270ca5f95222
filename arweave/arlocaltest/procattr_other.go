//go:build !linux && !windows

package arlocaltest

import "syscall"

// procAttr puts arlocal in its own process group (Stop kills the group).
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
