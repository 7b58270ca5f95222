package ucl

import (
	"context"
	"fmt"
	"strings"

	"github.com/unlimitedcontext/ucl/projections"
)

// statusLocked reports the projections; with digests it computes the
// digests the cache lacks, else it reports only cached ones (see
// ProjectionStatusRequest).
func (s *Store) statusLocked(digests bool) (*ProjectionsResult, error) {
	set, err := s.setLocked()
	if err != nil {
		return nil, err
	}
	status := set.Projector.StatusQuick
	if digests {
		status = set.Projector.StatusCached
	}
	st, err := status()
	if err != nil {
		return nil, err
	}
	return &ProjectionsResult{Projections: st}, nil
}

// CatchUp brings every projection to the log head and reports their status.
func (s *Store) CatchUp(ctx context.Context, req CatchUpRequest) (*ProjectionsResult, error) {
	s.lockProj()
	defer s.projMu.Unlock()
	if _, err := s.caughtUpLocked(ctx, req.Progress); err != nil {
		return nil, err
	}
	return s.statusLocked(req.Digests)
}

// ProjectionStatus reports each projection: checkpoint, digest (when
// computed, see ProjectionStatusRequest), size, lag.
func (s *Store) ProjectionStatus(ctx context.Context, req ProjectionStatusRequest) (*ProjectionsResult, error) {
	s.lockProj()
	defer s.projMu.Unlock()
	return s.statusLocked(req.Digests)
}

// RebuildProjections throws the named projections (nil: all) away and
// rebuilds them from the log.
func (s *Store) RebuildProjections(ctx context.Context, req RebuildProjectionsRequest) (*ProjectionsResult, error) {
	s.lockProj()
	defer s.projMu.Unlock()
	set, err := s.setLocked()
	if err != nil {
		return nil, err
	}
	if err := set.Projector.Rebuild(ctx, req.Only, req.Progress.stage("rebuild")); err != nil {
		return nil, err
	}
	return s.statusLocked(req.Digests)
}

// VerifyProjections catches the projections up, rebuilds every one in a
// temporary directory with the same options (embedder included) and
// compares digests. On a difference it returns the result and an error
// wrapping ErrProjectionsDiffer.
func (s *Store) VerifyProjections(ctx context.Context, req VerifyProjectionsRequest) (*VerifyProjectionsResult, error) {
	s.lockProj()
	defer s.projMu.Unlock()
	set, err := s.caughtUpLocked(ctx, req.Progress)
	if err != nil {
		return nil, err
	}
	mm, err := set.Verify(ctx, req.Progress.stage("verify"))
	if err != nil {
		return nil, err
	}
	// Verify computed the live digests and cached them: StatusCached
	// reads them back instead of a second pass over every projection.
	st, err := set.Projector.StatusCached()
	if err != nil {
		return nil, err
	}
	ds := make(map[string]string, len(st))
	for _, p := range st {
		ds[p.Name] = p.Digest
	}
	if mm == nil {
		mm = []projections.Mismatch{}
	}
	res := &VerifyProjectionsResult{OK: len(mm) == 0, Digests: ds, Mismatches: mm}
	if len(mm) > 0 {
		var names []string
		for _, m := range mm {
			names = append(names, fmt.Sprintf("%s (live %.12s, rebuilt %.12s)", m.Name, m.Live, m.Rebuilt))
		}
		return res, fmt.Errorf("project verify: %w: %s", ErrProjectionsDiffer, strings.Join(names, "; "))
	}
	return res, nil
}
