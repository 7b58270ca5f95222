package log

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/wal"

	"github.com/unlimitedcontext/ucl/crypto"
)

// BenchmarkEventAtRandom: EventAt at random seqs, the timelines' content
// read. The logs are built with durability none (to build fast; reads do
// not depend on it) from 512-byte contents in batches of 256, at 20K
// events, and at the sizes in UCL_BENCH_EVENTAT (comma-separated, e.g.
// 200000,1000000). The page cache is warm in every case.
//
//   - warm/index, warm/tidwall: one op is one read in a process that has
//     read before (sidecars loaded, files open), through the offset index
//     and through tidwall's Read (the path before the index); read-B/op is
//     the segment bytes the index read.
//   - fresh100/*: one op is a new process's first 100 random reads (a
//     query's chunk reads), Open excluded: with sidecars, without (first
//     touch builds them), and through tidwall.
func BenchmarkEventAtRandom(b *testing.B) {
	sizes := []int{20000}
	if s := os.Getenv("UCL_BENCH_EVENTAT"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				b.Fatalf("UCL_BENCH_EVENTAT: %v", err)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		dir := filepath.Join(b.TempDir(), "log")
		kr := testKeys(b)
		buildLog(b, dir, kr, n)
		b.Run(fmt.Sprintf("events=%d/warm/index", n), func(b *testing.B) {
			l := openT(b, dir, kr, Options{Durability: None})
			defer l.Close()
			rng := rand.New(rand.NewSource(1))
			for i := 0; i < 2000; i++ { // load every sidecar
				if _, err := l.EventAt(uint64(rng.Intn(n)) + 1); err != nil {
					b.Fatal(err)
				}
			}
			r0 := l.idx.bytesRead.Load()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := l.EventAt(uint64(rng.Intn(n)) + 1); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(l.idx.bytesRead.Load()-r0)/float64(b.N), "read-B/op")
		})
		b.Run(fmt.Sprintf("events=%d/warm/tidwall", n), func(b *testing.B) {
			l := openT(b, dir, kr, Options{Durability: None})
			defer l.Close()
			rng := rand.New(rand.NewSource(1))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := tidwallEventAt(l, uint64(rng.Intn(n))+1); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, mode := range []string{"sidecar", "nosidecar", "tidwall"} {
			b.Run(fmt.Sprintf("events=%d/fresh100/%s", n, mode), func(b *testing.B) {
				if mode == "sidecar" { // a range read writes every sealed segment's sidecar
					l := openT(b, dir, kr, Options{Durability: None})
					if err := l.Records(ctx, 0, 0, func(*Record) error { return nil }); err != nil {
						b.Fatal(err)
					}
					l.Close()
				}
				rng := rand.New(rand.NewSource(2))
				var read int64
				var el time.Duration
				for i := 0; i < b.N; i++ {
					if mode == "nosidecar" {
						removeSidecars(b, dir)
					}
					l := openT(b, dir, kr, Options{Durability: None})
					t0 := time.Now()
					for j := 0; j < 100; j++ {
						seq := uint64(rng.Intn(n)) + 1
						var err error
						if mode == "tidwall" {
							_, err = tidwallEventAt(l, seq)
						} else {
							_, err = l.EventAt(seq)
						}
						if err != nil {
							b.Fatal(err)
						}
					}
					el += time.Since(t0)
					read += l.idx.bytesRead.Load()
					l.Close()
				}
				b.ReportMetric(float64(el.Microseconds())/1000/float64(b.N), "ms/100reads")
				b.ReportMetric(float64(read)/float64(b.N)/100, "read-B/read")
			})
		}
	}
}

// tidwallWALs: tidwall's own log opened read-only beside each benched Log
// (the files are tidwall's format; ucl no longer writes through it).
var (
	tidwallMu   sync.Mutex
	tidwallWALs = map[*Log]*wal.Log{}
)

// tidwallEventAt is EventAt as it was before the offset index: tidwall's
// Read, which loads and parses the whole segment holding seq.
func tidwallEventAt(l *Log, seq uint64) (*Event, error) {
	tidwallMu.Lock()
	defer tidwallMu.Unlock()
	w := tidwallWALs[l]
	if w == nil {
		var err error
		if w, err = wal.Open(l.dir, &wal.Options{NoSync: true, SegmentSize: l.opts.SegmentSize, LogFormat: wal.Binary, SegmentCacheSize: 2}); err != nil {
			return nil, err
		}
		tidwallWALs[l] = w
	}
	data, err := w.Read(seq)
	if err != nil {
		return nil, err
	}
	raw, _, err := checkEntry(data)
	if err != nil {
		return nil, err
	}
	return l.Decrypt(raw)
}

func buildLog(b *testing.B, dir string, kr *crypto.Keyring, n int) {
	b.Helper()
	l := openT(b, dir, kr, Options{Durability: None})
	defer l.Close()
	batch := make([]Entry, 0, 256)
	for i := 0; i < n; i++ {
		batch = append(batch, benchEntry(i))
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := l.AppendBatch(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

func removeSidecars(b *testing.B, dir string) {
	m, err := filepath.Glob(filepath.Join(dir, "*"+segIdxSuffix))
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range m {
		if err := os.Remove(p); err != nil {
			b.Fatal(err)
		}
	}
}
