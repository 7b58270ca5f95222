package query_test

import (
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/internal/vector"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections/projtest"
	"github.com/unlimitedcontext/ucl/query"
)

// spyVec records the sessions each session-restricted search asked for
// and the chunks it was asked to score.
type spyVec struct {
	*vecAdapter
	asked  map[string]bool
	scored map[string]bool
	calls  int
}

func (s *spyVec) ScoreVectors(ctx context.Context, q []float32, ids []string) ([]vector.Hit, error) {
	for _, id := range ids {
		s.scored[id] = true
	}
	return s.vecAdapter.ScoreVectors(ctx, q, ids)
}

func (s *spyVec) SearchVectorIn(ctx context.Context, q []float32, k int, sessions []string) ([]vector.Hit, bool, error) {
	s.calls++
	for _, x := range sessions {
		s.asked[x] = true
	}
	return s.vecAdapter.SearchVectorIn(ctx, q, k, sessions)
}

// keptVec is the oracle: a searcher without SearchVectorIn or
// ScoreVectors whose every search is the exact ranking of all live
// vectors cut to the kept sessions and the chunks scored one by one, so
// the engine's post-filter sees the true top k of those.
type keptVec struct {
	v       *vecAdapter
	keep    map[string]bool
	keepIDs map[string]bool
}

func (o *keptVec) cut(hits []vector.Hit, k int) []vector.Hit {
	var out []vector.Hit
	for _, h := range hits {
		if in, ok := o.v.info[h.ID]; ok && (o.keep[in.session] || o.keepIDs[h.ID]) && len(out) < k {
			out = append(out, h)
		}
	}
	return out
}

func (o *keptVec) SearchText(ctx context.Context, text string, k int) ([]vector.Hit, error) {
	hits, err := o.v.idx.Search(o.v.emb.EmbedOne(text), o.v.idx.Len())
	return o.cut(hits, k), err
}

func (o *keptVec) EmbedQuery(ctx context.Context, text string, weight func(string) float64) ([]float32, error) {
	return o.v.EmbedQuery(ctx, text, weight)
}

func (o *keptVec) SearchVector(ctx context.Context, q []float32, k int) ([]vector.Hit, error) {
	hits, err := o.v.idx.Search(q, o.v.idx.Len())
	return o.cut(hits, k), err
}

// TestSessionVectorsInIsExactWithinSessions: under a session filter (the
// request's, or the L0 pre-filter's, with BM25's candidates outside its
// sessions scored one by one) the engine's responses equal those of an
// oracle whose ANN channel is the exact ranking cut to the sessions that
// were searched and the chunks that were scored, over a stream with
// tombstones; with an unknown session nothing comes back.
func TestSessionVectorsInIsExactWithinSessions(t *testing.T) {
	f := newFixture(t, t.TempDir())
	f.apply(t, projtest.Generate(projtest.Config{Seed: 5, N: 3000, Vocab: 3000}))
	stores := 0
	for _, ev := range f.evs {
		if _, ok := ev.Body.(*log.Store); ok {
			stores++
		}
	}
	if len(f.vec.info) >= stores {
		t.Fatalf("%d live of %d stored: no tombstone in the stream", len(f.vec.info), stores)
	}
	infos, err := f.tl.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	opts := query.Options{PrefilterAbove: 100, PrefilterSessions: 3, LexicalANNSearch: true}
	r := rand.New(rand.NewSource(9))
	ctx := context.Background()
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	results, merged := 0, 0
	for i := 0; i < 60; i++ {
		req := query.Request{Text: projtest.QueryText(r), K: 10, Now: now, Explain: true}
		req.Mode = []query.Mode{query.ModeHybrid, query.ModeVector}[i%2]
		if i%3 == 0 {
			req.Sessions = []string{infos[r.Intn(len(infos))].ID, infos[r.Intn(len(infos))].ID}
		} // else the pre-filter picks the sessions
		spy := &spyVec{vecAdapter: f.vec, asked: map[string]bool{}, scored: map[string]bool{}}
		a, err := query.New(query.Sources{Chunks: f.tl, Text: f.ft, Vectors: spy, Sessions: f.sum}, opts).Search(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if spy.calls == 0 && req.Sessions == nil && a.Prefilter == nil {
			continue // the summaries matched nothing: no pre-filter
		}
		if spy.calls == 0 {
			t.Fatalf("%+v: no session-restricted search", req)
		}
		if len(spy.asked) > len(a.Prefilter)+2 {
			t.Fatalf("%+v: searched %d sessions, the pre-filter kept %d", req, len(spy.asked), len(a.Prefilter))
		}
		for id := range spy.scored {
			if in := f.vec.info[id]; spy.asked[in.session] {
				t.Fatalf("%+v: %s scored one by one, but its session was searched", req, id)
			}
			merged++ // a BM25 candidate outside the kept sessions
		}
		oracle := &keptVec{v: f.vec, keep: spy.asked, keepIDs: spy.scored}
		b, err := query.New(query.Sources{Chunks: f.tl, Text: f.ft, Vectors: oracle, Sessions: f.sum}, opts).Search(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%+v: responses differ:\n%s\n%s", req, fmt.Sprint(a.Results), fmt.Sprint(b.Results))
		}
		for _, res := range a.Results {
			if _, live := f.vec.info[res.ChunkID]; !live {
				t.Fatalf("%s returned but not live", res.ChunkID)
			}
		}
		results += len(a.Results)
	}
	if results == 0 || merged == 0 {
		t.Fatalf("nothing compared: %d results, %d candidates scored outside the kept sessions", results, merged)
	}
	resp, err := query.New(query.Sources{Chunks: f.tl, Text: f.ft, Vectors: f.vec}, opts).Search(ctx,
		query.Request{Text: projtest.QueryText(r), K: 10, Now: now, Mode: query.ModeVector, Sessions: []string{"no-such-session"}})
	if err != nil || len(resp.Results) != 0 {
		t.Fatalf("unknown session: %v, %d results", err, len(resp.Results))
	}
}

func (o *keptVec) Lexical() bool { return o.v.Lexical() }
