package projections

import (
	"bytes"
	"fmt"
	"testing"
)

// PendingKeys holds hex ids' keys and any other key, answers for each,
// forgets deleted ones, and lists what it holds in byte order (hex keys,
// tag 0, before the others, tag 1).
func TestPendingKeys(t *testing.T) {
	p := NewPendingKeys()
	want := map[string]uint64{}
	for i := 0; i < 300; i++ {
		var k []byte
		if i%3 == 0 {
			k = IDKey(fmt.Sprintf("chunk-%d", i))
		} else {
			k = IDKey(fmt.Sprintf("%032x", uint64(i)*0x9e3779b97f4a7c15))
		}
		p.Set(k, uint64(i))
		want[string(k)] = uint64(i)
		if i%7 == 0 {
			p.Delete(k)
			delete(want, string(k))
		}
	}
	if p.Len() != len(want) {
		t.Fatalf("len %d, want %d", p.Len(), len(want))
	}
	for k, v := range want {
		if got, ok := p.Get([]byte(k)); !ok || got != v {
			t.Fatalf("get %x: %d %v, want %d", k, got, ok, v)
		}
	}
	if _, ok := p.Get(IDKey("chunk-0")); ok {
		t.Fatal("a deleted key is still pending")
	}
	s := p.Sorted()
	if len(s) != len(want) {
		t.Fatalf("sorted: %d entries, want %d", len(s), len(want))
	}
	for i, e := range s {
		if want[string(e.Key)] != e.Value {
			t.Fatalf("sorted entry %x = %d, want %d", e.Key, e.Value, want[string(e.Key)])
		}
		if i > 0 && bytes.Compare(s[i-1].Key, e.Key) >= 0 {
			t.Fatalf("sorted: %x before %x", s[i-1].Key, e.Key)
		}
	}
	p.Clear()
	if p.Len() != 0 {
		t.Fatal("Clear left keys")
	}
}
