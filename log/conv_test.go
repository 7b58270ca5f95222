package log

import (
	"errors"
	"reflect"
	"testing"
)

func TestStoreV2RoundTripAndCanonical(t *testing.T) {
	h := goldenHeader(TypeStore)
	s := &Store{Kind: KindToolCall, Session: "s", Role: "assistant", Content: "", Parent: "m1",
		Tool: &ToolCall{Name: "search", Args: `{"q":"x"}`, Status: "pending"}, Supersedes: []string{"old"}}
	b, err := EncodeBody(s, &h)
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != storeBodyV2 {
		t.Fatalf("version %d, want 2", b[0])
	}
	got, err := DecodeBody(TypeStore, b, &h)
	if err != nil {
		t.Fatal(err)
	}
	s.ChunkID, s.Time = h.ID.String(), h.Time
	if !reflect.DeepEqual(got, s) {
		t.Fatalf("round trip: %+v", got)
	}
	// A plain store is still v1, byte for byte.
	plain, err := EncodeBody(&Store{Kind: KindConversation, Content: "hi"}, &h)
	if err != nil || plain[0] != storeBodyVersion {
		t.Fatalf("plain store: version %d, %v", plain[0], err)
	}
	// v2 that uses no v2 field is not canonical.
	v2 := append([]byte{storeBodyV2}, plain[1:]...)
	if _, err := DecodeBody(TypeStore, v2, &h); !errors.Is(err, ErrMalformed) {
		t.Fatalf("v2 without v2 fields: %v", err)
	}
	// v1 with a v2 flag is unknown to v1.
	v1 := append([]byte{storeBodyVersion}, b[1:]...)
	if _, err := DecodeBody(TypeStore, v1, &h); !errors.Is(err, ErrMalformed) {
		t.Fatalf("v1 with tool flag: %v", err)
	}
}

func TestToolCallValidation(t *testing.T) {
	h := goldenHeader(TypeStore)
	for name, s := range map[string]*Store{
		"no name":       {Kind: KindToolCall, Content: "r", Tool: &ToolCall{Name: " "}},
		"args not json": {Kind: KindToolCall, Content: "r", Tool: &ToolCall{Name: "f", Args: "{oops"}},
		"wrong kind":    {Kind: KindConversation, Content: "r", Tool: &ToolCall{Name: "f"}},
		"self":          {ChunkID: "a", Kind: KindKnowledge, Content: "r", Supersedes: []string{"a"}},
		"repeated":      {Kind: KindKnowledge, Content: "r", Supersedes: []string{"a", "a"}},
	} {
		if _, err := EncodeBody(s, &h); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestEditBody(t *testing.T) {
	h := goldenHeader(TypeEdit)
	e := &Edit{Target: "c1", Prev: 3, By: "bob", Store: Store{ChunkID: "c1", Kind: KindConversation, Content: "v2", Time: 5}}
	b, err := EncodeBody(e, &h)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeBody(TypeEdit, b, &h)
	if err != nil || !reflect.DeepEqual(got, e) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	bad := &Edit{Target: "c1", Store: Store{ChunkID: "c2", Kind: KindConversation, Content: "x"}}
	if _, err := EncodeBody(bad, &h); !errors.Is(err, ErrMalformed) {
		t.Fatalf("edit of another chunk: %v", err)
	}
	if _, err := EncodeBody(&Edit{Store: Store{Kind: KindConversation, Content: "x"}}, &h); !errors.Is(err, ErrMalformed) {
		t.Fatalf("edit without target: %v", err)
	}
}

func TestTombstoneTrackerKillsEveryVersion(t *testing.T) {
	tr := NewTombstoneTracker()
	ev := func(seq uint64, b Body) *Event { return &Event{Header: Header{Seq: seq}, Body: b} }
	tr.Observe(ev(1, &Store{ChunkID: "d#0", ChunkParent: "d"}))
	tr.Observe(ev(2, &Store{ChunkID: "d#1", ChunkParent: "d", ChunkIndex: 1}))
	tr.Observe(ev(3, &Edit{Target: "d", Prev: 1, Removes: []string{"d#1"}, Store: Store{ChunkID: "d#0", ChunkParent: "d"}}))
	if d := tr.Dead(); len(d) != 0 {
		t.Fatalf("an edit killed %v", d)
	}
	if got := tr.Observe(ev(4, &Tombstone{Chunks: []string{"d#0"}})); !reflect.DeepEqual(got, []string{"d#0"}) {
		t.Fatalf("removed %v", got)
	}
	if d := tr.Dead(); d["d#0"] != 4 || d["d#1"] != 4 {
		t.Fatalf("dead %v: the dropped chunk of the old version must die with the item", d)
	}
}
