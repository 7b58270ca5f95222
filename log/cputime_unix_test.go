//go:build unix

package log

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user + system) the process has used so
// far. Benchmarks report it per operation beside wall times: on this
// shared machine a wall time measures mostly the queue for a core, the
// CPU time what the operation costs.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
