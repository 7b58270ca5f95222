package projstd

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// TestVersion5StoreRebuilds: testdata/vectors-v5.db.gz is the vectors.db
// that the binary before version 6 wrote for projtest.Generate(seed 5, 40
// stores), committed at the last event. Opened now, it is another format:
// the projection starts over (checkpoint zero, nothing stored), and the
// catch-up that follows gives the digest of a fresh build.
func TestVersion5StoreRebuilds(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Open(filepath.Join("testdata", "vectors-v5.db.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(dir, "vectors.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, zr); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	old, err := OpenVectors(dir, VectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if cp, _ := old.Checkpoint(); cp != (projections.Checkpoint{}) {
		t.Fatalf("a version 5 store resumes at %d, want a rebuild from zero", cp.Seq)
	}
	if old.live != 0 {
		t.Fatalf("%d live vectors kept from version 5", old.live)
	}
	fresh, err := OpenVectors(t.TempDir(), VectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	evs := projtest.Generate(projtest.Config{Seed: 5, N: 40, StoresOnly: true})
	for _, v := range []*VectorProjection{old, fresh} {
		for _, ev := range evs {
			if err := v.Apply(ev); err != nil {
				t.Fatal(err)
			}
		}
		last := evs[len(evs)-1]
		if err := v.Commit(projections.Checkpoint{Seq: last.Seq, Hash: last.Hash}); err != nil {
			t.Fatal(err)
		}
	}
	a, err := old.Digest()
	if err != nil {
		t.Fatal(err)
	}
	b, err := fresh.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if a != b || old.live != 39 {
		t.Fatalf("rebuilt over version 5: digest %x, %d live; fresh: %x", a, old.live, b)
	}
}
