package ucl

import (
	"context"
	"testing"
)

// Get with Meta finds live items by a meta pair whatever their session
// (none included), through the full-text index's meta terms; a tombstoned
// one is gone; the same through the socket.
func TestGetByMeta(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	var ids []string
	for _, r := range []RememberRequest{
		{Content: "Deploy notes for the cluster.", Kind: "document", Meta: map[string]string{"name": "notes.md"}},
		{Content: "Other notes, in a session.", Session: "s1", Kind: "document", Meta: map[string]string{"name": "notes.md"}},
		{Content: "Not this one.", Kind: "document", Meta: map[string]string{"name": "other.md"}},
	} {
		res, err := s.Remember(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		id := res.Results[0].ChunkID
		if id == "" {
			id = res.Results[0].ID.String()
		}
		ids = append(ids, id)
	}
	for _, api := range []API{s, serve(t, s)} {
		res, err := api.Get(ctx, GetRequest{Meta: map[string]string{"name": "notes.md"}})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, it := range res.Items {
			if it.Found {
				got[it.ID] = true
			}
		}
		if len(got) != 2 || !got[ids[0]] || !got[ids[1]] || res.More {
			t.Fatalf("%T: found %v (more %v), want %s and %s", api, got, res.More, ids[0], ids[1])
		}
	}
	if _, err := s.Tombstone(ctx, TombstoneRequest{Chunks: []string{ids[0]}}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Get(ctx, GetRequest{Meta: map[string]string{"name": "notes.md"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 || res.Items[0].ID != ids[1] {
		t.Fatalf("after the tombstone: %+v", res.Items)
	}
}
