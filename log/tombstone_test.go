package log

import (
	"reflect"
	"testing"
)

func TestTombstoneMatches(t *testing.T) {
	s := &Store{ChunkID: "c1", ChunkParent: "doc", Session: "s1", Time: 1500}
	for _, tc := range []struct {
		t    Tombstone
		want bool
	}{
		{Tombstone{Chunks: []string{"c1"}}, true},
		{Tombstone{Chunks: []string{"doc"}}, false}, // parents are expanded by the CLI
		{Tombstone{Chunks: []string{"c2"}}, false},
		{Tombstone{Session: "s1"}, true},
		{Tombstone{Session: "s2"}, false},
		{Tombstone{From: 1000, To: 2000}, true},
		{Tombstone{From: 1500, To: 2000}, true},
		{Tombstone{From: 1000, To: 1500}, false},
		{Tombstone{Session: "s1", From: 1000, To: 1400}, false},
		{Tombstone{Session: "s1", From: 1000, To: 1600}, true},
		{Tombstone{}, false},
	} {
		if got := tc.t.Matches(s); got != tc.want {
			t.Errorf("%+v: %v", tc.t, got)
		}
	}
}

func TestTombstoneTracker(t *testing.T) {
	tr := NewTombstoneTracker()
	ev := func(seq uint64, b Body) *Event { return &Event{Header: Header{Seq: seq}, Body: b} }
	tr.Observe(ev(1, &Store{ChunkID: "a", Session: "s"}))
	tr.Observe(ev(2, &Store{ChunkID: "b", Session: "s"}))
	tr.Observe(ev(3, &Store{ChunkID: "c", Session: "t"}))
	if got := tr.Observe(ev(4, &Tombstone{Session: "s"})); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("removed %v", got)
	}
	tr.Observe(ev(5, &Store{ChunkID: "d", Session: "s"})) // after the tombstone: live
	if d := tr.Dead(); len(d) != 2 || d["a"] != 4 || d["d"] != 0 {
		t.Fatalf("dead %v", d)
	}
}
