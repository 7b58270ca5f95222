package log

import (
	"errors"
	"testing"
)

func TestImportCopiesLogExactly(t *testing.T) {
	kr := testKeys(t)
	src := openT(t, t.TempDir(), kr, Options{})
	defer src.Close()
	appendN(t, src, 30)
	var raws [][]byte
	src.Records(ctx, 0, 0, func(r *Record) error { raws = append(raws, append([]byte(nil), r.Raw...)); return nil })

	dst := openT(t, t.TempDir(), kr, Options{})
	defer dst.Close()
	// Out of order, a gap, a forged body: refused, nothing written.
	if err := dst.Import(ctx, raws[1:3]); !errors.Is(err, ErrChainBroken) {
		t.Fatalf("gap: %v", err)
	}
	forged := append([]byte(nil), raws[0]...)
	forged[len(forged)-1] ^= 1
	if err := dst.Import(ctx, [][]byte{forged}); err == nil {
		t.Fatal("forged body imported")
	}
	other := openT(t, t.TempDir(), testKeys(t), Options{})
	defer other.Close()
	if err := other.Import(ctx, raws[:1]); err == nil {
		t.Fatal("imported under a wrong vault key")
	}
	if h, _ := dst.Head(); h != 0 {
		t.Fatalf("refused imports wrote %d events", h)
	}
	if err := dst.Import(ctx, raws[:10]); err != nil {
		t.Fatal(err)
	}
	if err := dst.Import(ctx, raws[10:]); err != nil {
		t.Fatal(err)
	}
	h1, hh1 := src.Head()
	h2, hh2 := dst.Head()
	if h1 != h2 || hh1 != hh2 {
		t.Fatalf("heads differ: %d %s vs %d %s", h1, hh1, h2, hh2)
	}
	// Idempotency index is built for imported ids.
	evs := collect(t, src)
	r, err := dst.Append(ctx, Entry{ID: evs[4].ID, Body: evs[4].Body})
	if err != nil || !r.Existed || r.Seq != 5 {
		t.Fatalf("re-append of imported id: %+v %v", r, err)
	}
}
