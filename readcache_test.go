package ucl

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// A warm store (its projections' read caches filled by earlier queries)
// answers exactly what a store opened fresh on the same directory answers
// (the determinism rule: same log + query + now => same output), after
// each kind of change behind the caches: an edit, a tombstone by id, by
// session and by time range, an append next to cached neighbours, a
// snapshot restore into the running store, and a key rotation that
// shreds the tombstoned events. No answer of the warm
// store holds the text of a tombstoned chunk.
func TestReadCacheWarmMatchesFresh(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	dir := s.Dir()
	var jsonl strings.Builder
	for i := 0; i < 30; i++ {
		role := []string{"user", "assistant"}[i%2]
		fmt.Fprintf(&jsonl, `{"type":"store","chunk_id":"c%02d","session":"s%d","role":"%s","content":"orchard note kiwi%02d about the orchard","time":"2023-05-%02dT10:%02d:00Z"}`+"\n",
			i, i/10, role, i, 8+i/10, i%10)
	}
	if _, err := s.Append(ctx, AppendRequest{JSONL: jsonl.String()}); err != nil {
		t.Fatal(err)
	}
	const now = "2023-06-01T00:00:00Z"
	answers := func(s *Store) string {
		t.Helper()
		var out []any
		for _, text := range []string{"orchard", "kiwi05 orchard", "kiwi07", "kiwi15 note", "kiwi21"} {
			r, err := s.Search(ctx, SearchRequest{Text: text, K: 40, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
			c, err := s.Context(ctx, ContextRequest{SearchRequest: SearchRequest{Text: text, K: 40, Now: now, Session: "s0"}, Budget: 3000, Recent: 3})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, c)
		}
		g, err := s.Get(ctx, GetRequest{IDs: []string{"c04", "c05", "c06", "c07", "c15", "c21", "c30"}})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, g)
		b, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var gone []string // markers of tombstoned chunks
	step := func(name string, change func(s *Store)) {
		t.Helper()
		answers(s) // warm the caches
		answers(s)
		change(s)
		warm := answers(s)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		var err error
		if s, err = Open(dir, Options{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if fresh := answers(s); warm != fresh {
			t.Fatalf("after %s: the warm store answers\n%s\na fresh one\n%s", name, warm, fresh)
		}
		for _, m := range gone {
			if strings.Contains(warm, m) {
				i := strings.Index(warm, m)
				t.Fatalf("after %s: the warm store's answers hold %q, tombstoned: ...%s...", name, m, warm[max(0, i-300):min(len(warm), i+100)])
			}
		}
	}
	step("an edit", func(s *Store) {
		if _, err := s.Edit(ctx, EditRequest{ID: "c05", Content: "orchard note kiwi05 revised", By: "test"}); err != nil {
			t.Fatal(err)
		}
	})
	step("a tombstone by id", func(s *Store) {
		if _, err := s.Tombstone(ctx, TombstoneRequest{Chunks: []string{"c07"}}); err != nil {
			t.Fatal(err)
		}
		gone = append(gone, "kiwi07 about")
	})
	step("an append", func(s *Store) {
		if _, err := s.Append(ctx, AppendRequest{JSONL: `{"type":"store","chunk_id":"c30","session":"s0","role":"user","content":"orchard note kiwi30","time":"2023-05-08T10:04:30Z"}` + "\n"}); err != nil {
			t.Fatal(err)
		}
	})
	step("a tombstone by session", func(s *Store) {
		if _, err := s.Tombstone(ctx, TombstoneRequest{Session: "s1"}); err != nil {
			t.Fatal(err)
		}
		for i := 10; i < 20; i++ {
			gone = append(gone, fmt.Sprintf("kiwi%02d about", i))
		}
	})
	step("a tombstone by time range", func(s *Store) {
		if _, err := s.Tombstone(ctx, TombstoneRequest{From: "2023-05-10T10:01:00Z", To: "2023-05-10T10:03:00Z"}); err != nil {
			t.Fatal(err)
		}
		gone = append(gone, "kiwi21 about", "kiwi22 about")
	})
	// A snapshot taken before a tombstone, restored into the running
	// store after it: the projections are swapped and the tombstone
	// replayed from the log.
	step("a snapshot restore", func(s *Store) {
		if _, err := s.SnapshotCreate(ctx, SnapshotCreateRequest{}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Tombstone(ctx, TombstoneRequest{Chunks: []string{"c04"}}); err != nil {
			t.Fatal(err)
		}
		gone = append(gone, "kiwi04 about")
		answers(s)
		if _, err := s.SnapshotRestore(ctx, SnapshotRestoreRequest{NoFallback: true}); err != nil {
			t.Fatal(err)
		}
	})
	step("a key rotation", func(s *Store) {
		if _, err := s.RotateKeys(ctx, RotateKeysRequest{}); err != nil {
			t.Fatal(err)
		}
	})
	if !strings.Contains(answers(s), "kiwi05 revised") || strings.Contains(answers(s), `"kiwi05 about`) {
		t.Fatal("the edit is not in the answers")
	}
}
