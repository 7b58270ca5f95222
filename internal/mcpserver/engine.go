package mcpserver

import (
	"context"
	"encoding/json"

	"github.com/unlimitedcontext/ucl"
)

// Engine is what the MCP server needs of a store: the subset of ucl.API it
// calls. *ucl.Store (the owner) and *ucl.Client (attached to an owner over
// its socket) both satisfy it, so the tools behave the same either way.
type Engine interface {
	Remember(ctx context.Context, req ucl.RememberRequest) (*ucl.AppendResult, error)
	Tombstone(ctx context.Context, req ucl.TombstoneRequest) (*ucl.TombstoneResult, error)
	Search(ctx context.Context, req ucl.SearchRequest) (*ucl.SearchResult, error)
	Context(ctx context.Context, req ucl.ContextRequest) (*ucl.ContextResult, error)
	Sessions(ctx context.Context, req ucl.SessionsRequest) (*ucl.SessionsResult, error)
	Session(ctx context.Context, req ucl.SessionRequest) (*ucl.SessionResult, error)
	Get(ctx context.Context, req ucl.GetRequest) (*ucl.GetResult, error)
	Index(ctx context.Context, req ucl.IndexRequest) (*ucl.IndexResult, error)
	Edit(ctx context.Context, req ucl.EditRequest) (*ucl.EditResult, error)
	Thread(ctx context.Context, req ucl.ThreadRequest) (*ucl.ThreadResult, error)
	Status(ctx context.Context, req ucl.StatusRequest) (*ucl.StatusResult, error)
	ProjectionStatus(ctx context.Context, req ucl.ProjectionStatusRequest) (*ucl.ProjectionsResult, error)
	Consolidate(ctx context.Context, req ucl.ConsolidateRequest) (*ucl.ConsolidateResult, error)
	Profile(ctx context.Context, req ucl.ProfileRequest) (*ucl.ProfileResult, error)
	// Replay is how uc_get_document finds items by name, which no
	// projection indexes.
	Replay(ctx context.Context, req ucl.ReplayRequest, fn func(line json.RawMessage) error) error
}

var _ Engine = (ucl.API)(nil)
