package main

import (
	"math"
	"os"
	"runtime/debug"
)

// buildMemLimit is the soft Go memory limit (runtime/debug.SetMemoryLimit)
// `ucl project` and a one-shot query or context process run under. Every
// bulk catch-up also bounds the heap itself (projections.BulkMemHeadroom,
// whose comment has the measurements); this fixed limit, set first, is
// the one those catch-ups then keep, so a short-lived CLI process never
// grows past it whatever its live heap was when the catch-up began. Under
// a limit the collector runs earlier; the runtime caps its CPU share, so
// a live heap above it costs CPU, never an out-of-memory. The file pages
// bbolt maps are outside it.
const buildMemLimit = 512 << 20

// appendMemLimit is the soft Go memory limit `ucl append` runs under. Its
// live heap is one batch of input (4 MiB, parsed) and the duplicate
// index's writes not yet in its file (under 100 MB), but each batch's
// catch-up of that index runs at GOGC=200 (projections' bulk setting):
// 300K events peaked at 385 MB RSS with about 85 MB live.
const appendMemLimit = 256 << 20

// boundBuildHeap sets buildMemLimit unless GOMEMLIMIT already chose a
// limit (the environment wins, for measuring or a larger machine).
func boundBuildHeap() { boundHeap(buildMemLimit) }

// boundHeap sets the soft memory limit to limit unless GOMEMLIMIT or an
// earlier call already chose one.
func boundHeap(limit int64) {
	if os.Getenv("GOMEMLIMIT") != "" || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		return
	}
	debug.SetMemoryLimit(limit)
}

// queryGCPercent is the GOGC a one-shot query or context process runs
// with. Such a process allocates a few MB (10-20 at a million events) and
// exits: at the default 100 the collector ran two to four times in each
// (its 4 MB minimum goal), about a tenth of a bm25 query's CPU at 1M
// events (89.7 -> 80.4 ms median, RSS +3 MB of its 136). 200 keeps most
// of that: a bm25 or hybrid query at 1M holds ~4 MB live, and at 400 the
// garbage between collections (goal ~22 MB) was ~3 MB of a peak near the
// 100 MB target (1M, 11 queries × 3, alternating: RSS lower in 33 of 33
// runs each, max 111 -> 103 MB bm25, 114 -> 100 MB hybrid; CPU summed
// 2.50 vs 2.60 s and 2.46 vs 2.68 s at load 8; 100 cost +16% CPU). A
// query that first catches the projections up builds like `ucl project`,
// so the heap is also bounded by buildMemLimit: near it the collector
// runs as often as it must, whatever the percentage.
const queryGCPercent = 200

// tuneQueryGC sets queryGCPercent and buildMemLimit for a query process,
// unless GOGC or GOMEMLIMIT chose otherwise (the environment wins).
func tuneQueryGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(queryGCPercent)
	}
	boundBuildHeap()
}
