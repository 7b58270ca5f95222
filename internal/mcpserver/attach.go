package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/unlimitedcontext/ucl"
)

// Shared is an Engine for a long-lived front end (`ucl mcp`): it owns the
// store and serves it on DIR/ucl.sock when no other process does, or
// attaches to the owner's socket when one does. When the owner exits, the
// next call takes over: it opens the store itself (becoming the owner that
// others attach to) and carries on. So any number of editors and terminals
// share one memory, and none of them depends on which started first.
type Shared struct {
	dir  string
	opts ucl.Options
	log  io.Writer

	mu    sync.Mutex
	api   ucl.API
	owner *ucl.Store
	stop  context.CancelFunc
	done  chan error
}

// OpenShared attaches to the owner of the store in dir or becomes it.
// logw receives one line when ownership changes.
func OpenShared(dir string, opts ucl.Options, logw io.Writer) (*Shared, error) {
	if logw == nil {
		logw = io.Discard
	}
	s := &Shared{dir: dir, opts: opts, log: logw}
	if err := s.attachLocked(); err != nil {
		return nil, err
	}
	return s, nil
}

// attachLocked (s.mu held, or not yet shared) attaches or opens, and
// starts serving when this process became the owner.
func (s *Shared) attachLocked() error {
	api, err := ucl.Attach(s.dir, s.opts)
	if err != nil {
		return err
	}
	s.api = api
	if st, ok := api.(*ucl.Store); ok {
		ctx, cancel := context.WithCancel(context.Background())
		s.owner, s.stop, s.done = st, cancel, make(chan error, 1)
		go func() { s.done <- st.Serve(ctx) }()
		fmt.Fprintf(s.log, "ucl mcp: owns the store %s and serves it on %s\n", s.dir, ucl.SocketPath(s.dir))
	} else {
		fmt.Fprintf(s.log, "ucl mcp: attached to the owner of %s\n", s.dir)
	}
	return nil
}

// Owner reports whether this process owns the store now.
func (s *Shared) Owner() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.owner != nil
}

// Close stops serving (attached processes take over on their next call)
// and closes the store or the connection.
func (s *Shared) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closeLocked()
}

func (s *Shared) closeLocked() error {
	var serveErr error
	if s.owner != nil {
		s.stop()
		serveErr = <-s.done
		s.owner = nil
	}
	if s.api == nil {
		return serveErr
	}
	err := s.api.Close()
	s.api = nil
	return errors.Join(serveErr, err)
}

// via runs f on the current API; if the owner has gone, it takes over (or
// attaches to whoever took over first) and runs f once more.
func via[Res any](s *Shared, f func(ucl.API) (*Res, error)) (*Res, error) {
	s.mu.Lock()
	api := s.api
	s.mu.Unlock()
	if api == nil {
		return nil, fmt.Errorf("store %s: %w", s.dir, ucl.ErrNoOwner)
	}
	res, err := f(api)
	// Only a refused connection counts (ucl.OwnerGone): the request was
	// not sent, so running it again elsewhere cannot apply it twice.
	if err == nil || !ucl.OwnerGone(err) {
		return res, err
	}
	s.mu.Lock()
	if s.api == api { // nobody re-attached meanwhile
		if cerr := s.closeLocked(); cerr != nil {
			fmt.Fprintf(s.log, "ucl mcp: closing the old connection: %v\n", cerr)
		}
		if aerr := s.attachLocked(); aerr != nil {
			s.mu.Unlock()
			return nil, fmt.Errorf("owner of %s exited and taking over failed: %w", s.dir, aerr)
		}
	}
	api = s.api
	s.mu.Unlock()
	return f(api)
}

// Remember implements Engine.
func (s *Shared) Remember(ctx context.Context, req ucl.RememberRequest) (*ucl.AppendResult, error) {
	return via(s, func(a ucl.API) (*ucl.AppendResult, error) { return a.Remember(ctx, req) })
}

// Tombstone implements Engine.
func (s *Shared) Tombstone(ctx context.Context, req ucl.TombstoneRequest) (*ucl.TombstoneResult, error) {
	return via(s, func(a ucl.API) (*ucl.TombstoneResult, error) { return a.Tombstone(ctx, req) })
}

// Search implements Engine.
func (s *Shared) Search(ctx context.Context, req ucl.SearchRequest) (*ucl.SearchResult, error) {
	return via(s, func(a ucl.API) (*ucl.SearchResult, error) { return a.Search(ctx, req) })
}

// Context implements Engine.
func (s *Shared) Context(ctx context.Context, req ucl.ContextRequest) (*ucl.ContextResult, error) {
	return via(s, func(a ucl.API) (*ucl.ContextResult, error) { return a.Context(ctx, req) })
}

// Sessions implements Engine.
func (s *Shared) Sessions(ctx context.Context, req ucl.SessionsRequest) (*ucl.SessionsResult, error) {
	return via(s, func(a ucl.API) (*ucl.SessionsResult, error) { return a.Sessions(ctx, req) })
}

// Session implements Engine.
func (s *Shared) Session(ctx context.Context, req ucl.SessionRequest) (*ucl.SessionResult, error) {
	return via(s, func(a ucl.API) (*ucl.SessionResult, error) { return a.Session(ctx, req) })
}

// Get implements Engine.
func (s *Shared) Get(ctx context.Context, req ucl.GetRequest) (*ucl.GetResult, error) {
	return via(s, func(a ucl.API) (*ucl.GetResult, error) { return a.Get(ctx, req) })
}

// Status implements Engine.
func (s *Shared) Status(ctx context.Context, req ucl.StatusRequest) (*ucl.StatusResult, error) {
	return via(s, func(a ucl.API) (*ucl.StatusResult, error) { return a.Status(ctx, req) })
}

// ProjectionStatus implements Engine.
func (s *Shared) ProjectionStatus(ctx context.Context, req ucl.ProjectionStatusRequest) (*ucl.ProjectionsResult, error) {
	return via(s, func(a ucl.API) (*ucl.ProjectionsResult, error) { return a.ProjectionStatus(ctx, req) })
}

var _ Engine = (*Shared)(nil)

// Replay implements Engine.
func (s *Shared) Replay(ctx context.Context, req ucl.ReplayRequest, fn func(json.RawMessage) error) error {
	_, err := via(s, func(a ucl.API) (*struct{}, error) { return nil, a.Replay(ctx, req, fn) })
	return err
}
