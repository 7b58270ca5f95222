package projstd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/internal/fsutil"
	"github.com/unlimitedcontext/ucl/internal/vector"
	"github.com/unlimitedcontext/ucl/projections"
)

// The seam between the vector projection and its graph files (package
// vector's formats):
//
//   - graph.bin, the whole graph as of some seq: written streaming (never
//     assembled in memory) and opened by mapping it, so a process that
//     answers one query reads the pages its search visits rather than
//     decoding the whole graph (about 1.7 GB at a million chunks).
//   - graph.delta, records appended after graph.bin (vector.WriteDelta):
//     every Commit that changed the graph appends one, so opening the graph
//     applies what changed instead of repeating the inserts' searches.
//     graph.bin is rewritten (and graph.delta emptied) once the records
//     reach a quarter of its size, which keeps the bytes written linear in
//     the graph's growth.
//
// The meta bucket's graph record is seq (uint64 BE), graph.bin's size and
// the valid length of graph.delta (the 16-byte record of earlier versions
// has no delta). Bytes of graph.delta beyond that length (a crash between
// the append and the record) are cut off before the next append. The
// operations after seq, in the ops bucket, are replayed on open.

func (v *VectorProjection) decodeGraphRecord(b []byte) error {
	if len(b) != 16 && len(b) != 24 {
		return fmt.Errorf("decode graph record: %w", errVectorsCorrupt)
	}
	v.graphOn = true
	v.graph, v.graphSize = binary.BigEndian.Uint64(b), int64(binary.BigEndian.Uint64(b[8:]))
	v.deltaSize = 0
	if len(b) == 24 {
		v.deltaSize = int64(binary.BigEndian.Uint64(b[16:]))
	}
	return nil
}

func (v *VectorProjection) graphRecord(seq uint64, size, delta int64) []byte {
	var g [24]byte
	binary.BigEndian.PutUint64(g[:], seq)
	binary.BigEndian.PutUint64(g[8:], uint64(size))
	binary.BigEndian.PutUint64(g[16:], uint64(delta))
	return g[:]
}

// checkGraphFiles checks the graph files' sizes against the record (their
// content is checked when the graph is loaded).
func (v *VectorProjection) checkGraphFiles() error {
	if v.graphSize > 0 {
		fi, err := os.Stat(filepath.Join(v.dir, "graph.bin"))
		if err != nil {
			return fmt.Errorf("open vector graph: %w", err)
		}
		if fi.Size() != v.graphSize {
			return fmt.Errorf("open vector graph: %d bytes, %d recorded: %w", fi.Size(), v.graphSize, errVectorsCorrupt)
		}
	}
	if v.deltaSize > 0 {
		fi, err := os.Stat(filepath.Join(v.dir, "graph.delta"))
		if err != nil {
			return fmt.Errorf("open vector graph delta: %w", err)
		}
		if fi.Size() < v.deltaSize {
			return fmt.Errorf("open vector graph delta: %d bytes, %d recorded: %w", fi.Size(), v.deltaSize, errVectorsCorrupt)
		}
	}
	return nil
}

// openGraph returns the graph as of the graph record: graph.bin mapped,
// with graph.delta's records applied (an empty graph before the first
// save).
func (v *VectorProjection) openGraph() (*vector.HNSW, error) {
	if v.graphSize == 0 {
		return vector.NewHNSW(v.opts.Embedder.Dim(), v.opts.HNSW)
	}
	g, err := vector.OpenHNSWFile(filepath.Join(v.dir, "graph.bin"), v.opts.HNSW)
	if err != nil {
		return nil, fmt.Errorf("load vector graph: %w", err)
	}
	if v.deltaSize > 0 {
		f, err := os.Open(filepath.Join(v.dir, "graph.delta"))
		if err != nil {
			return nil, fmt.Errorf("load vector graph delta: %w", err)
		}
		data := make([]byte, v.deltaSize)
		_, err = io.ReadFull(f, data)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("load vector graph delta: %w", err)
		}
		if err := g.ApplyDeltas(data); err != nil {
			return nil, fmt.Errorf("load vector graph delta: %w", err)
		}
	}
	return g, nil
}

// persistGraph saves the graph's changes since the last save. On a Commit
// (not force) that is a delta record while graph.bin exists and the
// records stay under a quarter of it, else a rewrite of graph.bin, which
// before the first one waits until GraphEvery operations, and a quarter of
// the live vectors, accumulate (the operations are in the database
// meanwhile). Flush (force: the engine closing after a bulk catch-up, a
// snapshot) rewrites graph.bin whenever records or operations are pending,
// so the next process maps one file and applies nothing: applying records
// costs about 6 ms of CPU per MB here (a `ucl query --mode vector` process
// on 300K chunks: 650 ms of CPU with a 60 MB graph.delta, 270 ms after the
// rewrite). The graph is loaded.
func (v *VectorProjection) persistGraph(force bool) error {
	if !v.graphOn || (v.sinceGraph == 0 && (!force || v.deltaSize == 0)) {
		return nil
	}
	g, ok := v.idx.(*vector.HNSW)
	if !ok {
		return fmt.Errorf("save vector graph: index is %T", v.idx)
	}
	if !force && v.graphSize > 0 && v.deltaSize <= v.graphSize/4 {
		err := v.appendDelta(g)
		if !errors.Is(err, vector.ErrNoDelta) {
			return err
		}
	} else if v.graphSize == 0 && !force && v.sinceGraph < max(v.opts.GraphEvery, v.live/4) {
		return nil
	}
	return v.saveGraph(g)
}

// appendDelta appends the changes since the last save to graph.delta and
// records them.
func (v *VectorProjection) appendDelta(g *vector.HNSW) error {
	f, err := os.OpenFile(filepath.Join(v.dir, "graph.delta"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("save vector graph delta: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(v.deltaSize); err != nil { // a torn record from a crash
		return fmt.Errorf("save vector graph delta: %w", err)
	}
	if _, err := f.Seek(v.deltaSize, io.SeekStart); err != nil {
		return fmt.Errorf("save vector graph delta: %w", err)
	}
	n, err := g.WriteDelta(f)
	if err != nil {
		if errors.Is(err, vector.ErrNoDelta) {
			return err
		}
		return fmt.Errorf("save vector graph delta: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("save vector graph delta: %w", err)
	}
	return v.recordGraph(v.graphSize, v.deltaSize+n)
}

// saveGraph writes graph.bin as of the checkpoint, records it, drops the
// operations it covers and graph.delta, and maps the new file (the heap
// copy of the graph is released; later saves are deltas against it).
func (v *VectorProjection) saveGraph(g *vector.HNSW) error {
	path := filepath.Join(v.dir, "graph.bin")
	var size int64
	err := fsutil.WriteAtomic(path, 0o600, func(f io.Writer) error {
		n, err := g.WriteTo(f)
		size = n
		return err
	})
	if err != nil {
		return fmt.Errorf("save vector graph: %w", err)
	}
	if err := v.recordGraph(size, 0); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(v.dir, "graph.delta")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("save vector graph: %w", err)
	}
	m, err := vector.OpenHNSWFile(path, v.opts.HNSW)
	if err != nil {
		return fmt.Errorf("save vector graph: reopen: %w", err)
	}
	v.idx = m
	return nil
}

// recordGraph records the graph files as of the checkpoint and drops the
// operations they cover.
func (v *VectorProjection) recordGraph(size, delta int64) error {
	seq := v.cp.Seq
	err := v.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bMeta).Put(kGraph, v.graphRecord(seq, size, delta)); err != nil {
			return err
		}
		c := tx.Bucket(bOps).Cursor()
		for k, _ := c.First(); k != nil && binary.BigEndian.Uint64(k) <= seq; k, _ = c.Next() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("save vector graph: %w", err)
	}
	v.graph, v.graphSize, v.deltaSize, v.sinceGraph = seq, size, delta, 0
	return nil
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
