package projstd

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/unlimitedcontext/ucl/internal/fsutil"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// mappedRSS is the resident kilobytes of this process's mappings of path.
func mappedRSS(t *testing.T, path string) int {
	t.Helper()
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	kb := 0
	if err := fsutil.Smaps("/proc/self", func(e fsutil.SmapsEntry) {
		if e.Path == path {
			kb += int(e.RssKB)
		}
	}); errors.Is(err, fs.ErrNotExist) {
		t.Skip(err) // no /proc here
	} else if err != nil {
		t.Fatal(err)
	}
	return kb
}

// evict drops path from the page cache, so that the next reads come from
// the disk: what was just written is cached in large folios, which the
// kernel maps whole on a fault, whatever was dropped before.
func evict(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
}

// A process's first subset search walks every stored record (scanIn)
// and keeps no more of vectors.db resident than the records read since
// the last drop (scanDropEvery): without the drops the whole bucket
// stayed mapped. The same walk, read from the disk both times, with and
// without drops.
func TestScanWhereDropsResidentPages(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "vectors.db")
	v, err := OpenVectors(dir, VectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evs := projtest.Generate(projtest.Config{Seed: 5, N: 2000, StoresOnly: true})
	applyCommit(t, v, evs)
	var some string
	for _, ev := range evs {
		if st, ok := ev.Body.(*log.Store); ok && st.Session != "" {
			some = st.Session
			break
		}
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	defer func(n int) { scanDropEvery = n }(scanDropEvery)
	walk := func(every int) int {
		scanDropEvery = every
		evict(t, db)
		v, err := OpenVectors(dir, VectorOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		ctx := context.Background()
		q, err := v.EmbedQuery(ctx, "cello practice", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := v.SearchVectorIn(ctx, q, 10, []string{some}); err != nil || !ok {
			t.Fatalf("subset search: ok %v, %v", ok, err)
		}
		if v.scans != 1 || v.idx != nil {
			t.Fatalf("the first subset search did not walk the records in place (scans %d, index loaded %v)", v.scans, v.idx != nil)
		}
		return mappedRSS(t, db)
	}
	kept := walk(1 << 30)
	dropped := walk(64)
	if dropped*2 > kept {
		t.Errorf("vectors.db: %d KB resident after a walk dropping every 64 records, %d KB without drops: want under half", dropped, kept)
	}
}
