package log

import (
	"os"
	"path/filepath"
	"testing"
)

// CutAfter ends the log at a chosen event inside a batch, keeps the cut
// bytes aside, and the log opens at that head and takes appends on it.
func TestCutAfter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	kr := testKeys(t)
	l := openT(t, dir, kr, Options{})
	var es []Entry
	for i := 0; i < 5; i++ {
		es = append(es, storeEntry(i))
	}
	if _, err := l.AppendBatch(ctx, es); err != nil {
		t.Fatal(err)
	}
	h3, err := l.HashAt(3)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	corrupt := filepath.Join(t.TempDir(), "cut")
	rep, err := CutAfter(dir, corrupt, 3, "not acknowledged")
	if err != nil {
		t.Fatal(err)
	}
	if rep == nil || rep.FromSeq != 4 || rep.ToSeq != 5 || rep.Head != 3 || len(rep.SavedTo) != 1 {
		t.Fatalf("report %+v", rep)
	}
	if b, err := os.ReadFile(rep.SavedTo[0]); err != nil || int64(len(b)) != rep.Bytes {
		t.Fatalf("cut bytes kept: %d of %d (%v)", len(b), rep.Bytes, err)
	}
	l = openT(t, dir, kr, Options{})
	defer l.Close()
	if seq, h := l.Head(); seq != 3 || h != h3 {
		t.Fatalf("head after the cut: %d", seq)
	}
	if _, err := l.Append(ctx, storeEntry(9)); err != nil {
		t.Fatal(err)
	}
	if rep, err := CutAfter(dir, corrupt, 4, ""); err == nil || rep != nil {
		t.Fatalf("cut of an open log: %v %v, want the lock refused", rep, err)
	}
}
