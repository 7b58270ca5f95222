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

// sortedSearch is the reference for Search: every match by score, mapped
// to its chunk id through the side table, sorted by score then chunk id.
func sortedSearch(t *testing.T, x *Index, text string, k int) []Hit {
	t.Helper()
	mq := bleve.NewMatchQuery(text)
	mq.SetField(fieldContent)
	bq := bleve.NewBooleanQuery()
	bq.AddMust(mq)
	req := bleve.NewSearchRequestOptions(bq, 1<<20, 0, false)
	ctx := context.WithValue(context.Background(), search.BM25StatsKey, &search.BM25Stats{
		DocCount: float64(x.nDocs),
		FieldCardinality: map[string]int{
			fieldContent: int(min(x.nWords, math.MaxInt32)),
			fieldSession: 1, fieldKind: 1, fieldRole: 1, fieldChunkParent: 1, fieldTime: 1, "*": 1, "_all": 1,
		},
	})
	res, err := x.idx.SearchInContext(ctx, req)
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

// Search's top-n windows give the sorted search's answer whether the tie
// at the K-th score fits the first window, the second, or only a later one: groups of identical turns of 5, 300 and 3,000
// documents, ids in an order unrelated to bleve's document numbers.
func TestSearchTieWindowsMatchSortedSearch(t *testing.T) {
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
	for _, g := range groups {
		for _, k := range []int{1, 7, 8, 10, 60} {
			got, err := x.Search(context.Background(), Query{Text: g.word, K: k})
			if err != nil {
				t.Fatal(err)
			}
			want := sortedSearch(t, x, g.word, k)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s k=%d:\n got %v\nwant %v", g.word, k, got, want)
			}
		}
	}
	if 3000 <= tieWindowStart*61*tieWindowGrowth || 300 <= tieWindowStart*11 || 300 > tieWindowStart*61*tieWindowGrowth {
		t.Fatalf("group sizes no longer cover the first, the second and a later window (%d×(K+1), ×%d)", tieWindowStart, tieWindowGrowth)
	}
}
