package projections

import (
	"bytes"
	"fmt"
	"math/rand"
	"path/filepath"
	"sort"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// A bucket written through SortedWrites ends up exactly as one written
// op by op: random puts and deletes, repeated keys, deletes of missing
// keys, reads of buffered writes on the way.
func TestSortedWritesSameAsDirect(t *testing.T) {
	db, err := OpenBolt(filepath.Join(t.TempDir(), "x.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := rand.New(rand.NewSource(1))
	key := func() []byte { return fmt.Appendf(nil, "k%03d", r.Intn(300)) }
	for round := 0; round < 5; round++ {
		err := db.Update(func(tx *bolt.Tx) error {
			direct, err := tx.CreateBucketIfNotExists([]byte("direct"))
			if err != nil {
				return err
			}
			sb, err := tx.CreateBucketIfNotExists([]byte("sorted"))
			if err != nil {
				return err
			}
			w := NewSortedWrites(sb)
			for i := 0; i < 1000; i++ {
				k := key()
				if r.Intn(3) == 0 {
					if err := direct.Delete(k); err != nil {
						return err
					}
					if err := w.Delete(k); err != nil {
						return err
					}
				} else {
					v := fmt.Appendf(nil, "v%d-%d", round, i)
					if i%7 == 0 {
						v = nil
					}
					if err := direct.Put(k, v); err != nil {
						return err
					}
					if err := w.Put(k, v); err != nil {
						return err
					}
				}
				if k := key(); string(direct.Get(k)) != string(w.Get(k)) || (direct.Get(k) == nil) != (w.Get(k) == nil) {
					return fmt.Errorf("round %d op %d: get %s = %q buffered, %q direct", round, i, k, w.Get(k), direct.Get(k))
				}
			}
			if err := w.Flush(); err != nil {
				return err
			}
			var a, b []string
			direct.ForEach(func(k, v []byte) error { a = append(a, fmt.Sprintf("%s=%s", k, v)); return nil })
			sb.ForEach(func(k, v []byte) error { b = append(b, fmt.Sprintf("%s=%s", k, v)); return nil })
			if fmt.Sprint(a) != fmt.Sprint(b) {
				return fmt.Errorf("round %d: sorted bucket\n%v\nwant\n%v", round, b, a)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestSortByKeyMatchesSort: sorting by (first 8 bytes, place) and moving
// the elements along the permutation's cycles gives what sort.Slice by
// key gives, for string and []byte keys: random keys, keys sharing 8
// bytes or more, short keys, NUL bytes.
func TestSortByKeyMatchesSort(t *testing.T) {
	type elem struct {
		s string
		b []byte
		v int
	}
	r := rand.New(rand.NewSource(9))
	alphabet := "\x00\x01ab\xff"
	for round := 0; round < 500; round++ {
		n := r.Intn(300)
		es := make([]elem, n)
		seen := map[string]bool{}
		for i := range es {
			for {
				var b []byte
				if r.Intn(2) == 0 {
					b = append(b, "shared-prefix"[:r.Intn(14)]...)
				}
				for j := r.Intn(12); j > 0; j-- {
					b = append(b, alphabet[r.Intn(len(alphabet))])
				}
				if !seen[string(b)] {
					seen[string(b)] = true
					es[i] = elem{string(b), b, i}
					break
				}
			}
		}
		want := append([]elem(nil), es...)
		sort.Slice(want, func(i, j int) bool { return bytes.Compare(want[i].b, want[j].b) < 0 })
		byString := append([]elem(nil), es...)
		SortByKey(byString, func(e *elem) string { return e.s })
		byBytes := append([]elem(nil), es...)
		SortByKey(byBytes, func(e *elem) []byte { return e.b })
		for i := range want {
			if byString[i].v != want[i].v || byBytes[i].v != want[i].v {
				t.Fatalf("round %d, place %d: string keys give %q, []byte keys %q, sort.Slice %q",
					round, i, byString[i].s, byBytes[i].b, want[i].s)
			}
		}
	}
}
