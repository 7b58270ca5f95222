// Package projstd assembles ucl's standard projection set — timelines,
// full-text, L0 summaries and vectors — in one directory, one subdirectory
// per projection, driven by one projector. The CLI, snapshots and the
// Arweave rebuild all open projections through it, so every path builds the
// same set with the same options and reaches the same digests.
package projstd

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/unlimitedcontext/ucl/internal/fsutil"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/fts"
	"github.com/unlimitedcontext/ucl/projections/summary"
	"github.com/unlimitedcontext/ucl/projections/timelines"
)

// Options configure the set.
type Options struct {
	// Only restricts the set to these projection names (nil: all). Used by
	// tests and benchmarks that measure one projection.
	Only []string
	// Vectors configures the vector projection (embedder, index choice).
	Vectors VectorOptions
	// Projector options (commit interval, temp dir for verify).
	Projector projections.Options
}

// Set is an open projection set.
type Set struct {
	Dir       string
	Projector *projections.Projector
	Timelines *timelines.Timelines
	FTS       *fts.Index
	Summary   *summary.Index
	Vectors   *VectorProjection
}

// Names of the standard projections, in the order they are applied.
var Names = []string{"timelines", "fts", "summary", "vectors"}

func wanted(only []string, name string) bool {
	if len(only) == 0 {
		return true
	}
	for _, o := range only {
		if o == name {
			return true
		}
	}
	return false
}

// build opens the projections (not the projector) in dir.
func build(dir string, o Options) (*Set, []projections.Projection, error) {
	s := &Set{Dir: dir}
	var ps []projections.Projection
	fail := func(err error) (*Set, []projections.Projection, error) {
		for _, p := range ps {
			p.Close()
		}
		return nil, nil, err
	}
	if err := fsutil.MkdirAllSync(dir, 0o700); err != nil {
		return fail(err)
	}
	var err error
	if wanted(o.Only, "timelines") {
		if s.Timelines, err = timelines.Open(filepath.Join(dir, "timelines")); err != nil {
			return fail(fmt.Errorf("open timelines: %w", err))
		}
		ps = append(ps, s.Timelines)
	}
	if wanted(o.Only, "fts") {
		if s.FTS, err = fts.Open(filepath.Join(dir, "fts")); err != nil {
			return fail(fmt.Errorf("open fts: %w", err))
		}
		ps = append(ps, s.FTS)
	}
	if wanted(o.Only, "summary") {
		if s.Summary, err = summary.Open(filepath.Join(dir, "summary")); err != nil {
			return fail(fmt.Errorf("open summary: %w", err))
		}
		ps = append(ps, s.Summary)
	}
	if wanted(o.Only, "vectors") {
		if s.Vectors, err = OpenVectors(filepath.Join(dir, "vectors"), o.Vectors); err != nil {
			return fail(fmt.Errorf("open vectors: %w", err))
		}
		ps = append(ps, s.Vectors)
	}
	return s, ps, nil
}

// Open opens the set in dir, fed by src. It does not catch up: call
// CatchUp (or Projector.CatchUp with progress).
func Open(dir string, src projections.Source, o Options) (*Set, error) {
	s, ps, err := build(dir, o)
	if err != nil {
		return nil, err
	}
	if s.Projector, err = projections.NewProjector(src, ps, o.Projector); err != nil {
		for _, p := range ps {
			p.Close()
		}
		return nil, err
	}
	return s, nil
}

// Builder returns a constructor of fresh projections for Projector.Verify.
func Builder(o Options) func(dir string) ([]projections.Projection, error) {
	return func(dir string) ([]projections.Projection, error) {
		_, ps, err := build(dir, o)
		return ps, err
	}
}

// CatchUp brings every projection to the source's head.
func (s *Set) CatchUp(ctx context.Context, progress func(done, total uint64)) error {
	return s.Projector.CatchUp(ctx, progress)
}

// Close closes every projection.
func (s *Set) Close() error { return s.Projector.Close() }
