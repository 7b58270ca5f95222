package projections

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strconv"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/internal/fsutil"
)

// mappedKB is the resident size of this process's mappings of path
// (/proc/self/smaps), in KB.
func mappedKB(t *testing.T, path string) int {
	t.Helper()
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

// ReleaseBolt takes a bbolt file's pages out of the resident set, and
// the file reads the same afterwards.
func TestReleaseBoltDropsMappedPages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	db, err := OpenBolt(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	val := make([]byte, 1000)
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("b"))
		if err != nil {
			return err
		}
		for i := 0; i < 8000; i++ {
			val[0] = byte(i)
			if err := b.Put([]byte(strconv.Itoa(i)), val); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sum := func() (n int) {
		db.View(func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("b")).ForEach(func(k, v []byte) error { n += int(v[0]) + len(v); return nil })
		})
		return n
	}
	want := sum()
	before := mappedKB(t, path)
	if before < 4000 {
		t.Fatalf("only %d KB of the file resident after reading it all", before)
	}
	ReleaseBolt(db)
	if after := mappedKB(t, path); after > before/4 {
		t.Fatalf("%d KB resident after ReleaseBolt, %d before", after, before)
	}
	if got := sum(); got != want {
		t.Fatalf("read %d after the release, %d before", got, want)
	}
}
