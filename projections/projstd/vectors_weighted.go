package projstd

import (
	"context"
	"fmt"

	"github.com/unlimitedcontext/ucl/internal/vector"
)

// EmbedQuery embeds a query with its words weighted (see
// vector.WeightedEmbedder; the query engine passes each word's IDF). An
// embedder without the capability embeds the text as SearchText does.
// Only query vectors change: the stored vectors, the index and the
// projection digest do not depend on it.
func (v *VectorProjection) EmbedQuery(ctx context.Context, text string, weight func(word string) float64) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("embed query: %w", err)
	}
	if we, ok := v.opts.Embedder.(vector.WeightedEmbedder); ok {
		return we.EmbedWeighted(text, weight), nil
	}
	vs, err := v.opts.Embedder.Embed(ctx, []string{text})
	if err != nil {
		return nil, fmt.Errorf("embed query: %w", err)
	}
	return vs[0], nil
}

// SearchVector returns the k nearest live chunks of q (a vector of the
// projection's embedder, as EmbedQuery returns), as SearchText does.
func (v *VectorProjection) SearchVector(ctx context.Context, q []float32, k int) ([]vector.Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("search vectors: %w", err)
	}
	if len(q) != v.opts.Embedder.Dim() {
		return nil, fmt.Errorf("search vectors: %d dimensions, want %d: %w", len(q), v.opts.Embedder.Dim(), vector.ErrDimension)
	}
	return v.searchVec(q, k)
}

// Lexical reports whether the projection's embedder is lexical
// (vector.LexicalEmbedder): the query engine weighs its scores by that.
func (v *VectorProjection) Lexical() bool { return vector.IsLexical(v.opts.Embedder) }
