package projections

import (
	"fmt"
	"os"
	"runtime/metrics"
	"time"
)

// statsEnv names the environment variable that makes a catch-up print to
// stderr, when its projections have applied the stream, where each
// projection's goroutine spent its wall time (waiting for events, in
// Apply, waiting for a commit turn, in Commit) and how much of the
// process's CPU capacity (GOMAXPROCS × wall) found no goroutine to run.
// A measuring aid, like cmd/ucl's UCL_CPUPROFILE (whose profile labels
// each projection's samples "projection"); it costs two clock reads per
// batch when set and nothing otherwise.
const statsEnv = "UCL_CATCHUP_STATS"

var statsOn = os.Getenv(statsEnv) != ""

// runStats is the wall time one projection's goroutine spent in each
// state of a catch-up.
type runStats struct {
	wait    time.Duration // waiting for the next batch
	apply   time.Duration // in Apply
	turn    time.Duration // waiting for a commit turn
	commit  time.Duration // in Commit
	release time.Duration // in ReleaseMemory
	compact time.Duration // in Compact (Compacter)
}

// now is the time when measuring, the zero time otherwise.
func (s *runStats) now() time.Time {
	if !statsOn {
		return time.Time{}
	}
	return time.Now()
}

// add adds the time since t to *d when measuring and returns now.
func (s *runStats) add(d *time.Duration, t time.Time) time.Time {
	if !statsOn {
		return t
	}
	n := time.Now()
	*d += n.Sub(t)
	return n
}

// cpuClasses reads the runtime's estimates of the CPU capacity used and
// left idle so far.
func cpuClasses() []metrics.Sample {
	s := []metrics.Sample{{Name: "/cpu/classes/total:cpu-seconds"}, {Name: "/cpu/classes/idle:cpu-seconds"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/cpu/classes/user:cpu-seconds"}}
	metrics.Read(s)
	return s
}

func printStats(runs []*run, read, send, total time.Duration, c0 []metrics.Sample) {
	c1 := cpuClasses()
	d := func(i int) float64 { return c1[i].Value.Float64() - c0[i].Value.Float64() }
	fmt.Fprintf(os.Stderr, "catch-up %v: reader read %v, blocked sending %v; capacity %.1fs, idle %.1fs, gc %.1fs, user %.1fs\n",
		total.Round(time.Millisecond), read.Round(time.Millisecond), send.Round(time.Millisecond), d(0), d(1), d(2), d(3))
	for _, r := range runs {
		s := r.st
		fmt.Fprintf(os.Stderr, "  %-10s wait %8.1fs apply %8.1fs turn %8.1fs commit %8.1fs release %6.1fs compact %6.1fs\n", r.p.Name(),
			s.wait.Seconds(), s.apply.Seconds(), s.turn.Seconds(), s.commit.Seconds(), s.release.Seconds(), s.compact.Seconds())
	}
}
