package projections

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// fillOf is the share of bucket name's leaf pages its entries hold.
func fillOf(t *testing.T, db *bolt.DB, name string) float64 {
	t.Helper()
	var s bolt.BucketStats
	if err := db.View(func(tx *bolt.Tx) error { s = tx.Bucket([]byte(name)).Stats(); return nil }); err != nil {
		t.Fatal(err)
	}
	return float64(s.LeafInuse) / float64(s.LeafAlloc)
}

// writeRounds puts n keys a round for rounds transactions through
// SortedWrites (FillAppends when fill) into bucket name; at(round, i)
// gives the key number.
func writeRounds(t *testing.T, db *bolt.DB, name string, fill bool, rounds, n int, at func(round, i int) int) {
	t.Helper()
	for round := 0; round < rounds; round++ {
		err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte(name))
			if err != nil {
				return err
			}
			w := NewSortedWrites(b)
			if fill {
				w.FillAppends()
			}
			for i := 0; i < n; i++ {
				if err := w.Put(fmt.Appendf(nil, "k%09d", at(round, i)), make([]byte, 40)); err != nil {
					return err
				}
			}
			return w.Flush()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// A bucket whose flushes only append fills its pages with FillAppends
// (and half of them without); a flush that inserts between keys keeps
// bbolt's split, so the pages it splits in the middle keep room. Either
// way the contents are the same, and BoltLoose tells the two files apart.
func TestFillAppendsAndBoltLoose(t *testing.T) {
	db, err := OpenBolt(filepath.Join(t.TempDir(), "x.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	seq := func(round, i int) int { return round*5000 + i }
	writeRounds(t, db, "full", true, 10, 5000, seq)
	writeRounds(t, db, "half", false, 10, 5000, seq)
	if f := fillOf(t, db, "full"); f < 0.95 {
		t.Fatalf("appended with FillAppends: pages %.2f full", f)
	}
	if f := fillOf(t, db, "half"); f > 0.6 {
		t.Fatalf("appended without FillAppends: pages %.2f full, want about half", f)
	}
	// Keys between the ones stored: FillAppends leaves the split alone.
	r := rand.New(rand.NewSource(1))
	perm := r.Perm(50000)
	// (a first transaction writes the last key: no flush appends.)
	last := func(int, int) int { return 999999999 }
	writeRounds(t, db, "mid", true, 1, 1, last)
	writeRounds(t, db, "midref", false, 1, 1, last)
	between := func(round, i int) int { return 100000 + perm[round*5000+i] }
	writeRounds(t, db, "mid", true, 10, 5000, between)
	writeRounds(t, db, "midref", false, 10, 5000, between)
	if a, b := fillOf(t, db, "mid"), fillOf(t, db, "midref"); a != b {
		t.Fatalf("inserts between keys: pages %.3f full with FillAppends, %.3f without", a, b)
	}
	err = db.View(func(tx *bolt.Tx) error {
		var a, b []string
		for name, out := range map[string]*[]string{"full": &a, "half": &b} {
			if err := tx.Bucket([]byte(name)).ForEach(func(k, v []byte) error { *out = append(*out, string(k)+"="+string(v)); return nil }); err != nil {
				return err
			}
		}
		if len(a) != 50000 || fmt.Sprint(a) != fmt.Sprint(b) {
			return fmt.Errorf("contents differ: %d and %d entries", len(a), len(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// A file of the full bucket alone is tight; with the half-full one
	// beside it, loose.
	tight, err := OpenBolt(filepath.Join(t.TempDir(), "tight.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tight.Close()
	writeRounds(t, tight, "full", true, 10, 5000, seq)
	if loose, err := BoltLoose(tight); err != nil || loose {
		t.Fatalf("file of full pages: loose %v, %v", loose, err)
	}
	writeRounds(t, tight, "half", false, 10, 5000, seq)
	if loose, err := BoltLoose(tight); err != nil || !loose {
		t.Fatalf("file with a half-full bucket: loose %v, %v", loose, err)
	}
}
