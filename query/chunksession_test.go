package query_test

import (
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/internal/vector"
	"github.com/unlimitedcontext/ucl/projections/projtest"
	"github.com/unlimitedcontext/ucl/query"
)

// vecSessions is the test adapter with the ChunkSessioner capability.
type vecSessions struct {
	*vecAdapter
	asked int
}

func (v *vecSessions) ChunkSession(id string) (string, bool) {
	v.asked++
	in, ok := v.info[id]
	return in.session, ok
}

// TestChunkSessionerKeepsResults checks that dropping ANN hits outside a
// session filter by the searcher's own session knowledge changes nothing:
// the same responses as looking every hit up, with user session filters
// and with the L0 pre-filter, over a stream with tombstones.
func TestChunkSessionerKeepsResults(t *testing.T) {
	f := newFixture(t, t.TempDir())
	f.apply(t, projtest.Generate(projtest.Config{Seed: 5, N: 3000}))
	with := &vecSessions{vecAdapter: f.vec}
	opts := query.Options{PrefilterAbove: 100, PrefilterSessions: 3}
	plain := query.New(query.Sources{Chunks: f.tl, Text: f.ft, Vectors: f.vec, Sessions: f.sum}, opts)
	fast := query.New(query.Sources{Chunks: f.tl, Text: f.ft, Vectors: with, Sessions: f.sum}, opts)
	infos, err := f.tl.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(8))
	results := 0
	for i := 0; i < 60; i++ {
		req := query.Request{Text: projtest.QueryText(r), K: 10, Now: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
		switch i % 3 {
		case 0:
			req.Session = infos[r.Intn(len(infos))].ID
		case 1:
			req.Sessions = []string{infos[r.Intn(len(infos))].ID, infos[r.Intn(len(infos))].ID}
		} // case 2: the pre-filter picks the sessions
		a := sameResponse(t, plain, fast, req)
		results += len(a.Results)
	}
	if with.asked == 0 || results == 0 {
		t.Fatalf("nothing compared: %d sessions asked, %d results", with.asked, results)
	}
}

// fullVec is the test adapter without SearchVectorIn: every ANN search
// covers the whole store and the engine filters the hits, as it does when
// the projection declines a subset or its graph serves.
type fullVec struct{ v *vecAdapter }

func (f *fullVec) SearchText(ctx context.Context, text string, k int) ([]vector.Hit, error) {
	return f.v.SearchText(ctx, text, k)
}

func (f *fullVec) EmbedQuery(ctx context.Context, text string, weight func(string) float64) ([]float32, error) {
	return f.v.EmbedQuery(ctx, text, weight)
}

func (f *fullVec) SearchVector(ctx context.Context, q []float32, k int) ([]vector.Hit, error) {
	return f.v.SearchVector(ctx, q, k)
}

func (f *fullVec) ScoreVectors(ctx context.Context, q []float32, ids []string) ([]vector.Hit, error) {
	return f.v.ScoreVectors(ctx, q, ids)
}

// fullVecSessions is fullVec with the ChunkSessioner capability.
type fullVecSessions struct{ fullVec }

func (f *fullVecSessions) ChunkSession(id string) (string, bool) {
	in, ok := f.v.info[id]
	return in.session, ok
}

// TestChunkSessionerKeepsResultsOnFullSearch: when the ANN search covers
// the whole store under the L0 pre-filter, a hit outside the kept sessions
// is dropped alike whether the searcher knows its session (dropped before
// any lookup) or the engine looks the chunk up: it never becomes a
// candidate through the ANN channel.
func TestChunkSessionerKeepsResultsOnFullSearch(t *testing.T) {
	f := newFixture(t, t.TempDir())
	f.apply(t, projtest.Generate(projtest.Config{Seed: 6, N: 3000}))
	opts := query.Options{PrefilterAbove: 100, PrefilterSessions: 2, LexicalANNSearch: true}
	plain := query.New(query.Sources{Chunks: f.tl, Text: f.ft, Vectors: &fullVec{f.vec}, Sessions: f.sum}, opts)
	fast := query.New(query.Sources{Chunks: f.tl, Text: f.ft, Vectors: &fullVecSessions{fullVec: fullVec{f.vec}}, Sessions: f.sum}, opts)
	infos, err := f.tl.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(10))
	results, prefiltered := 0, 0
	for i := 0; i < 60; i++ {
		// An active session: the pre-filter keeps it even when the
		// summaries match nothing.
		req := query.Request{Text: projtest.QueryText(r), K: 10, Now: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), Explain: true,
			Session: infos[r.Intn(len(infos))].ID}
		a := sameResponse(t, plain, fast, req)
		if a.Prefilter != nil {
			prefiltered++
		}
		results += len(a.Results)
	}
	if prefiltered == 0 || results == 0 {
		t.Fatalf("nothing compared: %d pre-filtered searches, %d results", prefiltered, results)
	}
}

// sameResponse runs req on both engines, fails the test when their
// responses differ, and returns the first one.
func sameResponse(t *testing.T, x, y *query.Engine, req query.Request) *query.Response {
	t.Helper()
	a, err := x.Search(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := y.Search(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("%+v: responses differ:\n%s\n%s", req, fmt.Sprint(a.Results), fmt.Sprint(b.Results))
	}
	return a
}

func (f *fullVec) Lexical() bool { return f.v.Lexical() }
