package projstd

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/unlimitedcontext/ucl/internal/fsutil"
	"github.com/unlimitedcontext/ucl/internal/vector"
	"github.com/unlimitedcontext/ucl/projections"
)

// The seam between the vector projection and its graph file (graph.bin,
// package vector's format): written streaming, opened by mapping it, so a
// process that answers one query reads the pages its search visits rather
// than decoding the whole graph (about 1.7 GB at a million chunks).

// openGraph returns the graph as of graph.bin (an empty one before the
// first save).
func (v *VectorProjection) openGraph() (*vector.HNSW, error) {
	if v.graphSize == 0 {
		return vector.NewHNSW(v.opts.Embedder.Dim(), v.opts.HNSW)
	}
	g, err := vector.OpenHNSWFile(filepath.Join(v.dir, "graph.bin"), v.opts.HNSW)
	if err != nil {
		return nil, fmt.Errorf("load vector graph: %w", err)
	}
	return g, nil
}

// writeGraph streams idx to path atomically and returns the bytes written.
func writeGraph(path string, idx vector.Index) (int64, error) {
	w, ok := idx.(io.WriterTo)
	if !ok {
		return 0, fmt.Errorf("write vector graph: %T cannot stream", idx)
	}
	var size int64
	err := fsutil.WriteAtomic(path, 0o600, func(f io.Writer) error {
		n, err := w.WriteTo(f)
		size = n
		return err
	})
	return size, err
}

// verifyGraph checks the whole graph file an index was opened from (the
// verification path reads everything anyway); damage is reported as such.
func (v *VectorProjection) verifyGraph(idx vector.Index) error {
	g, ok := idx.(interface{ VerifyFile() error })
	if !ok {
		return nil
	}
	err := g.VerifyFile()
	if err == nil {
		return nil
	}
	err = &projections.DamagedError{Projection: "vectors", Err: err}
	if merr := projections.MarkDamaged(v.dir, err.Error()); merr != nil {
		return errors.Join(err, merr)
	}
	return err
}

// searchIndex searches the loaded index: exactly below ExactBelow, through
// the graph above. A graph searched in place from its file meets damage as
// a failed bounds check: the panic is recovered and reported as damage
// (the engine rebuilds the projection).
func (v *VectorProjection) searchIndex(idx vector.Index, q []float32, k int) ([]vector.Hit, error) {
	var hits []vector.Hit
	err := projections.Guard("vectors", func() error {
		var err error
		if g, ok := idx.(exactSearcher); ok && idx.Len() < v.opts.ExactBelow {
			hits, err = g.SearchExact(q, k)
		} else {
			hits, err = idx.Search(q, k)
		}
		return err
	})
	if _, ok := projections.Damaged(err); ok {
		if merr := projections.MarkDamaged(v.dir, err.Error()); merr != nil {
			err = errors.Join(err, merr)
		}
	}
	return hits, err
}
