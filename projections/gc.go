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

// CatchUpMemHeadroom bounds the Go heap of a catch-up too small to be
// bulk (fewer than CompactAfter events) the same way, with less room: a
// few events can still be large (a 2 MiB document of distinct words and a
// 1 MiB turn took one `ucl session list` from a live heap of ~125 MB to a
// 186 MB heap and 255-323 MB RSS from run to run, over the 300 MB
// test/TestBigEventsBoundedMemory allows; under live + 192 MiB it peaked
// at 219-223 MB for 1.8-2.1 s of CPU against 1.7-2.1; under + 128 MiB at
// 160-166 MB, but the collector then ran back to back: twice the CPU).
// Its collector target is left as it is.
const CatchUpMemHeadroom = 192 << 20

// bulkRan is set once a bulk catch-up has run in this process (BulkRan).
var bulkRan atomic.Bool

// BulkRan reports whether a bulk catch-up (CompactAfter events or more)
// has run in this process: it wrote most of the projections' files, so a
// one-shot command may drop their pages from the page cache when it is
// done (cmd/ucl does, for the reason ucl.DropProjectionPages gives).
func BulkRan() bool { return bulkRan.Load() }

var (
	gcMu     sync.Mutex
	gcRuns   int   // catch-ups running in this process
	gcBulk   int   // bulk ones among them
	gcOld    int   // the target before the first bulk one
	memLimit int64 // the limit set here; 0: none set (one was there)
	ownLimit bool  // whether the running catch-ups may set or raise a limit
)

// bulkGC is catchUpGC for a bulk catch-up.
func bulkGC() (restore func()) { return catchUpGC(true) }

// catchUpGC bounds the heap for the length of a catch-up (live heap +
// BulkMemHeadroom for a bulk one, + CatchUpMemHeadroom otherwise) and,
// for a bulk one, raises the collector's target; it returns the function
// that puts both back. Overlapping catch-ups (two projectors in one
// process) restore them when the last one ends, and a bulk one starting
// beside a small one raises the limit the small one set. A target already
// higher (or the collector off) is left alone, and so is a memory limit
// already set (GOMEMLIMIT, or the program's own).
func catchUpGC(bulk bool) (restore func()) {
	headroom := int64(CatchUpMemHeadroom)
	if bulk {
		bulkRan.Store(true)
		headroom = BulkMemHeadroom
	}
	gcMu.Lock()
	if gcRuns == 0 {
		memLimit = 0
		ownLimit = os.Getenv("GOMEMLIMIT") == "" && debug.SetMemoryLimit(-1) == math.MaxInt64
	}
	// The limit is ours to raise while it is still the one set here (none
	// yet: the maximum); a limit the program set meanwhile stays.
	ours := memLimit
	if ours == 0 {
		ours = math.MaxInt64
	}
	if ownLimit && debug.SetMemoryLimit(-1) == ours {
		if l := liveHeap() + headroom; memLimit == 0 || l > memLimit {
			memLimit = l
			debug.SetMemoryLimit(memLimit)
		}
	}
	if bulk {
		if gcBulk == 0 {
			gcOld = debug.SetGCPercent(bulkGCPercent)
			if gcOld < 0 || gcOld > bulkGCPercent {
				debug.SetGCPercent(gcOld)
			}
		}
		gcBulk++
	}
	gcRuns++
	gcMu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			gcMu.Lock()
			if bulk {
				if gcBulk--; gcBulk == 0 {
					debug.SetGCPercent(gcOld)
				}
			}
			if gcRuns--; gcRuns == 0 {
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
