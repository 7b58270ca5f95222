package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

// startMemProfile writes a heap profile to the file UCL_MEMPROFILE names,
// for finding what holds a one-shot command's peak memory (`go tool
// pprof -sample_index=inuse_space`). A profile taken at exit shows only
// what is live then, so a sampler rewrites the file each time the live
// heap passes 1.1× its previous high: the file ends near the peak. A
// developer aid, so it is an environment variable and not a flag.
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
		var ms runtime.MemStats
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > high+high/10 {
				high = ms.HeapAlloc
				write()
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
