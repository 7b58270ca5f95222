package ucl

import (
	"context"
	"fmt"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/internal/snapgw"
	"github.com/unlimitedcontext/ucl/internal/store"
	"github.com/unlimitedcontext/ucl/snapshot"
)

// snapshotEnvLocked closes the projection set (snapshot creation and
// restore open the projections themselves) and returns the environment.
// The set reopens on next use.
func (s *Store) snapshotEnvLocked() (snapshot.Env, error) {
	if err := s.closeSetLocked(); err != nil {
		return snapshot.Env{}, err
	}
	o, err := s.projOptionsLocked()
	if err != nil {
		return snapshot.Env{}, err
	}
	return snapshot.Env{
		Log:     s.st.Log,
		LogID:   s.st.Meta.LogIDBytes(),
		Keys:    s.st.Keys,
		ProjDir: s.st.Path(store.ProjectionsDir),
		SnapDir: s.st.Path(store.SnapshotsDir),
		Set:     o,
	}, nil
}

// SnapshotCreate catches the projections up and snapshots them at the log
// head, then applies retention.
func (s *Store) SnapshotCreate(ctx context.Context, req SnapshotCreateRequest) (*snapshot.CreateResult, error) {
	if err := s.needKeys(); err != nil {
		return nil, err
	}
	s.lockProj()
	defer s.projMu.Unlock()
	env, err := s.snapshotEnvLocked()
	if err != nil {
		return nil, err
	}
	return snapshot.Create(ctx, env, snapshot.CreateOptions{Keep: req.Keep, Progress: snapshot.Progress(req.Progress)})
}

// SnapshotList lists the local snapshots, newest first (no vault key needed).
func (s *Store) SnapshotList(ctx context.Context, req SnapshotListRequest) (*SnapshotListResult, error) {
	l, err := snapshot.List(s.st.Path(store.SnapshotsDir))
	if err != nil {
		return nil, err
	}
	out := &SnapshotListResult{Snapshots: []SnapshotInfo{}}
	for _, in := range l {
		it := SnapshotInfo{Info: in}
		if in.Err != nil {
			it.Error = in.Err.Error()
		}
		out.Snapshots = append(out.Snapshots, it)
	}
	return out, nil
}

// SnapshotVerify checks a snapshot: manifest, archive hash, decryption
// (with the vault key) and the log at its seq. A failed check returns the
// result and the error.
func (s *Store) SnapshotVerify(ctx context.Context, req SnapshotVerifyRequest) (*SnapshotVerifyResult, error) {
	in, err := snapshot.Find(s.st.Path(store.SnapshotsDir), req.Name)
	if err != nil {
		return nil, err
	}
	o := snapshot.VerifyOptions{Log: s.st.Log, LogID: s.st.Meta.LogIDBytes(), Progress: req.Progress.stage("verify")}
	if s.st.Keys != nil {
		o.Keys = s.st.Keys
	}
	_, checks, verr := snapshot.Verify(ctx, in.Dir, o)
	res := &SnapshotVerifyResult{Name: in.Name, OK: verr == nil, Checks: checks}
	if verr != nil {
		res.Error = verr.Error()
		return res, fmt.Errorf("snapshot verify %s: %w", in.Name, verr)
	}
	return res, nil
}

// SnapshotRestore replaces the projections with a snapshot and replays the
// log after it; without a usable snapshot it rebuilds from the log unless
// req.NoFallback. A refusal leaves the projections unchanged.
func (s *Store) SnapshotRestore(ctx context.Context, req SnapshotRestoreRequest) (*snapshot.RestoreResult, error) {
	if err := s.needKeys(); err != nil {
		return nil, err
	}
	s.lockProj()
	defer s.projMu.Unlock()
	env, err := s.snapshotEnvLocked()
	if err != nil {
		return nil, err
	}
	res, err := snapshot.Restore(ctx, env, snapshot.RestoreOptions{Name: req.Name, Fallback: !req.NoFallback, Progress: snapshot.Progress(req.Progress)})
	if err != nil && snapshot.Refused(err) {
		return res, fmt.Errorf("%w; the projections were not changed", err)
	}
	return res, err
}

// SnapshotPublish uploads a snapshot to Arweave in transactions of at most
// req.PartSize bytes; one already complete on the gateway is not uploaded
// again.
func (s *Store) SnapshotPublish(ctx context.Context, req SnapshotPublishRequest) (*snapshot.PushResult, error) {
	// Through the store's bundler when its pushes go through one (the
	// wallet may hold no AR), in parts that stay free items.
	_, bundler, err := s.pushVia(PushRequest{})
	if err != nil {
		return nil, err
	}
	if req.PartSize == 0 {
		req.PartSize = snapshot.DefaultPartSize
		if bundler != "" {
			req.PartSize = BundlerSegmentBytes
		}
	}
	if req.PartSize < 1024 {
		return nil, badRequest("bad part size %d", req.PartSize)
	}
	w, err := s.wallet()
	if err != nil {
		return nil, err
	}
	cl, err := newClient(s.gatewayFor(req.Gateway), w)
	if err != nil {
		return nil, err
	}
	in, err := snapshot.Find(s.st.Path(store.SnapshotsDir), req.Name)
	if err != nil {
		return nil, err
	}
	g := snapgw.New(cl)
	if bundler != "" {
		b, err := arweave.NewBundler(bundler, arweaveOptions())
		if err != nil {
			return nil, fmt.Errorf("%v: %w", err, ErrBadRequest)
		}
		g = snapgw.NewBundled(cl, b)
	}
	return snapshot.Push(ctx, g, in.Dir, snapshot.PushOptions{PartSize: req.PartSize, Progress: req.Progress.stage("push")})
}
