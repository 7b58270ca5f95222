package projstd

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/unlimitedcontext/ucl/internal/vector"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// An unweighted EmbedQuery then SearchVector finds what SearchText finds;
// word weights change the query, and a vector of the wrong dimension is
// refused.
func TestVectorsEmbedQueryAndSearchVector(t *testing.T) {
	v, err := OpenVectors(t.TempDir(), VectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	evs := projtest.Events(5, 200)
	for _, ev := range evs {
		if err := v.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	last := evs[len(evs)-1]
	if err := v.Commit(projections.Checkpoint{Seq: last.Seq, Hash: last.Hash}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const q = "cello practice database migration"
	want, err := v.SearchText(ctx, q, 10)
	if err != nil {
		t.Fatal(err)
	}
	qv, err := v.EmbedQuery(ctx, q, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.SearchVector(ctx, qv, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 || !reflect.DeepEqual(got, want) {
		t.Fatalf("SearchVector(EmbedQuery(q, nil)) = %v, SearchText(q) = %v", got, want)
	}
	wv, err := v.EmbedQuery(ctx, q, func(w string) float64 {
		if w == "cello" {
			return 3
		}
		return 1
	})
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(wv, qv) {
		t.Fatal("a word weight did not change the query vector")
	}
	if _, err := v.SearchVector(ctx, qv[:10], 10); !errors.Is(err, vector.ErrDimension) {
		t.Fatalf("short vector: err %v, want ErrDimension", err)
	}
}

// The projection reports its embedder's lexical capability, which the
// query engine gates on: the default (hash) is lexical, an HTTP model is
// not.
func TestVectorsLexical(t *testing.T) {
	v, err := OpenVectors(t.TempDir(), VectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if !v.Lexical() {
		t.Error("default (hash) vectors: Lexical false")
	}
	ht, err := vector.NewHTTPEmbedder(vector.HTTPOptions{Protocol: vector.ProtocolOllama, BaseURL: "http://127.0.0.1:1", Model: "m", Dim: 8})
	if err != nil {
		t.Fatal(err)
	}
	w, err := OpenVectors(t.TempDir(), VectorOptions{Embedder: ht})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.Lexical() {
		t.Error("HTTP model's vectors: Lexical true")
	}
}
