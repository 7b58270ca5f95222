package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/unlimitedcontext/ucl"
)

// ownerProcess names the process that owns the store in dir, for the
// message of a refused `ucl serve`: the peer of its socket (SO_PEERCRED),
// else the holder of the log's lock (/proc/locks). "" when unknown (not
// Linux, or the owner is gone).
func ownerProcess(dir string) string {
	if pid := socketPeer(ucl.SocketPath(dir)); pid > 0 {
		return describePID(pid)
	}
	if pid := lockHolder(filepath.Join(dir, "log", "LOCK")); pid > 0 {
		return describePID(pid)
	}
	return ""
}

func socketPeer(path string) int {
	conn, err := net.Dial("unix", path)
	if err != nil {
		return 0
	}
	defer conn.Close()
	raw, err := conn.(*net.UnixConn).SyscallConn()
	if err != nil {
		return 0
	}
	pid := 0
	raw.Control(func(fd uintptr) {
		if cred, err := syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED); err == nil {
			pid = int(cred.Pid)
		}
	})
	return pid
}

// lockHolder finds the pid holding a flock on path in /proc/locks.
func lockHolder(path string) int {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return 0
	}
	defer f.Close()
	want := ":" + strconv.FormatUint(st.Ino, 10)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF
		fs := strings.Fields(sc.Text())
		if len(fs) >= 6 && fs[1] == "FLOCK" && strings.HasSuffix(fs[5], want) {
			if pid, err := strconv.Atoi(fs[4]); err == nil {
				return pid
			}
		}
	}
	return 0
}

func describePID(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return fmt.Sprintf("pid %d", pid)
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	args[0] = filepath.Base(args[0])
	if len(args) > 6 {
		args = append(args[:6], "…")
	}
	return fmt.Sprintf("pid %d (%s)", pid, strings.Join(args, " "))
}
