package projections

import (
	"fmt"
	"math/rand"
	"path/filepath"
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
