package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// startCPUProfile writes a CPU profile of the whole process to the file
// UCL_CPUPROFILE names, for measuring where a one-shot command's time goes
// (`go tool pprof`); the returned stop ends and closes it. A developer
// aid, so it is an environment variable and not a flag.
func startCPUProfile(stderr io.Writer) (stop func()) {
	path := os.Getenv("UCL_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(stderr, "ucl: cpu profile: %v\n", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(stderr, "ucl: cpu profile: %v\n", err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(stderr, "ucl: cpu profile: %v\n", err)
		}
	}
}
