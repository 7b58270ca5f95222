package query_test

import (
	"context"
	"testing"

	"github.com/unlimitedcontext/ucl/internal/vector"
	"github.com/unlimitedcontext/ucl/query"
)

// countingVec counts the test projection's full searches and candidate
// scorings.
type countingVec struct {
	*vecAdapter
	searches, scorings int
}

func (c *countingVec) SearchText(ctx context.Context, text string, k int) ([]vector.Hit, error) {
	c.searches++
	return c.vecAdapter.SearchText(ctx, text, k)
}

func (c *countingVec) SearchVector(ctx context.Context, q []float32, k int) ([]vector.Hit, error) {
	c.searches++
	return c.vecAdapter.SearchVector(ctx, q, k)
}

func (c *countingVec) SearchVectorIn(ctx context.Context, q []float32, k int, sessions []string) ([]vector.Hit, bool, error) {
	c.searches++
	return c.vecAdapter.SearchVectorIn(ctx, q, k, sessions)
}

func (c *countingVec) ScoreVectors(ctx context.Context, q []float32, ids []string) ([]vector.Hit, error) {
	c.scorings++
	return c.vecAdapter.ScoreVectors(ctx, q, ids)
}

// TestLexicalHybridScoresBM25Candidates: with lexical vectors, a hybrid
// query whose BM25 channel finds at least ten candidates scores those
// with the query vector and searches no vector (the ANN channel ranks
// only BM25's candidates, and the pre-filter does not run); with fewer,
// or with Options.LexicalANNSearch, or with vectors that are not lexical,
// or in vector mode, the channel searches every vector as before.
func TestLexicalHybridScoresBM25Candidates(t *testing.T) {
	f := meetingsFixture(t)
	run := func(t *testing.T, opts query.Options, text string, mode query.Mode, lexical bool) (*countingVec, *query.Response) {
		t.Helper()
		cv := &countingVec{vecAdapter: f.vec}
		var src query.VectorSearcher = cv
		if !lexical {
			src = learnedCounting{cv}
		}
		opts.PrefilterAbove, opts.PrefilterSessions = 10, 2
		e := query.New(query.Sources{Chunks: f.tl, Text: f.ft, Vectors: src, Sessions: f.sum}, opts)
		resp, err := e.Search(context.Background(), query.Request{Text: text, Now: now0, K: 40, Mode: mode, Explain: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Results) == 0 {
			t.Fatalf("%q: no result", text)
		}
		return cv, resp
	}
	many := "kitchen renovation budget meeting"
	cv, resp := run(t, query.Options{}, many, query.ModeHybrid, true)
	if cv.searches != 0 || cv.scorings != 1 {
		t.Fatalf("%q: %d searches, %d scorings; want 0, 1", many, cv.searches, cv.scorings)
	}
	if len(resp.Prefilter) != 0 {
		t.Fatalf("%q: the pre-filter ran (%v)", many, resp.Prefilter)
	}
	bm25, ann := 0, 0
	for _, r := range resp.Results {
		if r.Explain.BM25Rank > 0 {
			bm25++
		}
		if r.Explain.ANNRank > 0 {
			ann++
			if r.Explain.BM25Rank == 0 {
				t.Fatalf("%q: %s ranked by the ANN channel alone", many, r.ChunkID)
			}
		}
	}
	if bm25 < 10 || ann < 10 {
		t.Fatalf("%q: %d BM25 and %d ANN candidates among the results", many, bm25, ann)
	}
	for _, c := range []struct {
		name    string
		opts    query.Options
		text    string
		mode    query.Mode
		lexical bool
	}{
		{"few BM25 candidates", query.Options{}, "violinist", query.ModeHybrid, true},
		{"LexicalANNSearch", query.Options{LexicalANNSearch: true}, many, query.ModeHybrid, true},
		{"learned vectors", query.Options{}, many, query.ModeHybrid, false},
		{"vector mode", query.Options{}, many, query.ModeVector, true},
	} {
		cv, _ := run(t, c.opts, c.text, c.mode, c.lexical)
		if cv.searches != 1 {
			t.Errorf("%s: %d full searches, want 1", c.name, cv.searches)
		}
	}
}

// learnedCounting presents countingVec's vectors as a learned model's.
type learnedCounting struct{ *countingVec }

func (learnedCounting) Lexical() bool { return false }
