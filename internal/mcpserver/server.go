package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Limits of the tools' arguments.
const (
	DefaultK       = 10
	MaxK           = 200
	DefaultBudget  = 4000
	DefaultRecent  = 6
	DefaultLimit   = 50
	MaxLimit       = 500
	DefaultDepth   = 10
	MaxDepth       = 100
	SnippetRunes   = 280
	maxContentSize = 8 << 20 // one uc_store call; larger inputs belong in `ucl append`
)

// ErrBadArgument is returned (as a tool error) when a tool's arguments are
// invalid: the message says which argument and what it takes.
var ErrBadArgument = errors.New("bad argument")

// ErrNotFound is returned (as a tool error, or a resource-not-found error)
// when an id, session or document does not exist or has been forgotten.
var ErrNotFound = errors.New("not found")

// ErrAmbiguous is returned (as a tool error) when a name given to find
// one item names several: the message lists them with their ids.
var ErrAmbiguous = errors.New("ambiguous")

// Options configure New. The zero value is usable.
type Options struct {
	// Name and Version are announced to clients (default "ucl", "dev").
	Name, Version string
	// Log receives one line per call (default os.Stderr). Never stdout:
	// on stdio, stdout is the protocol.
	Log io.Writer
	// Now is the clock for "today", "last week" and store times (default
	// time.Now). Tests pin it.
	Now func() time.Time
	// TZ is the IANA time zone of the days of time phrases ("yesterday")
	// when a call names none: the server's [retrieval] timezone, as the
	// CLI's ("": UTC; "Local": the machine's). A zone that does not load
	// makes each such call a request error.
	TZ string
}

type server struct {
	eng  Engine
	opts Options
	log  *slog.Logger
}

// New returns an MCP server whose tools and resources read and write eng.
// The server holds no state of its own: connect it to any number of
// transports (stdio, in-memory, HTTPHandler).
func New(eng Engine, opts Options) *mcp.Server {
	if opts.Name == "" {
		opts.Name = "ucl"
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Log == nil {
		opts.Log = os.Stderr
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &server{eng: eng, opts: opts, log: slog.New(slog.NewTextHandler(opts.Log, nil))}
	srv := mcp.NewServer(&mcp.Implementation{Name: opts.Name, Version: opts.Version}, &mcp.ServerOptions{
		Instructions: instructions,
	})
	srv.AddReceivingMiddleware(s.logCalls)
	s.addTools(srv)
	s.addResources(srv)
	return srv
}

const instructions = `ucl is your long-term memory. Call uc_context at the start of a task (or
uc_query for something specific) to recall what was said, decided or read before;
call uc_store to remember new turns, facts and documents. Everything is kept in an
append-only, encrypted log; uc_forget hides items everywhere at once.`

// logCalls writes one line per request to the log: method, tool or
// resource, duration and outcome. Arguments are not logged: they are the
// user's memory.
func (s *server) logCalls(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		start := time.Now()
		res, err := next(ctx, method, req)
		attrs := []any{"method", method, "ms", time.Since(start).Milliseconds()}
		switch p := req.GetParams().(type) {
		case *mcp.CallToolParamsRaw:
			attrs = append(attrs, "tool", p.Name)
		case *mcp.ReadResourceParams:
			attrs = append(attrs, "uri", p.URI)
		}
		if err != nil {
			s.log.Warn("mcp call failed", append(attrs, "err", err)...)
		} else if r, ok := res.(*mcp.CallToolResult); ok && r.IsError {
			s.log.Info("mcp call", append(attrs, "tool_error", toolErrText(r))...)
		} else {
			s.log.Info("mcp call", attrs...)
		}
		return res, err
	}
}

// now is the server's clock as the engine's requests take it: to the
// millisecond, as content times are, so that "now" includes what was
// stored in the same second (a time cut to the second would put it after
// now).
func (s *server) now() string {
	return time.UnixMilli(s.opts.Now().UnixMilli()).UTC().Format(time.RFC3339Nano)
}

func toolErrText(r *mcp.CallToolResult) string {
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			return t.Text
		}
	}
	return ""
}

// badArg makes a tool error naming the argument.
func badArg(name, format string, a ...any) error {
	return fmt.Errorf("%w %s: %s", ErrBadArgument, name, fmt.Sprintf(format, a...))
}

// textResult is the text a model reads, next to the structured content
// (which the SDK fills from the typed result).
func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

func mustJSON(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprintf("(unprintable: %v)", err)
	}
	return string(b)
}
