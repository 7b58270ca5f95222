package main

import (
	"math"
	"os"
	"runtime/debug"
)

// buildMemLimit is the soft Go memory limit a projection build runs under
// (runtime/debug.SetMemoryLimit). A catch-up's live heap is a few hundred
// MB (the commit of each projection's batch: bbolt's dirty nodes and page
// buffers, five projections at once), but with the default GOGC=100 the
// heap grows to twice its live size between collections: a 200K-event
// first catch-up peaked at 1.43 GB RSS, 940 MB of it anonymous against
// ~300 MB live. Under the limit the collector runs earlier instead; the
// runtime caps its CPU share, so a live heap above the limit costs
// CPU, never an out-of-memory. The file pages bbolt maps are outside it.
const buildMemLimit = 512 << 20

// boundBuildHeap sets buildMemLimit unless GOMEMLIMIT already chose a
// limit (the environment wins, for measuring or a larger machine).
func boundBuildHeap() {
	if os.Getenv("GOMEMLIMIT") != "" || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		return
	}
	debug.SetMemoryLimit(buildMemLimit)
}
