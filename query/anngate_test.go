package query_test

import (
	"context"
	"testing"

	"github.com/unlimitedcontext/ucl/query"
)

// learnedVec is the test adapter presenting its vectors as a learned
// model's: Options.ANNGate must leave them alone.
type learnedVec struct{ *vecAdapter }

func (learnedVec) Lexical() bool { return false }

// TestANNGate: with lexical vectors, a query whose BM25 scores fall off
// steeply counts the ANN score with less than its weight, and one whose
// BM25 scores are flat with all of it; vectors that are not lexical, or
// the gate switched off, always count the full weight; a lone channel
// counts 1.
func TestANNGate(t *testing.T) {
	f := meetingsFixture(t)
	weight := func(t *testing.T, src query.VectorSearcher, opts query.Options, text string, mode query.Mode) float64 {
		t.Helper()
		e := query.New(query.Sources{Chunks: f.tl, Text: f.ft, Vectors: src, Sessions: f.sum}, opts)
		resp, err := e.Search(context.Background(), query.Request{Text: text, Now: now0, K: 40, Mode: mode, Explain: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Results) == 0 || (mode == query.ModeHybrid && len(resp.Results) < 10) {
			t.Fatalf("%q: %d results", text, len(resp.Results))
		}
		w := resp.Results[0].Explain.ANNWeight
		for _, r := range resp.Results {
			if r.Explain.ANNWeight != w {
				t.Fatalf("%q: ANN weights %v and %v in one query", text, w, r.Explain.ANNWeight)
			}
		}
		return w
	}
	full := query.DefaultScoreWeights.ANN
	steep, flat := "violin recital scales meeting", "kitchen renovation budget meeting"
	if w := weight(t, f.vec, query.Options{}, steep, query.ModeHybrid); w >= full/2 {
		t.Errorf("lexical vectors, steep BM25 scores: ANN weight %v, want below %v", w, full/2)
	}
	if w := weight(t, f.vec, query.Options{}, flat, query.ModeHybrid); w != full {
		t.Errorf("lexical vectors, flat BM25 scores: ANN weight %v, want %v", w, full)
	}
	if w := weight(t, learnedVec{f.vec}, query.Options{}, steep, query.ModeHybrid); w != full {
		t.Errorf("learned vectors: ANN weight %v, want %v", w, full)
	}
	if w := weight(t, f.vec, query.Options{ANNGate: -1}, steep, query.ModeHybrid); w != full {
		t.Errorf("gate off: ANN weight %v, want %v", w, full)
	}
	if w := weight(t, f.vec, query.Options{}, steep, query.ModeVector); w != 1 {
		t.Errorf("vector mode: ANN weight %v, want 1", w)
	}
}
