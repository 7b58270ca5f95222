package fts

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"sort"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
)

// bm25Context carries x's BM25 statistics, as Search's.
func bm25Context(x *Index) context.Context {
	return context.WithValue(context.Background(), search.BM25StatsKey, &search.BM25Stats{
		DocCount: float64(x.nDocs),
		FieldCardinality: map[string]int{
			fieldContent: int(min(x.nWords, math.MaxInt32)),
			fieldSession: 1, fieldKind: 1, fieldRole: 1, fieldChunkParent: 1, fieldTime: 1, "*": 1, "_all": 1,
		},
	})
}

// sortedSearch is the reference for Search: every match by score, mapped
// to its chunk id through the side table, sorted by score then chunk id.
func sortedSearch(t *testing.T, x *Index, text string, k int) []Hit {
	t.Helper()
	mq := bleve.NewMatchQuery(text)
	mq.SetField(fieldContent)
	bq := bleve.NewBooleanQuery()
	bq.AddMust(mq)
	req := bleve.NewSearchRequestOptions(bq, 1<<20, 0, false)
	res, err := x.idx.SearchInContext(bm25Context(x), req)
	if err != nil {
		t.Fatal(err)
	}
	out := []Hit{}
	err = x.view(func(tx *bolt.Tx) error {
		for _, h := range res.Hits {
			key, _, err := splitRecord(tx.Bucket(bucketDocs).Get([]byte(h.ID)))
			if err != nil {
				return err
			}
			id, ok := projections.IDOfKey(key)
			if !ok {
				return fmt.Errorf("record at %x: chunk key %x", h.ID, key)
			}
			out = append(out, Hit{ChunkID: id, Score: h.Score})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].ChunkID < out[j].ChunkID
	})
	return out[:min(k, len(out))]
}

// Search gives the sorted search's answer whether the tie at the K-th
// score fits topK's first pass or takes the second: groups of identical
// turns of 5, 300 and 3,000 documents, ids in an order unrelated to
// bleve's document numbers; and topK never holds more candidates than its
// room, however large the tie.
func TestSearchTiesMatchSortedSearch(t *testing.T) {
	groups := []struct {
		word string
		n    int
	}{{"kestrel", 5}, {"osprey", 300}, {"heron", 3000}}
	var docs []string
	for _, g := range groups {
		for i := 0; i < g.n; i++ {
			docs = append(docs, g.word+" over the marsh")
		}
		// A few better matches above each group, and weaker ones below.
		for i := 0; i < 7; i++ {
			docs = append(docs, g.word+" "+g.word)
			docs = append(docs, g.word+" over the marsh at dusk with wind and rain")
		}
	}
	r := rand.New(rand.NewSource(5))
	var e evs
	for i, j := range r.Perm(len(docs)) {
		e.store(fmt.Sprintf("%08x", r.Uint32()), "s", "user", log.KindConversation, int64(i+1), docs[j])
	}
	x := openT(t, t.TempDir(), Options{})
	applyAll(t, x, e.out, 0)
	texts := []string{"marsh", "wind marsh", "rain over heron"}
	for _, g := range groups {
		texts = append(texts, g.word)
	}
	passes := map[bool]int{}
	for _, text := range texts {
		for _, k := range []int{1, 7, 8, 10, 60, 5000} {
			got, err := x.Search(context.Background(), Query{Text: text, K: k})
			if err != nil {
				t.Fatal(err)
			}
			want := sortedSearch(t, x, text, k)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%q k=%d:\n got %v\nwant %v", text, k, got, want)
			}
			// The same search through topK alone, for its peak, with the
			// default room (heron's tie takes the second pass) and with
			// room for 16, the least (every tie over 2(k+1) takes it).
			mq := bleve.NewMatchQuery(text)
			mq.SetField(fieldContent)
			for _, held := range []int{0, 16} {
				tk := &topK{k: k, held: held}
				err = x.view(func(tx *bolt.Tx) error {
					tk.dc = x.docChunks(tx, false)
					return tk.search(bm25Context(x), x.idx, mq)
				})
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(tk.hits, want) {
					t.Fatalf("%q k=%d held=%d through topK:\n got %v\nwant %v", text, k, held, tk.hits, want)
				}
				if tk.peak > tk.held {
					t.Fatalf("%q k=%d: topK held %d candidates, over %d", text, k, tk.peak, tk.held)
				}
				passes[tk.overflow]++
			}
		}
	}
	if passes[false] == 0 || passes[true] == 0 {
		t.Fatalf("searches in one pass and in two: %v; both must be covered", passes)
	}
}
