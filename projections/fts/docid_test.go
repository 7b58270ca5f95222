package fts

import (
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
)

// TestWithMetaByChunkID: bleve's documents are keyed by seq (format 8),
// so WithMeta reads every match and keeps the smallest chunk ids. Chunks
// whose ids are in an order unrelated to their seqs carry one of three
// tags; some are overwritten with another tag or deleted, across several
// segments and a pending batch. For every limit the answer must be the
// model's sorted ids, cut at limit, with more set exactly when some were
// left out.
func TestWithMetaByChunkID(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	var e evs
	tags := map[string]string{} // live chunk -> tag
	var order []string
	store := func(id, tag string) {
		e.add(&log.Store{ChunkID: id, Session: "s", Role: "user", Kind: log.KindConversation, Time: int64(e.seq + 1),
			Content: "words " + id, Meta: map[string]string{"tag": tag, "n": fmt.Sprint(len(id))}})
		tags[id] = tag
	}
	for i := 0; i < 600; i++ {
		id := fmt.Sprintf("%08x", r.Uint32())
		order = append(order, id)
		store(id, []string{"a", "b", "c"}[r.Intn(3)])
	}
	for i := 0; i < 150; i++ {
		id := order[r.Intn(len(order))]
		if r.Intn(3) == 0 {
			e.add(&log.Tombstone{Chunks: []string{id}})
			delete(tags, id)
		} else {
			store(id, []string{"a", "b", "c"}[r.Intn(3)])
		}
	}
	x := openT(t, t.TempDir(), Options{BatchSize: 64})
	// Commit all but the last 100 events: the rest stay uncommitted, in
	// batches executed (Digest executes the last one) but not committed.
	applyAll(t, x, e.out[:len(e.out)-100], 97)
	for _, ev := range e.out[len(e.out)-100:] {
		if err := x.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := x.Digest(); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 2; round++ {
		for _, tag := range []string{"a", "b", "c", "none"} {
			var want []string
			for id, tg := range tags {
				if tg == tag {
					want = append(want, id)
				}
			}
			sort.Strings(want)
			for _, limit := range []int{1, 7, len(want) - 1, len(want), len(want) + 1, 5000} {
				if limit <= 0 {
					continue
				}
				got, more, err := x.WithMeta(context.Background(), map[string]string{"tag": tag}, limit)
				if err != nil {
					t.Fatal(err)
				}
				w := want[:min(limit, len(want))]
				if len(w) == 0 {
					w = nil
				}
				if !reflect.DeepEqual(got, w) || more != (len(want) > limit) {
					t.Fatalf("round %d tag %s limit %d: got %d ids (more %v), want %d (of %d)\n got %v\nwant %v",
						round, tag, limit, len(got), more, len(w), len(want), got, w)
				}
			}
		}
		if err := x.Commit(cpOf(e.out[len(e.out)-1])); err != nil {
			t.Fatal(err)
		}
	}
}
