//go:build !unix

package log

import "time"

// cpuTime is unknown here: the CPU figures of the benchmarks read 0.
func cpuTime() time.Duration { return 0 }
