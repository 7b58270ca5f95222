package fts

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// Every segment file the index writes, those of batches and those of
// merges, is a zap v16 file (indexConfig): bleve v2.6 defaults to v17,
// which a binary on bleve v2.5 cannot open. A zap file ends with its
// version (4 bytes, big-endian) and a CRC-32 (4).
func TestSegmentsAreZapV16(t *testing.T) {
	dir := t.TempDir()
	x := openT(t, dir, Options{BatchSize: 40})
	applyAll(t, x, randomEvents(3, 1500), 100)
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(x.indexPath(), "store", "*.zap"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no segment file")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 8 {
			t.Fatalf("%s: %d bytes", f, len(b))
		}
		if v := binary.BigEndian.Uint32(b[len(b)-8:]); v != 16 {
			t.Errorf("%s: zap version %d, want 16", filepath.Base(f), v)
		}
	}
}
