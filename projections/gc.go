package projections

import (
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// bulkGCPercent is the garbage collector's target (GOGC) while a bulk
// catch-up runs. A catch-up allocates fast (decoded events, analysed
// documents, bbolt pages) while its live heap stays about the same, so at
// the default 100 the collector runs back to back: 200 took about a tenth
// off a 50K-event catch-up's CPU for a heap peak about 100 MB higher.
const bulkGCPercent = 200

// BulkMemHeadroom bounds the Go heap of a bulk catch-up: while one runs,
// the process has a soft memory limit (runtime/debug.SetMemoryLimit) of
// the live heap it had when the first of them started plus this much.
// Without it the heap grows to three times its live size between
// collections (GOGC 200 above): a 200K-event first catch-up peaked at
// 1.43 GB RSS with GOGC 100, 940 MB of it Go heap against ~300 MB live.
// Under the limit the collector runs earlier instead; the runtime caps its
// CPU share, so a live heap above the limit costs CPU, never an
// out-of-memory. Every catch-up path gets it (`ucl project`, an owner
// daemon's, a query's, a snapshot restore's), not one command; the live
// heap is added so a daemon already holding its caches is not pushed into
// collecting back to back. The pages bbolt and bleve map are outside it.
const BulkMemHeadroom = 512 << 20

// bulkRan is set once a bulk catch-up has run in this process (BulkRan).
var bulkRan atomic.Bool

// BulkRan reports whether a bulk catch-up (CompactAfter events or more)
// has run in this process: it wrote most of the projections' files, so a
// one-shot command may drop their pages from the page cache when it is
// done (cmd/ucl does, for the reason its dropProjectionPages gives).
func BulkRan() bool { return bulkRan.Load() }

var (
	gcMu     sync.Mutex
	gcRuns   int   // bulk catch-ups running in this process
	gcOld    int   // the target before the first of them
	memLimit int64 // the limit the first of them set; 0: none set (one was there)
)

// bulkGC raises the collector's target and bounds the heap (see
// BulkMemHeadroom) for the length of a bulk catch-up, and returns the
// function that puts both back. Overlapping catch-ups (two projectors in
// one process) restore them when the last one ends. A target already
// higher (or the collector off) is left alone, and so is a memory limit
// already set (GOMEMLIMIT, or the program's own).
func bulkGC() (restore func()) {
	bulkRan.Store(true)
	gcMu.Lock()
	if gcRuns == 0 {
		gcOld = debug.SetGCPercent(bulkGCPercent)
		if gcOld < 0 || gcOld > bulkGCPercent {
			debug.SetGCPercent(gcOld)
		}
		memLimit = 0
		if os.Getenv("GOMEMLIMIT") == "" && debug.SetMemoryLimit(-1) == math.MaxInt64 {
			memLimit = liveHeap() + BulkMemHeadroom
			debug.SetMemoryLimit(memLimit)
		}
	}
	gcRuns++
	gcMu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			gcMu.Lock()
			if gcRuns--; gcRuns == 0 {
				debug.SetGCPercent(gcOld)
				// Only the limit set here is lifted: one the program set
				// meanwhile stays.
				if memLimit != 0 && debug.SetMemoryLimit(-1) == memLimit {
					debug.SetMemoryLimit(math.MaxInt64)
				}
				memLimit = 0
			}
			gcMu.Unlock()
		})
	}
}

// liveHeap is the heap the last garbage collection found live (0 before
// the first one).
func liveHeap() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}
