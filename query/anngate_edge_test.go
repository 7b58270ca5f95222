package query_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/internal/vector"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections/fts"
	"github.com/unlimitedcontext/ucl/query"
)

// steepQuery's BM25 scores over meetingsFixture fall off steeply (28
// near-identical meeting notes, one violin lesson): the gate closes.
const steepQuery = "violin recital scales meeting"

// badText is a TextSearcher whose last hit scores bad.
type badText struct {
	ft  *fts.Index
	bad float64
}

func (b badText) Search(ctx context.Context, q fts.Query) ([]fts.Hit, error) {
	hs, err := b.ft.Search(ctx, q)
	if len(hs) > 0 {
		hs[len(hs)-1].Score = b.bad
	}
	return hs, err
}

// badVec is a lexical VectorSearcher whose first hit scores bad.
type badVec struct {
	v   *vecAdapter
	bad float32
}

func (b badVec) SearchText(ctx context.Context, text string, k int) ([]vector.Hit, error) {
	hs, err := b.v.SearchText(ctx, text, k)
	if len(hs) > 0 {
		hs[0].Score = b.bad
	}
	return hs, err
}

func (badVec) Lexical() bool { return true }

// TestNonFiniteScores: a channel's score that is not a number (a
// TextSearcher or VectorSearcher other than ucl's own may give one) does
// not make the other candidates' relevance, the ANN weight or the final
// scores NaN: the query still ranks, and its explained results encode as
// JSON.
func TestNonFiniteScores(t *testing.T) {
	f := meetingsFixture(t)
	for _, tc := range []struct {
		name string
		src  query.Sources
	}{
		{"bm25 NaN", query.Sources{Chunks: f.tl, Text: badText{f.ft, math.NaN()}, Vectors: f.vec, Sessions: f.sum}},
		{"bm25 +Inf", query.Sources{Chunks: f.tl, Text: badText{f.ft, math.Inf(1)}, Vectors: f.vec, Sessions: f.sum}},
		{"bm25 -Inf", query.Sources{Chunks: f.tl, Text: badText{f.ft, math.Inf(-1)}, Vectors: f.vec, Sessions: f.sum}},
		{"ann +Inf", query.Sources{Chunks: f.tl, Text: f.ft, Vectors: badVec{f.vec, float32(math.Inf(1))}, Sessions: f.sum}},
	} {
		for _, mode := range []query.Mode{query.ModeHybrid, query.ModeBM25, query.ModeVector} {
			e := query.New(tc.src, query.Options{})
			resp, err := e.Search(context.Background(), query.Request{Text: steepQuery, Now: now0, K: 40, Mode: mode, Explain: true})
			if err != nil {
				t.Fatalf("%s, %s: %v", tc.name, mode, err)
			}
			if len(resp.Results) == 0 {
				t.Fatalf("%s, %s: no results", tc.name, mode)
			}
			for _, r := range resp.Results {
				x := r.Explain
				for _, v := range []float64{r.Score, x.RRF, x.ANNWeight, x.Final, x.BM25Score, x.ANNScore} {
					if math.IsNaN(v) || math.IsInf(v, 0) {
						t.Fatalf("%s, %s: %s explains %+v", tc.name, mode, r.ChunkID, *x)
					}
				}
			}
			if _, err := json.Marshal(resp); err != nil {
				t.Errorf("%s, %s: %v", tc.name, mode, err)
			}
		}
	}
}

// oneVec is a lexical VectorSearcher that returns only its hit on id.
type oneVec struct {
	v  *vecAdapter
	id string
}

func (o oneVec) SearchText(ctx context.Context, text string, k int) ([]vector.Hit, error) {
	hs, err := o.v.SearchText(ctx, text, k)
	for _, h := range hs {
		if h.ID == o.id {
			return []vector.Hit{h}, err
		}
	}
	return nil, err
}

func (oneVec) Lexical() bool { return true }

// TestANNGateWithoutANNSpread: the gate reads BM25's scores, so it closes
// on a steep BM25 ranking also when the ANN channel returned a single
// candidate (no spread above its median, where the ANN score counts its
// ratio to the best: here the spelling variant BM25 misses): that candidate does not get the ungated weight.
func TestANNGateWithoutANNSpread(t *testing.T) {
	f := meetingsFixture(t)
	e := query.New(query.Sources{Chunks: f.tl, Text: f.ft, Vectors: oneVec{f.vec, "s29-1"}, Sessions: f.sum}, query.Options{})
	resp, err := e.Search(context.Background(), query.Request{Text: steepQuery, Now: now0, K: 40, Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	full := query.DefaultScoreWeights.ANN
	annOnly := 0
	for _, r := range resp.Results {
		x := r.Explain
		if x.ANNWeight >= full/2 {
			t.Fatalf("%s: ANN weight %v on a steep BM25 ranking, want below %v", r.ChunkID, x.ANNWeight, full/2)
		}
		if x.ANNRank > 0 && x.BM25Rank == 0 {
			annOnly++
			if x.RRF > x.ANNWeight+1e-12 {
				t.Errorf("%s (ANN only): relevance %v above the ANN weight %v", r.ChunkID, x.RRF, x.ANNWeight)
			}
		}
	}
	if annOnly != 1 {
		// "violinist" is a spelling variant BM25 does not match.
		t.Fatalf("%d ANN-only candidates, want 1 (s29-1): results %v", annOnly, ids(resp.Results))
	}
}

// TestANNWeightWithoutANN: a query whose ANN channel returned nothing
// (bm25 mode) explains ANN weight 0: no ANN score counted in it.
func TestANNWeightWithoutANN(t *testing.T) {
	f := meetingsFixture(t)
	for _, fusion := range []query.Fusion{query.FusionScore, query.FusionRRF} {
		e := f.engine(query.Options{Fusion: fusion})
		resp, err := e.Search(context.Background(), query.Request{Text: steepQuery, Now: now0, Mode: query.ModeBM25, Explain: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Results) == 0 {
			t.Fatalf("%s: no results", fusion)
		}
		for _, r := range resp.Results {
			if r.Explain.ANNWeight != 0 {
				t.Errorf("%s, bm25 mode: %s explains ANN weight %v, want 0", fusion, r.ChunkID, r.Explain.ANNWeight)
			}
		}
	}
}

// TestLoneANNInHybrid: in hybrid mode, a query no word of which BM25
// matches (a misspelling, with the typo channel off: by default it finds
// the word) leaves the ANN channel alone: it counts in full, as in vector
// mode, and ranks as vector mode does.
func TestLoneANNInHybrid(t *testing.T) {
	f := meetingsFixture(t)
	e := f.engine(query.Options{NoFuzzy: true})
	var got [2][]string
	for i, mode := range []query.Mode{query.ModeHybrid, query.ModeVector} {
		resp, err := e.Search(context.Background(), query.Request{Text: "violinnist", Now: now0, Mode: mode, Explain: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Results) == 0 {
			t.Fatalf("%s: no results", mode)
		}
		best := 0.0
		for _, r := range resp.Results {
			if r.Explain.BM25Rank != 0 {
				t.Fatalf("%s: %s has BM25 rank %d: the query must match no word", mode, r.ChunkID, r.Explain.BM25Rank)
			}
			if r.Explain.ANNWeight != 1 {
				t.Errorf("%s: %s explains ANN weight %v, want 1", mode, r.ChunkID, r.Explain.ANNWeight)
			}
			best = math.Max(best, r.Explain.RRF)
		}
		if best != 1 {
			t.Errorf("%s: best relevance %v, want 1", mode, best)
		}
		got[i] = ids(resp.Results)
	}
	if fmt.Sprint(got[0]) != fmt.Sprint(got[1]) {
		t.Errorf("hybrid %v, vector mode %v", got[0], got[1])
	}
}

// TestANNWeightUnderRRF: the gate is FusionScore's; under FusionRRF the
// ANN rank counts RRFWeights.ANN, steep BM25 scores or not, and Explain
// says so.
func TestANNWeightUnderRRF(t *testing.T) {
	f := meetingsFixture(t)
	o := query.Options{Fusion: query.FusionRRF}
	o.RRFWeights.BM25, o.RRFWeights.ANN = 1, 0.5
	resp, err := f.engine(o).Search(context.Background(), query.Request{Text: steepQuery, Now: now0, Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Results {
		x := r.Explain
		if x.ANNWeight != 0.5 {
			t.Fatalf("%s: ANN weight %v, want 0.5", r.ChunkID, x.ANNWeight)
		}
	}
}

// TestANNWeightOnNeighbours: the ANN weight is the query's, so a turn that
// came in only as a neighbour of a match (no channel returned it) explains
// the same weight as the matches.
func TestANNWeightOnNeighbours(t *testing.T) {
	bodies := []log.Body{
		&log.Store{ChunkID: "t1", Session: "c", Kind: log.KindConversation, Role: "user", Time: at(0), Content: "Where did you go for the cello lesson?"},
		&log.Store{ChunkID: "t2", Session: "c", Kind: log.KindConversation, Role: "assistant", Time: at(time.Minute), Content: "Downtown, near the river."},
	}
	for i := 0; i < 12; i++ {
		bodies = append(bodies, &log.Store{ChunkID: fmt.Sprintf("o%02d", i), Session: fmt.Sprintf("o%02d", i), Kind: log.KindConversation, Role: "user",
			Time: at(time.Duration(i+1) * time.Hour), Content: fmt.Sprintf("practice plan %d for the piano", i)})
	}
	f := newFixture(t, t.TempDir())
	f.apply(t, chain(t, bodies...))
	resp, err := f.engine(query.Options{}).Search(context.Background(), query.Request{Text: "cello lesson", Now: now0, K: 20, Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	var w float64
	adopted := false
	for _, r := range resp.Results {
		if r.ChunkID == "t1" {
			w = r.Explain.ANNWeight
		}
		if r.ChunkID == "t2" {
			adopted = r.Explain.BM25Rank == 0 && r.Explain.ANNRank == 0 && r.Explain.Neighbour > 0
		}
	}
	if !adopted || w <= 0 {
		t.Fatalf("want t1 matched (ANN weight %v > 0) and t2 only its neighbour: %v", w, ids(resp.Results))
	}
	for _, r := range resp.Results {
		if r.Explain.ANNWeight != w {
			t.Errorf("%s explains ANN weight %v, t1 %v: one query, one weight", r.ChunkID, r.Explain.ANNWeight, w)
		}
	}
}
