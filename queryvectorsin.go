package ucl

import (
	"github.com/unlimitedcontext/ucl/projections/projstd"
	"github.com/unlimitedcontext/ucl/query"
)

// Under a session filter (the L0 pre-filter above 50K chunks, or the
// request's) the ANN channel scores only the kept sessions' vectors when
// the vector projection can search a subset; this keeps a refactor from
// silently turning that back into a full scan.
var _ query.SessionVectorSearcher = (*projstd.VectorProjection)(nil)
