package main

import (
	"fmt"
	"io"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// startMemProfile writes a heap profile to the file UCL_MEMPROFILE names,
// for finding what holds a one-shot command's peak memory (`go tool
// pprof -sample_index=inuse_space`). A profile taken at exit shows only
// what is live then, so a sampler rewrites the file each time the live
// heap (what the last collection kept) passes 1.1× its previous high: the
// file ends near the peak. Not the allocated heap (runtime.MemStats
// HeapAlloc, garbage included): under a bulk build's memory limit that
// reaches the limit within seconds and stays there, so the file stopped
// at the first seconds of a 1M-event build while the live heap went on
// growing. A developer aid, so it is an environment variable and not a
// flag.
func startMemProfile(stderr io.Writer) (stop func()) {
	path := os.Getenv("UCL_MEMPROFILE")
	if path == "" {
		return func() {}
	}
	write := func() {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintf(stderr, "ucl: mem profile: %v\n", err)
			return
		}
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			fmt.Fprintf(stderr, "ucl: mem profile: %v\n", err)
		}
		if err := f.Close(); err != nil {
			fmt.Fprintf(stderr, "ucl: mem profile: %v\n", err)
		}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var high uint64
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			metrics.Read(live)
			if live[0].Value.Kind() != metrics.KindUint64 {
				continue
			}
			if v := live[0].Value.Uint64(); v > high+high/10 {
				high = v
				write()
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
