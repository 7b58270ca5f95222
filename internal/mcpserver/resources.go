package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/projections/timelines"
)

// Resource URIs.
const (
	SessionTemplate  = "uc://sessions/{id}"
	DocumentTemplate = "uc://documents/{id}"
	AutoContextURI   = "uc://context/auto"
	sessionPrefix    = "uc://sessions/"
	documentPrefix   = "uc://documents/"
)

func (s *server) addResources(srv *mcp.Server) {
	srv.AddResourceTemplate(&mcp.ResourceTemplate{
		Name: "session", URITemplate: SessionTemplate, MIMEType: "text/plain",
		Description: "A whole session (conversation) as a transcript, in order. Session ids come from uc_list_sessions.",
	}, s.readSession)
	srv.AddResourceTemplate(&mcp.ResourceTemplate{
		Name: "document", URITemplate: DocumentTemplate, MIMEType: "text/plain",
		Description: "A stored document reassembled from its chunks, by its id (chunk_parent) or any chunk's id.",
	}, s.readDocument)
	srv.AddResource(&mcp.Resource{
		Name: "auto-context", URI: AutoContextURI, MIMEType: "text/plain",
		Description: "Memory context for the most recent user turn of the most recently active session, packed under the default budget.",
	}, s.readAutoContext)
}

// idFromURI takes the id out of uc://sessions/ID (percent-decoded, so ids
// with '/' or spaces can be addressed).
func idFromURI(uri, prefix string) (string, error) {
	raw, ok := strings.CutPrefix(uri, prefix)
	if !ok || raw == "" {
		return "", mcp.ResourceNotFoundError(uri)
	}
	id, err := url.PathUnescape(raw)
	if err != nil {
		return "", fmt.Errorf("%w: resource uri %q: %v", ErrBadArgument, uri, err)
	}
	return id, nil
}

func (s *server) readSession(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	id, err := idFromURI(uri, sessionPrefix)
	if err != nil {
		return nil, err
	}
	res, err := s.eng.Session(ctx, ucl.SessionRequest{ID: id})
	if err != nil {
		if errors.Is(err, timelines.ErrNotFound) {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		return nil, fmt.Errorf("read session %q: %w", id, err)
	}
	var b strings.Builder
	si := sessionInfoOf(res.Session, res.Summary.Text)
	fmt.Fprintf(&b, "# session %s\n%d items, %s to %s\n", si.ID, res.Total, si.First, si.Last)
	if si.Summary != "" {
		fmt.Fprintf(&b, "summary: %s\n", si.Summary)
	}
	b.WriteString("\n")
	items := make([]Item, len(res.Chunks))
	for i, c := range res.Chunks {
		items[i] = itemOf(c)
	}
	b.WriteString(renderItems(items))
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: b.String()}}}, nil
}

func (s *server) readDocument(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	id, err := idFromURI(uri, documentPrefix)
	if err != nil {
		return nil, err
	}
	chunks, err := s.document(ctx, id, "")
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		return nil, err
	}
	// A resource is the whole document (a client reads it on purpose,
	// not into a model's context unasked): no window.
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString(c.Content)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: b.String()}}}, nil
}

// readAutoContext assembles the context an editor would inject before the
// model answers: for the last user turn of the session active most
// recently. An empty store gives an empty context, not an error: there is
// simply nothing remembered yet.
func (s *server) readAutoContext(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	text, err := s.autoContext(ctx)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text}}}, nil
}

func (s *server) autoContext(ctx context.Context) (string, error) {
	list, err := s.eng.Sessions(ctx, ucl.SessionsRequest{Limit: 1})
	if err != nil {
		return "", fmt.Errorf("auto context: %w", err)
	}
	if len(list.Sessions) == 0 {
		return "", nil
	}
	active := list.Sessions[0].ID
	sess, err := s.eng.Session(ctx, ucl.SessionRequest{ID: active})
	if err != nil {
		return "", fmt.Errorf("auto context: %w", err)
	}
	text := ""
	for i := len(sess.Chunks) - 1; i >= 0; i-- {
		if c := sess.Chunks[i]; c.Role == "user" {
			text = c.Content
			break
		}
	}
	res, err := s.eng.Context(ctx, ucl.ContextRequest{
		SearchRequest: ucl.SearchRequest{Text: text, Session: active, Now: s.now(), TZ: s.opts.TZ},
		Budget:        DefaultBudget, Recent: DefaultRecent,
	})
	if err != nil {
		return "", fmt.Errorf("auto context: %w", err)
	}
	return res.Context, nil
}
