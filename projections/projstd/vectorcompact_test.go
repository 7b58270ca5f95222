package projstd

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// TestCompactDropsDeadSlots: Compact leaves one slot per live chunk, in
// the same order, under the other slot file name; the digest, every
// search and verify's slot check agree before and after, and after a
// reopen; a store compacted halfway and again at the end has the same
// slots as one compacted once; a file of the other name found at open
// (a compaction cut short) is removed.
func TestCompactDropsDeadSlots(t *testing.T) {
	evs := projtest.ConvEvents(3, 300)
	ctx := context.Background()
	r := rand.New(rand.NewSource(3))
	var qs []string
	for i := 0; i < 12; i++ {
		qs = append(qs, projtest.QueryText(r))
	}
	// The digest (which checks every slot against the stored vectors),
	// then each query's hits, twice: by the file, then resident.
	answers := func(v *VectorProjection) []any {
		t.Helper()
		d, err := v.Digest()
		if err != nil {
			t.Fatal(err)
		}
		out := []any{d}
		for range 2 {
			for _, q := range qs {
				hits, err := v.SearchText(ctx, q, 10)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, hits)
			}
		}
		return out
	}
	dirA := t.TempDir()
	a := buildVectors(t, dirA, evs, 1000)
	if a.next <= uint64(a.live) {
		t.Fatalf("%d slots for %d live: nothing to drop", a.next, a.live)
	}
	before := answers(a)
	if err := a.Compact(); err != nil {
		t.Fatal(err)
	}
	if a.next != uint64(a.live) || a.scanFile != scanFileAlt {
		t.Fatalf("after Compact: %d slots, %d live, file %s", a.next, a.live, a.scanFile)
	}
	for _, f := range []string{scanFileName, recsFileName} {
		if _, err := os.Stat(filepath.Join(dirA, f)); !os.IsNotExist(err) {
			t.Fatalf("the old %s stays: %v", f, err)
		}
	}
	fileA, err := os.ReadFile(filepath.Join(dirA, scanFileAlt))
	if err != nil {
		t.Fatal(err)
	}
	if len(fileA) != scanHeader+a.live*(8+384) {
		t.Fatalf("%d bytes for %d live slots", len(fileA), a.live)
	}
	if got := answers(a); !reflect.DeepEqual(got, before) {
		t.Fatal("digest or searches changed with Compact")
	}
	// Nothing to drop: Compact leaves the file alone.
	if err := a.Compact(); err != nil || a.scanFile != scanFileAlt {
		t.Fatalf("second Compact: %v, file %s", err, a.scanFile)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// A stray file of the other name goes at open.
	for _, f := range []string{scanFileName, recsFileName} {
		if err := os.WriteFile(filepath.Join(dirA, f), []byte("a compaction cut short"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	a, err = OpenVectors(dirA, VectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, f := range []string{scanFileName, recsFileName} {
		if _, err := os.Stat(filepath.Join(dirA, f)); !os.IsNotExist(err) {
			t.Fatalf("the stray %s stays: %v", f, err)
		}
	}
	if got := answers(a); !reflect.DeepEqual(got, before) {
		t.Fatal("digest or searches changed after reopening")
	}

	dirB := t.TempDir()
	half := len(evs) / 2
	b := buildVectors(t, dirB, evs[:half], 37)
	if err := b.Compact(); err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs[half:] {
		if err := b.Apply(ev); err != nil {
			t.Fatal(err)
		}
		if (i+1)%9 == 0 || half+i == len(evs)-1 {
			if err := b.Commit(projections.Checkpoint{Seq: ev.Seq, Hash: ev.Hash}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.Compact(); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	fileB, err := os.ReadFile(filepath.Join(dirB, b.scanFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fileA, fileB) {
		t.Fatal("compacted twice, the slots differ from compacted once")
	}
	recA, err := os.ReadFile(filepath.Join(dirA, recsFileFor(a.scanFile)))
	if err != nil {
		t.Fatal(err)
	}
	recB, err := os.ReadFile(filepath.Join(dirB, recsFileFor(b.scanFile)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(recA, recB) || len(recA) != scanHeader+a.live*(4+384) {
		t.Fatalf("compacted twice, the records differ from compacted once (%d, %d bytes)", len(recA), len(recB))
	}
	if got := answers(b); !reflect.DeepEqual(got, before) {
		t.Fatal("digest or searches differ from the store compacted once")
	}
}

// TestVersion6StoreRebuilds: a store written in format 6 (testdata:
// vectors.db and scan.bin of ConvEvents(3, 80) committed every 25 events,
// 49 live chunks in 61 slots, records keyed by chunk id) is another
// format now: opening it starts the projection over (checkpoint zero,
// nothing stored, the old files gone), and the catch-up that follows
// answers as a store built now from the same events, before and after
// Compact drops the dead slots.
func TestVersion6StoreRebuilds(t *testing.T) {
	dir := t.TempDir()
	for name, file := range map[string]string{"vectors-v6.db.gz": "vectors.db", "scan-v6.bin.gz": scanFileName} {
		f, err := os.Open(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(zr)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old, err := OpenVectors(dir, VectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	evs := projtest.ConvEvents(3, 80)
	if cp, _ := old.Checkpoint(); cp.Seq != 0 || old.live != 0 || old.next != 0 {
		t.Fatalf("a version 6 store resumes: checkpoint %d, %d live in %d slots; want a rebuild from zero", cp.Seq, old.live, old.next)
	}
	if fi, err := os.Stat(filepath.Join(dir, scanFileName)); err != nil || fi.Size() != scanHeader {
		t.Fatalf("version 6's scan.bin kept: %v", err)
	}
	err = old.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket([]byte("vecs")) != nil {
			t.Error(`version 6's "vecs" bucket kept`)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		if err := old.Apply(ev); err != nil {
			t.Fatal(err)
		}
		if (i+1)%25 == 0 || i == len(evs)-1 {
			if err := old.Commit(projections.Checkpoint{Seq: ev.Seq, Hash: ev.Hash}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if old.live != 49 || old.next != 61 {
		t.Fatalf("rebuilt: %d live in %d slots, want 49 in 61", old.live, old.next)
	}
	fresh := buildVectors(t, t.TempDir(), evs, 25)
	defer fresh.Close()
	ctx := context.Background()
	r := rand.New(rand.NewSource(4))
	same := func(when string) {
		t.Helper()
		a, err := old.Digest()
		if err != nil {
			t.Fatal(err)
		}
		b, err := fresh.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if a != b {
			t.Fatalf("%s: digests differ", when)
		}
		for i := 0; i < 10; i++ {
			q := projtest.QueryText(r)
			x, err := old.SearchText(ctx, q, 10)
			if err != nil {
				t.Fatal(err)
			}
			y, err := fresh.SearchText(ctx, q, 10)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(x, y) {
				t.Fatalf("%s: %q: %v, built now %v", when, q, x, y)
			}
		}
	}
	same("opened")
	for _, v := range []*VectorProjection{old, fresh} {
		if err := v.Compact(); err != nil {
			t.Fatal(err)
		}
	}
	if old.next != 49 {
		t.Fatalf("%d slots after Compact", old.next)
	}
	same("compacted")
	a, err := os.ReadFile(filepath.Join(dir, old.scanFile))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(fresh.dir, fresh.scanFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("compacted slot files differ")
	}
	if a, err = os.ReadFile(filepath.Join(dir, recsFileFor(old.scanFile))); err != nil {
		t.Fatal(err)
	}
	if b, err = os.ReadFile(filepath.Join(fresh.dir, recsFileFor(fresh.scanFile))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("compacted record files differ")
	}
}
