package ucl

import (
	"github.com/unlimitedcontext/ucl/projections/fts"
	"github.com/unlimitedcontext/ucl/projections/projstd"
	"github.com/unlimitedcontext/ucl/query"
)

// The query engine weights the ANN query's words by their IDF only when
// the full-text projection counts words and the vector projection embeds
// weighted queries; these keep a refactor from silently turning that off.
var (
	_ query.DocFreqer     = (*fts.Index)(nil)
	_ query.VectorQuerier = (*projstd.VectorProjection)(nil)
)
