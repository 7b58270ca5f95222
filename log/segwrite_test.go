package log

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tidwall/wal"
)

// TestTailWriterMatchesTidwall: the log's own segment writer writes the
// files tidwall/wal's WriteBatch writes for the same entries and batch
// boundaries, byte for byte and file for file (so stores written before
// and after the writer replaced tidwall's are the same format), across
// segment cycles and a reopen.
func TestTailWriterMatchesTidwall(t *testing.T) {
	const segSize = 3000
	dir := filepath.Join(t.TempDir(), "log")
	kr := testKeys(t)
	l := openT(t, dir, kr, Options{Durability: None, SegmentSize: segSize})
	sizes := []int{1, 3, 7, 1, 12, 2, 9, 1, 1, 20, 4}
	n := 0
	for round, sz := range sizes {
		var batch []Entry
		for i := 0; i < sz; i++ {
			batch = append(batch, storeEntry(n))
			n++
		}
		if _, err := l.AppendBatch(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
		if round == 5 { // a reopen in the middle: the writer resumes the last file
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = openT(t, dir, kr, Options{Durability: None, SegmentSize: segSize})
		}
	}
	var datas [][]byte
	for seq := uint64(1); seq <= uint64(n); seq++ {
		d, err := l.readEntry(seq)
		if err != nil {
			t.Fatal(err)
		}
		datas = append(datas, append([]byte(nil), d...))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	ref := filepath.Join(t.TempDir(), "ref")
	w, err := wal.Open(ref, &wal.Options{NoSync: true, SegmentSize: segSize, LogFormat: wal.Binary})
	if err != nil {
		t.Fatal(err)
	}
	seq := uint64(1)
	var wb wal.Batch
	for round, sz := range sizes {
		wb.Clear()
		for i := 0; i < sz; i++ {
			wb.Write(seq, datas[seq-1])
			seq++
		}
		if err := w.WriteBatch(&wb); err != nil {
			t.Fatal(err)
		}
		if round == 5 {
			w.Close()
			if w, err = wal.Open(ref, &wal.Options{NoSync: true, SegmentSize: segSize, LogFormat: wal.Binary}); err != nil {
				t.Fatal(err)
			}
		}
	}
	w.Close()

	got, want := segmentFiles(t, dir), segmentFiles(t, ref)
	if len(want) < 4 {
		t.Fatalf("reference has %d segment files; the test needs cycles", len(want))
	}
	if len(got) != len(want) {
		t.Fatalf("%d segment files, tidwall wrote %d", len(got), len(want))
	}
	for name, b := range want {
		if !bytes.Equal(got[name], b) {
			t.Errorf("segment %s: %d bytes differ from tidwall's %d", name, len(got[name]), len(b))
		}
	}
}

func segmentFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	segs, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, s := range segs {
		b, err := os.ReadFile(filepath.Join(dir, s.name))
		if err != nil {
			t.Fatal(err)
		}
		out[s.name] = b
	}
	return out
}
