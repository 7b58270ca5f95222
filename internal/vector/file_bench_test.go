//go:build unix

package vector

import (
	"context"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestProbeGraphFile opens an existing graph file (UCL_PROBE_GRAPH, e.g. a
// store's projections/vectors/graph.bin) the way a one-query process does,
// mapped, and answers one query embedded by the hash embedder: it reports
// the open and search times and the page faults and resident growth of the
// process, against the file's size. Skipped without UCL_PROBE_GRAPH.
//
//	UCL_PROBE_GRAPH=/path/graph.bin go test -run TestProbeGraphFile -v ./internal/vector/
func TestProbeGraphFile(t *testing.T) {
	path := os.Getenv("UCL_PROBE_GRAPH")
	if path == "" {
		t.Skip("UCL_PROBE_GRAPH not set")
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewHashEmbedder(0)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range []string{"when did she go to the support group", "cello rosin practice", "lisbon hotel tram"} {
		q, err := e.Embed(context.Background(), []string{text})
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		var r0, r1 syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
		t0 := time.Now()
		g, err := OpenHNSWFile(path, HNSWOptions{EfSearch: 256})
		if err != nil {
			t.Fatal(err)
		}
		t1 := time.Now()
		hits, err := g.Search(q[0], 10)
		if err != nil {
			t.Fatal(err)
		}
		t2 := time.Now()
		syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
		cpu := func(r syscall.Rusage) time.Duration {
			return time.Duration(r.Utime.Nano() + r.Stime.Nano())
		}
		t.Logf("query %d: %d nodes, file %d MB: open %.2f ms, search %.2f ms (open+search CPU %.2f ms), page faults %d minor + %d major (%.1f MB if 4 KB pages); top hit %v",
			i, g.Len(), fi.Size()>>20, float64(t1.Sub(t0).Microseconds())/1e3, float64(t2.Sub(t1).Microseconds())/1e3,
			float64((cpu(r1)-cpu(r0)).Microseconds())/1e3, r1.Minflt-r0.Minflt, r1.Majflt-r0.Majflt, float64(r1.Minflt-r0.Minflt+r1.Majflt-r0.Majflt)*4096/1e6, hits[0])
		runtime.KeepAlive(g)
	}
}
