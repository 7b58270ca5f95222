package vector

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// KeepOnly keeps the chosen entries and leaves no byte of the others in
// the file (a copy, not bbolt's in-place delete).
func TestKeepOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	c, err := OpenBoltCache(path)
	if err != nil {
		t.Fatal(err)
	}
	keys := [][32]byte{sha256.Sum256([]byte("live")), sha256.Sum256([]byte("dead")), sha256.Sum256([]byte("query"))}
	marker := float32(12345.678) // a recognisable value in the dropped vector
	vecs := [][]float32{{1, 2, 3}, {marker, marker, marker}, {7, 8, 9}}
	if err := c.Put("m", keys, vecs); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	var needle []byte
	for i := 0; i < 3; i++ {
		needle = binary.LittleEndian.AppendUint32(needle, math.Float32bits(marker))
	}
	if b, _ := os.ReadFile(path); !bytes.Contains(b, needle) {
		t.Fatal("the dropped vector is not in the file before: the check is blind")
	}
	dropped, err := KeepOnly(path, func(h [32]byte) bool { return h == keys[0] })
	if err != nil || dropped != 2 {
		t.Fatalf("KeepOnly: %d dropped, %v", dropped, err)
	}
	if b, _ := os.ReadFile(path); bytes.Contains(b, needle) || bytes.Contains(b, keys[1][:]) {
		t.Fatal("the dropped entry is still in the file")
	}
	c, err = OpenBoltCache(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := c.Get("m", keys)
	if err != nil || len(got[0]) != 3 || got[1] != nil || got[2] != nil {
		t.Fatalf("after KeepOnly: %v %v", got, err)
	}
	if n, err := KeepOnly(filepath.Join(t.TempDir(), "none.db"), nil); n != 0 || err != nil {
		t.Fatalf("missing file: %d %v", n, err)
	}
}
