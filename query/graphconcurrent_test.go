package query_test

import (
	"context"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/projections/projstd"
	"github.com/unlimitedcontext/ucl/projections/projtest"
	"github.com/unlimitedcontext/ucl/query"
)

// waitingVectors is the vector projection without its SubsetDecliner
// answer: the engine then defers the ANN search until BM25's sessions are
// known, as it must for a searcher that may search a subset.
type waitingVectors struct{ *projstd.VectorProjection }

func (waitingVectors) DeclinesSubsets() bool { return false }

// Once the graph serves, the vector projection declines every session
// subset, so with the L0 pre-filter on the engine runs the ANN search
// concurrently with BM25 instead of after it. The responses must be the
// ones of the deferred search, request for request.
func TestGraphANNConcurrentWithBM25SameAnswer(t *testing.T) {
	l, set, _ := generatedSet(t, 22, projstd.Options{Vectors: projstd.VectorOptions{Graph: true, ExactBelow: 500}})
	defer set.Close()
	ctx := context.Background()
	if !set.Vectors.DeclinesSubsets() {
		t.Fatal("the graph does not serve: the test needs the live count above ExactBelow")
	}
	infos, err := set.Timelines.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	opts := query.Options{PrefilterAbove: 100, PrefilterSessions: 3}
	concurrent := query.New(query.Sources{Chunks: set.Timelines, Text: set.FTS, Vectors: set.Vectors, Sessions: set.Summary, Log: l}, opts)
	deferred := query.New(query.Sources{Chunks: set.Timelines, Text: set.FTS, Vectors: waitingVectors{set.Vectors}, Sessions: set.Summary, Log: l}, opts)
	r := rand.New(rand.NewSource(8))
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 30; i++ {
		req := query.Request{Text: projtest.QueryText(r), K: 10, Now: now, Explain: true}
		if i%3 == 0 {
			req.Sessions = []string{infos[r.Intn(len(infos))].ID}
		}
		want, err := deferred.Search(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := concurrent.Search(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("request %d %q: the concurrent ANN search answered differently:\n got %+v\nwant %+v", i, req.Text, got, want)
		}
	}
}
