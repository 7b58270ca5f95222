package projstd

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// TestVectorsFormatGolden freezes format 7: the store of ConvEvents(3, 80)
// committed every 25 events (edits and tombstones among them: 49 live
// chunks in 61 slots), as every bucket's keys and values and the two slot
// files' sizes and SHA-256, is testdata/vectors-v7.golden. A change here
// is a format change: bump vectorsVersion (a store of the old format is
// then rebuilt on open), and regenerate with UCL_UPDATE_GOLDEN=1.
func TestVectorsFormatGolden(t *testing.T) {
	dir := t.TempDir()
	v := buildVectors(t, dir, projtest.ConvEvents(3, 80), 25)
	var b bytes.Buffer
	err := v.db.View(func(tx *bolt.Tx) error {
		for _, name := range buckets {
			fmt.Fprintf(&b, "bucket %s\n", name)
			err := tx.Bucket(name).ForEach(func(k, val []byte) error {
				fmt.Fprintf(&b, "  %x = %x\n", k, val)
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{scanFileName, recsFileName} {
		raw, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "file %s: %d bytes, sha256 %x\n", f, len(raw), sha256.Sum256(raw))
	}
	got := b.Bytes()
	path := filepath.Join("testdata", "vectors-v7.golden")
	if os.Getenv("UCL_UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (regenerate with UCL_UPDATE_GOLDEN=1 only for a deliberate format change)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("vectors format changed:\n got %s\nwant %s", got, want)
	}
}
