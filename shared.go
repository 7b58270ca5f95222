package ucl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/snapshot"
)

// SharedOptions configure OpenShared.
type SharedOptions struct {
	// Serve makes this process serve the store on DIR/ucl.sock whenever it
	// is the owner, so that other processes attach to it (a long-lived
	// front end: ucl mcp). A one-shot command leaves it unset.
	Serve bool
	// Log receives one line each time ownership changes (nil: none).
	Log io.Writer
	// Name prefixes those lines (e.g. "ucl mcp").
	Name string
}

// Shared is the one way a front end holds a store it may not own: it
// attaches to the owner's socket when a process serves the store, else
// opens the store itself (and, with SharedOptions.Serve, serves it). When
// the owner exits, the next call takes over: only a refused connection
// counts (OwnerGone: the request was not sent, so running it again cannot
// apply it twice); then it attaches again — opening the store if nobody
// else took it first — and runs the call once more. Any number of editors
// and terminals share one memory this way, whichever started first.
// Shared implements API.
type Shared struct {
	dir  string
	opts Options
	so   SharedOptions

	mu    sync.Mutex
	api   API
	owner *Store
	stop  func() error // stops serving (Serve set and this process owns)
}

var _ API = (*Shared)(nil)

// OpenShared attaches to the owner of the store in dir or becomes it.
func OpenShared(dir string, o Options, so SharedOptions) (*Shared, error) {
	if so.Log == nil {
		so.Log = io.Discard
	}
	if so.Name == "" {
		so.Name = "ucl"
	}
	s := &Shared{dir: dir, opts: o, so: so}
	if err := s.attachLocked(); err != nil {
		return nil, err
	}
	return s, nil
}

// attachLocked (s.mu held, or not yet shared) attaches or opens, and
// starts serving when this process became the owner and Serve is set.
func (s *Shared) attachLocked() error {
	api, err := Attach(s.dir, s.opts)
	if err != nil {
		return err
	}
	s.api = api
	if st, ok := api.(*Store); ok {
		s.owner = st
		if s.so.Serve {
			s.stop = st.StartServing()
			fmt.Fprintf(s.so.Log, "%s: owns the store %s and serves it on %s\n", s.so.Name, s.dir, SocketPath(s.dir))
		}
	} else {
		fmt.Fprintf(s.so.Log, "%s: attached to the owner of %s\n", s.so.Name, s.dir)
	}
	return nil
}

// Owner returns the store when this process owns it now (nil: attached).
func (s *Shared) Owner() *Store {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.owner
}

// Dir is the store directory.
func (s *Shared) Dir() string { return s.dir }

// Close stops serving (attached processes take over on their next call)
// and closes the store or the connection.
func (s *Shared) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closeLocked()
}

func (s *Shared) closeLocked() error {
	var serveErr error
	if s.stop != nil {
		serveErr = s.stop()
		s.stop = nil
	}
	s.owner = nil
	if s.api == nil {
		return serveErr
	}
	err := s.api.Close()
	s.api = nil
	return errors.Join(serveErr, err)
}

// via runs f on the current API; if the owner has gone, it takes over (or
// attaches to whoever took over first) and runs f once more.
func via[Res any](s *Shared, f func(API) (Res, error)) (Res, error) {
	s.mu.Lock()
	api := s.api
	s.mu.Unlock()
	if api == nil {
		var zero Res
		return zero, fmt.Errorf("store %s: %w", s.dir, ErrNoOwner)
	}
	res, err := f(api)
	if err == nil || !OwnerGone(err) {
		return res, err
	}
	s.mu.Lock()
	if s.api == api { // nobody re-attached meanwhile
		if cerr := s.closeLocked(); cerr != nil {
			fmt.Fprintf(s.so.Log, "%s: closing the old connection: %v\n", s.so.Name, cerr)
		}
		if aerr := s.attachLocked(); aerr != nil {
			s.mu.Unlock()
			var zero Res
			return zero, fmt.Errorf("owner of %s exited and taking over failed: %w", s.dir, aerr)
		}
	}
	api = s.api
	s.mu.Unlock()
	return f(api)
}

// Append implements API, taking over if the owner has gone.
func (s *Shared) Append(ctx context.Context, req AppendRequest) (*AppendResult, error) {
	return via(s, func(a API) (*AppendResult, error) { return a.Append(ctx, req) })
}

// Remember implements API, taking over if the owner has gone.
func (s *Shared) Remember(ctx context.Context, req RememberRequest) (*AppendResult, error) {
	return via(s, func(a API) (*AppendResult, error) { return a.Remember(ctx, req) })
}

// Tombstone implements API, taking over if the owner has gone.
func (s *Shared) Tombstone(ctx context.Context, req TombstoneRequest) (*TombstoneResult, error) {
	return via(s, func(a API) (*TombstoneResult, error) { return a.Tombstone(ctx, req) })
}

// Replay implements API, taking over if the owner has gone.
func (s *Shared) Replay(ctx context.Context, req ReplayRequest, fn func(json.RawMessage) error) error {
	_, err := via(s, func(a API) (struct{}, error) { return struct{}{}, a.Replay(ctx, req, fn) })
	return err
}

// AuditLog implements API, taking over if the owner has gone.
func (s *Shared) AuditLog(ctx context.Context, req AuditLogRequest, fn func(AuditEntry) error) error {
	_, err := via(s, func(a API) (struct{}, error) { return struct{}{}, a.AuditLog(ctx, req, fn) })
	return err
}

// AuditShow implements API, taking over if the owner has gone.
func (s *Shared) AuditShow(ctx context.Context, req AuditShowRequest) (*AuditShowResult, error) {
	return via(s, func(a API) (*AuditShowResult, error) { return a.AuditShow(ctx, req) })
}

// AuditVerify implements API, taking over if the owner has gone.
func (s *Shared) AuditVerify(ctx context.Context, req AuditVerifyRequest) (*AuditVerifyResult, error) {
	return via(s, func(a API) (*AuditVerifyResult, error) { return a.AuditVerify(ctx, req) })
}

// Search implements API, taking over if the owner has gone.
func (s *Shared) Search(ctx context.Context, req SearchRequest) (*SearchResult, error) {
	return via(s, func(a API) (*SearchResult, error) { return a.Search(ctx, req) })
}

// Context implements API, taking over if the owner has gone.
func (s *Shared) Context(ctx context.Context, req ContextRequest) (*ContextResult, error) {
	return via(s, func(a API) (*ContextResult, error) { return a.Context(ctx, req) })
}

// Sessions implements API, taking over if the owner has gone.
func (s *Shared) Sessions(ctx context.Context, req SessionsRequest) (*SessionsResult, error) {
	return via(s, func(a API) (*SessionsResult, error) { return a.Sessions(ctx, req) })
}

// Session implements API, taking over if the owner has gone.
func (s *Shared) Session(ctx context.Context, req SessionRequest) (*SessionResult, error) {
	return via(s, func(a API) (*SessionResult, error) { return a.Session(ctx, req) })
}

// Get implements API, taking over if the owner has gone.
func (s *Shared) Get(ctx context.Context, req GetRequest) (*GetResult, error) {
	return via(s, func(a API) (*GetResult, error) { return a.Get(ctx, req) })
}

// Index implements API, taking over if the owner has gone.
func (s *Shared) Index(ctx context.Context, req IndexRequest) (*IndexResult, error) {
	return via(s, func(a API) (*IndexResult, error) { return a.Index(ctx, req) })
}

// Dedupe implements API, taking over if the owner has gone.
func (s *Shared) Dedupe(ctx context.Context, req DedupeRequest) (*DedupeResult, error) {
	return via(s, func(a API) (*DedupeResult, error) { return a.Dedupe(ctx, req) })
}

// Edit implements API, taking over if the owner has gone.
func (s *Shared) Edit(ctx context.Context, req EditRequest) (*EditResult, error) {
	return via(s, func(a API) (*EditResult, error) { return a.Edit(ctx, req) })
}

// Thread implements API, taking over if the owner has gone.
func (s *Shared) Thread(ctx context.Context, req ThreadRequest) (*ThreadResult, error) {
	return via(s, func(a API) (*ThreadResult, error) { return a.Thread(ctx, req) })
}

// CatchUp implements API, taking over if the owner has gone.
func (s *Shared) CatchUp(ctx context.Context, req CatchUpRequest) (*ProjectionsResult, error) {
	return via(s, func(a API) (*ProjectionsResult, error) { return a.CatchUp(ctx, req) })
}

// ProjectionStatus implements API, taking over if the owner has gone.
func (s *Shared) ProjectionStatus(ctx context.Context, req ProjectionStatusRequest) (*ProjectionsResult, error) {
	return via(s, func(a API) (*ProjectionsResult, error) { return a.ProjectionStatus(ctx, req) })
}

// RebuildProjections implements API, taking over if the owner has gone.
func (s *Shared) RebuildProjections(ctx context.Context, req RebuildProjectionsRequest) (*ProjectionsResult, error) {
	return via(s, func(a API) (*ProjectionsResult, error) { return a.RebuildProjections(ctx, req) })
}

// VerifyProjections implements API, taking over if the owner has gone.
func (s *Shared) VerifyProjections(ctx context.Context, req VerifyProjectionsRequest) (*VerifyProjectionsResult, error) {
	return via(s, func(a API) (*VerifyProjectionsResult, error) { return a.VerifyProjections(ctx, req) })
}

// Push implements API, taking over if the owner has gone.
func (s *Shared) Push(ctx context.Context, req PushRequest) (*PushResult, error) {
	return via(s, func(a API) (*PushResult, error) { return a.Push(ctx, req) })
}

// SyncStatus implements API, taking over if the owner has gone.
func (s *Shared) SyncStatus(ctx context.Context, req SyncStatusRequest) (*SyncStatusResult, error) {
	return via(s, func(a API) (*SyncStatusResult, error) { return a.SyncStatus(ctx, req) })
}

// Checkpoints implements API, taking over if the owner has gone.
func (s *Shared) Checkpoints(ctx context.Context, req CheckpointsRequest) (*CheckpointsResult, error) {
	return via(s, func(a API) (*CheckpointsResult, error) { return a.Checkpoints(ctx, req) })
}

// Prove implements API, taking over if the owner has gone.
func (s *Shared) Prove(ctx context.Context, req ProveRequest) (*log.Proof, error) {
	return via(s, func(a API) (*log.Proof, error) { return a.Prove(ctx, req) })
}

// Status implements API, taking over if the owner has gone.
func (s *Shared) Status(ctx context.Context, req StatusRequest) (*StatusResult, error) {
	return via(s, func(a API) (*StatusResult, error) { return a.Status(ctx, req) })
}

// ShareGrant implements API, taking over if the owner has gone.
func (s *Shared) ShareGrant(ctx context.Context, req ShareGrantRequest) (*ShareGrantResult, error) {
	return via(s, func(a API) (*ShareGrantResult, error) { return a.ShareGrant(ctx, req) })
}

// ShareRevoke implements API, taking over if the owner has gone.
func (s *Shared) ShareRevoke(ctx context.Context, req ShareRevokeRequest) (*ShareRevokeResult, error) {
	return via(s, func(a API) (*ShareRevokeResult, error) { return a.ShareRevoke(ctx, req) })
}

// ShareList implements API, taking over if the owner has gone.
func (s *Shared) ShareList(ctx context.Context, req ShareListRequest) (*ShareListResult, error) {
	return via(s, func(a API) (*ShareListResult, error) { return a.ShareList(ctx, req) })
}

// SharePull implements API, taking over if the owner has gone.
func (s *Shared) SharePull(ctx context.Context, req SharePullRequest) (*SharePullResult, error) {
	return via(s, func(a API) (*SharePullResult, error) { return a.SharePull(ctx, req) })
}

// SnapshotCreate implements API, taking over if the owner has gone.
func (s *Shared) SnapshotCreate(ctx context.Context, req SnapshotCreateRequest) (*snapshot.CreateResult, error) {
	return via(s, func(a API) (*snapshot.CreateResult, error) { return a.SnapshotCreate(ctx, req) })
}

// SnapshotList implements API, taking over if the owner has gone.
func (s *Shared) SnapshotList(ctx context.Context, req SnapshotListRequest) (*SnapshotListResult, error) {
	return via(s, func(a API) (*SnapshotListResult, error) { return a.SnapshotList(ctx, req) })
}

// SnapshotVerify implements API, taking over if the owner has gone.
func (s *Shared) SnapshotVerify(ctx context.Context, req SnapshotVerifyRequest) (*SnapshotVerifyResult, error) {
	return via(s, func(a API) (*SnapshotVerifyResult, error) { return a.SnapshotVerify(ctx, req) })
}

// SnapshotRestore implements API, taking over if the owner has gone.
func (s *Shared) SnapshotRestore(ctx context.Context, req SnapshotRestoreRequest) (*snapshot.RestoreResult, error) {
	return via(s, func(a API) (*snapshot.RestoreResult, error) { return a.SnapshotRestore(ctx, req) })
}

// SnapshotPublish implements API, taking over if the owner has gone.
func (s *Shared) SnapshotPublish(ctx context.Context, req SnapshotPublishRequest) (*snapshot.PushResult, error) {
	return via(s, func(a API) (*snapshot.PushResult, error) { return a.SnapshotPublish(ctx, req) })
}

// RotateKeys implements API, taking over if the owner has gone.
func (s *Shared) RotateKeys(ctx context.Context, req RotateKeysRequest) (*RotateKeysResult, error) {
	return via(s, func(a API) (*RotateKeysResult, error) { return a.RotateKeys(ctx, req) })
}

// Consolidate implements API, taking over if the owner has gone.
func (s *Shared) Consolidate(ctx context.Context, req ConsolidateRequest) (*ConsolidateResult, error) {
	return via(s, func(a API) (*ConsolidateResult, error) { return a.Consolidate(ctx, req) })
}

// Profile implements API, taking over if the owner has gone.
func (s *Shared) Profile(ctx context.Context, req ProfileRequest) (*ProfileResult, error) {
	return via(s, func(a API) (*ProfileResult, error) { return a.Profile(ctx, req) })
}
