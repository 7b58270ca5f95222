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
	if _, err := os.Stat(filepath.Join(dirA, scanFileName)); !os.IsNotExist(err) {
		t.Fatalf("the old slot file stays: %v", err)
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
	if err := os.WriteFile(filepath.Join(dirA, scanFileName), []byte("a compaction cut short"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err = OpenVectors(dirA, VectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := os.Stat(filepath.Join(dirA, scanFileName)); !os.IsNotExist(err) {
		t.Fatalf("the stray slot file stays: %v", err)
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
	if got := answers(b); !reflect.DeepEqual(got, before) {
		t.Fatal("digest or searches differ from the store compacted once")
	}
}

// TestVersion6StoreOpensAndCompacts: a store written by the binary before
// slot compaction (testdata: ConvEvents(3, 80) committed every 25 events,
// 49 live chunks in 61 slots) opens as it is, answers as a store built
// now from the same events, and Compact drops its dead slots.
func TestVersion6StoreOpensAndCompacts(t *testing.T) {
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
	if cp, _ := old.Checkpoint(); cp.Seq != evs[len(evs)-1].Seq || old.live != 49 || old.next != 61 {
		t.Fatalf("the stored state: checkpoint %d, %d live in %d slots", cp.Seq, old.live, old.next)
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
}
