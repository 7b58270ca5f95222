package fts

import (
	"context"
	"math"
	"math/rand"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
)

// Search runs a query without sessions or filters as the bare match
// query, not inside the boolean query the other searches use: the hits
// and their scores must be the same to the bit, for every document that
// matches (one, two and three words, repeated words, stop words).
func TestLoneMatchQueryScoresAsWrapped(t *testing.T) {
	x := openT(t, t.TempDir(), Options{})
	applyAll(t, x, randomEvents(5, 1200), 0)
	r := rand.New(rand.NewSource(9))
	ctx := context.WithValue(context.Background(), search.BM25StatsKey, &search.BM25Stats{
		DocCount:         float64(x.nDocs),
		FieldCardinality: map[string]int{fieldContent: int(x.nWords)},
	})
	compared := 0
	for i := 0; i < 40; i++ {
		text := vocab[r.Intn(len(vocab))]
		for j := 0; j < i%4; j++ {
			text += " " + vocab[r.Intn(len(vocab))]
		}
		if i%7 == 0 {
			text += " the of"
		}
		mq := bleve.NewMatchQuery(text)
		mq.SetField(fieldContent)
		bq := bleve.NewBooleanQuery()
		bq.AddMust(mq)
		run := func(q query.Query) *bleve.SearchResult {
			t.Helper()
			req := bleve.NewSearchRequestOptions(q, 2000, 0, false)
			req.SortBy([]string{"-_score", "_id"})
			res, err := x.idx.SearchInContext(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		lone, wrapped := run(mq), run(bq)
		if len(lone.Hits) != len(wrapped.Hits) {
			t.Fatalf("%q: %d hits alone, %d wrapped", text, len(lone.Hits), len(wrapped.Hits))
		}
		for k := range lone.Hits {
			a, b := lone.Hits[k], wrapped.Hits[k]
			if a.ID != b.ID || math.Float64bits(a.Score) != math.Float64bits(b.Score) {
				t.Fatalf("%q hit %d: %s %v alone, %s %v wrapped", text, k, a.ID, a.Score, b.ID, b.Score)
			}
			compared++
		}
	}
	if compared < 1000 {
		t.Fatalf("only %d hits compared", compared)
	}
}
