package projections

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// PendingKeys holds hex ids' keys and any other key, answers for each,
// forgets deleted ones, and lists what it holds in byte order (hex keys,
// tag 0, before the others, tag 1) — across merges of its tail into its
// array and with the array's index (300K keys cross both).
func TestPendingKeys(t *testing.T) {
	p := NewPendingKeys()
	want := map[string]uint64{}
	r := rand.New(rand.NewSource(1))
	var keys [][]byte
	check := func(when string) {
		t.Helper()
		if p.Len() != len(want) {
			t.Fatalf("%s: len %d, want %d", when, p.Len(), len(want))
		}
		for i := 0; i < 2000; i++ {
			k := keys[r.Intn(len(keys))]
			v, ok := want[string(k)]
			if got, gok := p.Get(k); gok != ok || got != v {
				t.Fatalf("%s: get %x: %d %v, want %d %v", when, k, got, gok, v, ok)
			}
		}
	}
	for i := 0; i < 300_000; i++ {
		var k []byte
		switch {
		case i%1000 == 0:
			k = IDKey(fmt.Sprintf("chunk-%d", i))
		case i%10 == 9 && len(keys) > 0:
			k = keys[r.Intn(len(keys))] // again: in the tail, the array or deleted
		default:
			var id [16]byte
			r.Read(id[:])
			k = IDKey(fmt.Sprintf("%x", id))
		}
		if len(k) == 17 && i%5000 == 1 {
			k[1], k[2] = 0, 0 // the index's first bucket
		}
		keys = append(keys, k)
		if i%7 == 3 {
			p.Delete(k)
			delete(want, string(k))
		} else {
			p.Set(k, uint64(i))
			want[string(k)] = uint64(i)
		}
		if i%50_000 == 0 {
			check(fmt.Sprintf("after %d", i))
		}
	}
	check("at the end")
	if _, ok := p.Get(IDKey("chunk-missing")); ok {
		t.Fatal("a key never set is pending")
	}
	var prev []byte
	n := 0
	err := p.Each(func(k []byte, v uint64) error {
		if want[string(k)] != v {
			t.Fatalf("each: %x = %d, want %d", k, v, want[string(k)])
		}
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			t.Fatalf("each: %x before %x", prev, k)
		}
		prev = k
		n++
		return nil
	})
	if err != nil || n != len(want) {
		t.Fatalf("each: %d entries, %v; want %d", n, err, len(want))
	}
	stop := fmt.Errorf("stop")
	if err := p.Each(func([]byte, uint64) error { return stop }); err != stop {
		t.Fatalf("each returned %v, want fn's error", err)
	}
	check("after Each")
	p.Clear()
	if p.Len() != 0 {
		t.Fatal("Clear left keys")
	}
	if _, ok := p.Get(keys[1]); ok {
		t.Fatal("Clear left a key")
	}
}

// PendingKeys.Write puts every key into a bucket in key order, in
// transactions of at most PendingWindow keys, with end in the last one.
// When a window fails, the bucket holds exactly the keys of the windows
// that committed and p exactly the others (its array's index rebuilt: a
// lookup still finds each), and a second Write puts those.
func TestPendingKeysWrite(t *testing.T) {
	defer func(w int) { PendingWindow = w }(PendingWindow)
	PendingWindow = 20_000
	db, err := bolt.Open(filepath.Join(t.TempDir(), "w.db"), 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	name, mark := []byte("ids"), []byte("mark")
	if err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(name)
		if err == nil {
			err = b.Put(mark, nil) // deleted by end
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	p := NewPendingKeys()
	want := map[string]uint64{}
	r := rand.New(rand.NewSource(2))
	for i := range 150_000 {
		k := IDKey(fmt.Sprintf("other-%d", i))
		if i%100 != 0 {
			var id [16]byte
			r.Read(id[:])
			k = IDKey(fmt.Sprintf("%x", id))
		}
		p.Set(k, uint64(i))
		want[string(k)] = uint64(i)
	}
	failAt := 2*PendingWindow + 77 // the third window fails
	txs, ends, puts := 0, 0, 0
	update := func(fn func(*bolt.Tx) error) error { txs++; return db.Update(fn) }
	window := func(tx *bolt.Tx, kvs []KeyValue) error {
		if len(kvs) > PendingWindow || !slices.IsSortedFunc(kvs, func(a, b KeyValue) int { return bytes.Compare(a.Key, b.Key) }) {
			return fmt.Errorf("a window of %d keys, or not in order", len(kvs))
		}
		b := tx.Bucket(name)
		for _, kv := range kvs {
			if puts++; puts == failAt {
				return fmt.Errorf("put %d fails", puts)
			}
			if err := b.Put(kv.Key, binary.BigEndian.AppendUint64(nil, kv.Value)); err != nil {
				return err
			}
		}
		return nil
	}
	end := func(tx *bolt.Tx) error { ends++; return tx.Bucket(name).Delete(mark) }
	stored := func() map[string]uint64 {
		t.Helper()
		got := map[string]uint64{}
		if err := db.View(func(tx *bolt.Tx) error {
			return tx.Bucket(name).ForEach(func(k, v []byte) error {
				if !bytes.Equal(k, mark) {
					got[string(k)] = binary.BigEndian.Uint64(v)
				}
				return nil
			})
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}

	if err := p.Write(update, window, end); err == nil {
		t.Fatal("a failing put: Write returned nil")
	}
	got := stored()
	if txs != 3 || ends != 0 || len(got) != 2*PendingWindow || p.Len() != len(want)-len(got) {
		t.Fatalf("after a failed window: %d transactions, %d ends, %d keys stored, %d pending; want 3, 0, %d, %d",
			txs, ends, len(got), p.Len(), 2*PendingWindow, len(want)-2*PendingWindow)
	}
	for k, v := range want {
		pv, pending := p.Get([]byte(k))
		sv, in := got[k]
		if pending == in || pending && pv != v || in && sv != v {
			t.Fatalf("key %x: pending %v (%d), stored %v (%d); want one of them, %d", k, pending, pv, in, sv, v)
		}
	}

	txs = 0
	if err := p.Write(update, window, end); err != nil {
		t.Fatal(err)
	}
	rest := len(want) - 2*PendingWindow
	if n := (rest + PendingWindow) / PendingWindow; txs != n || ends != 1 || p.Len() != 0 {
		t.Fatalf("second write: %d transactions, %d ends, %d pending; want %d, 1, 0", txs, ends, p.Len(), n)
	}
	got = stored()
	if len(got) != len(want) {
		t.Fatalf("%d keys stored, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("key %x stored as %d, want %d", k, got[k], v)
		}
	}
	if err := db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(name).Get(mark) != nil {
			return fmt.Errorf("end did not run in the last transaction")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
