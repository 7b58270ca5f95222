package projections

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"
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
