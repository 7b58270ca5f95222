package fts

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math/rand"
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/projections"
)

// TestIDsGroups checks the grouped "ids" bucket (format 9) against a map:
// hex ids crowded into a few groups (which split), hex counters (which
// share all but their last bytes: groups split down to the longest
// prefix) and other ids, put, overwritten and deleted at random over
// several transactions; every id reads back its seq (idsGet), and the
// cursor walks exactly the live ids in IDKey order with their seqs, as
// the one-key-per-chunk bucket of format 8 did.
func TestIDsGroups(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "ids.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := rand.New(rand.NewSource(1))
	var ids []string
	for i := 0; i < 400; i++ {
		var b [16]byte
		r.Read(b[:])
		b[0], b[1] = 0xab, byte(r.Intn(3)) // three groups of ~130
		if i%5 == 0 {
			b[1] = byte(r.Intn(256))
		}
		ids = append(ids, hex.EncodeToString(b[:]))
		if i%10 == 0 {
			ids = append(ids, "doc-"+hex.EncodeToString(b[:3])) // tag 1
		}
	}
	for i := 0; i < 700; i++ {
		var b [16]byte
		binary.BigEndian.PutUint64(b[8:], uint64(i))
		ids = append(ids, hex.EncodeToString(b[:]))
	}
	want := map[string]uint64{}
	for round := 0; round < 10; round++ {
		err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists(bucketIDs)
			if err != nil {
				return err
			}
			for i := 0; i < 600; i++ {
				id := ids[r.Intn(len(ids))]
				key := projections.IDKey(id)
				if r.Intn(3) == 0 {
					delete(want, id)
					if err := idsDelete(b, key); err != nil {
						return err
					}
					continue
				}
				seq := uint64(r.Int63())
				want[id] = seq
				if err := idsPut(b, key, seq); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		checkIDs(t, db, ids, want)
	}
	// The crowded groups split, the counters' down to the longest prefix.
	splits, longest := 0, 0
	db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketIDs).ForEach(func(k, v []byte) error {
			if k[0] == 0 {
				if bytes.Equal(v, idsSplit) {
					splits++
				}
				longest = max(longest, len(k))
			}
			return nil
		})
	})
	if splits < 2 || longest != idsMaxPrefix {
		t.Fatalf("%d groups split, longest group key %d bytes: want splits down to %d", splits, longest, idsMaxPrefix)
	}
}

func checkIDs(t *testing.T, db *bolt.DB, ids []string, want map[string]uint64) {
	t.Helper()
	err := db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketIDs)
		for _, id := range ids {
			v, err := idsGet(b, projections.IDKey(id))
			if err != nil {
				return err
			}
			seq, ok := want[id]
			if ok != (v != nil) || ok && binary.BigEndian.Uint64(v) != seq {
				t.Fatalf("id %s: got %x, want %d (live %v)", id, v, seq, ok)
			}
		}
		var keys [][]byte
		for id := range want {
			keys = append(keys, projections.IDKey(id))
		}
		slices.SortFunc(keys, bytes.Compare)
		c := newIDsCursor(b)
		i := 0
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if i >= len(keys) || !bytes.Equal(k, keys[i]) {
				t.Fatalf("entry %d: key %x, want the %d sorted keys' %d", i, k, len(keys), i)
			}
			id, _ := projections.IDOfKey(k)
			if binary.BigEndian.Uint64(v) != want[id] {
				t.Fatalf("key %x: seq %x, want %d", k, v, want[id])
			}
			i++
		}
		if i != len(keys) {
			t.Fatalf("cursor walked %d entries, want %d", i, len(keys))
		}
		return c.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestIDsGroupDamage: a group whose length is not a whole number of
// entries is a corrupt side table for reads, writes and the walk.
func TestIDsGroupDamage(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "ids.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key := projections.IDKey("00112233445566778899aabbccddeeff")
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(bucketIDs)
		if err != nil {
			return err
		}
		if err := idsPut(b, key, 5); err != nil {
			return err
		}
		return b.Put(key[:idsGroupLen], make([]byte, entryLen(idsGroupLen)+3))
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketIDs)
		if _, err := idsGet(b, key); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("get: %v", err)
		}
		if err := idsPut(b, key, 6); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("put: %v", err)
		}
		if err := idsDelete(b, key); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("delete: %v", err)
		}
		c := newIDsCursor(b)
		if k, _ := c.First(); k != nil || !errors.Is(c.Err(), ErrCorrupt) {
			t.Fatalf("walk: %x %v", k, c.Err())
		}
		return nil
	})
}
