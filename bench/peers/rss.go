package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
)

// A child's peak RSS. Go starts a child with vfork (CLONE_VM), and Linux
// carries the parent's peak RSS into the child's rusage when the child
// execs: a child's Maxrss is at least this process's own peak, which the
// log figures raise to ~275 MB (the replay of 200K events) before the
// full-text children run (measured: an FTS5 build of 20K documents, 38 MB
// alone, showed 282 MB). So each child writes its own peak instead:
// VmHWM, the high-water mark of its own address space, which starts
// empty at exec.

// peakEnv names the file a child writes its peak RSS to.
const peakEnv = "PEERS_PEAK_FILE"

// writePeak writes this process's VmHWM in bytes to the file peakEnv
// names, when it is set (a child, as it ends).
func writePeak() {
	path := os.Getenv(peakEnv)
	if path == "" {
		return
	}
	hwm, err := vmHWM()
	if err != nil {
		fail(err)
	}
	if err := os.WriteFile(path, []byte(strconv.FormatInt(hwm, 10)), 0o600); err != nil {
		fail(err)
	}
}

// vmHWM is this process's peak resident set in bytes (/proc/self/status).
func vmHWM() (int64, error) {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		var kb int64
		if _, err := fmt.Sscanf(sc.Text(), "VmHWM: %d kB", &kb); err == nil {
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/self/status")
}

// childPeak makes cmd's child write its peak RSS, and returns the function
// that reads it once the child has exited.
func childPeak(cmd *exec.Cmd) func() int64 {
	f, err := os.CreateTemp("", "peers-peak-*")
	if err != nil {
		fail(err)
	}
	f.Close()
	cmd.Env = append(os.Environ(), peakEnv+"="+f.Name())
	return func() int64 {
		defer os.Remove(f.Name())
		raw, err := os.ReadFile(f.Name())
		if err != nil {
			fail(err)
		}
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			fail(fmt.Errorf("child's peak RSS %q: %w", raw, err))
		}
		return n
	}
}
