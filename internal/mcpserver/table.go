package mcpserver

import (
	"context"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolEntry is one tool of the server: the one place a tool is declared.
// Registration (New), the docs' tool lists (docs/mcp.md, doc.go, checked
// by TestDocsListTools) and the size bound of tools/list all come from
// the table Tools returns.
type ToolEntry struct {
	Name        string
	Description string       // what a model reads to decide when to call it
	In, Out     reflect.Type // argument and structured-result types
	// OutSchema declares Out's schema in tools/list: only for the tools
	// whose results programs read, as each schema costs every
	// conversation its bytes.
	OutSchema   bool
	ReadOnly    bool
	Destructive bool
	// Exposed tools are registered; a tool declared but not exposed is
	// kept out of tools/list (and answers "unknown tool").
	Exposed bool

	add func(s *server, srv *mcp.Server, t *mcp.Tool)
}

// handler is a tool's implementation: a method of server.
type handler[In, Out any] func(*server, context.Context, *mcp.CallToolRequest, In) (*mcp.CallToolResult, Out, error)

const (
	fOutSchema = 1 << iota
	fReadOnly
	fDestructive
	fHidden
	// fBudgeted tools bound their text themselves, by the budget asked
	// (default 4000 tokens, at most maxIndexBudget): boundText leaves it.
	fBudgeted
)

func entry[In, Out any](name, desc string, h handler[In, Out], flags int) ToolEntry {
	e := ToolEntry{Name: name, Description: desc, In: reflect.TypeFor[In](), Out: reflect.TypeFor[Out](),
		OutSchema: flags&fOutSchema != 0, ReadOnly: flags&fReadOnly != 0, Destructive: flags&fDestructive != 0,
		Exposed: flags&fHidden == 0}
	e.add = func(s *server, srv *mcp.Server, t *mcp.Tool) {
		call := func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
			res, out, err := h(s, ctx, req, in)
			if err == nil && flags&fBudgeted == 0 {
				boundText(res)
			}
			return res, out, err
		}
		if e.OutSchema {
			mcp.AddTool(srv, t, call)
			return
		}
		// Out as any: the structured content is still sent, without a
		// schema in tools/list.
		mcp.AddTool(srv, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
			res, out, err := call(ctx, req, in)
			if err != nil {
				return nil, nil, err
			}
			return res, out, nil
		})
	}
	return e
}

// Descriptions say what each tool is for and when to call it, in as few
// words as do that: they are in the context of every conversation.
const (
	descStore        = `Remember something: a conversation turn (give session and role), a fact or decision (kind knowledge), a document (give meta.name) or a tool call (tool; its result as content). Same text in the same session, role and kind is skipped.`
	descQuery        = `Search all memory: ranked hits with ids and snippets (uc_get reads one whole, uc_get_thread its conversation). Time phrases ("last week") rank that time first.`
	descContext      = `Call at the start of a task or when the user refers to earlier work: the memories relevant to query in one block under budget tokens. With session, its recent turns are shown last.`
	descGet          = `Read items whole by id. Content over the result bound is cut with a marker giving the offset to read on from.`
	descThread       = `The reply chain around an item, tool calls included, in time order: the discussion a hit came from.`
	descSession      = `One session's items in order, paged, or its last N items. uc_list_sessions gives session ids.`
	descListSessions = `Sessions, most recently active first, with span, counts, title and summary.`
	descDocument     = `A document or long tool result, reassembled, by id or meta name (any session); an ambiguous name lists candidates.`
	descPeriod       = `What was stored in a period, newest first, in any session or none. For questions with no search term.`
	descIndex        = `A map of memory under budget tokens, for a query or all: matches whole, as snippets, or by session, month and topic, each with the call that opens it. Start here for broad questions.`
	descForget       = `Hide items from every read: by ids, a session, or a since/until content-time span. Not erasure: encrypted bytes stay until a key rotation.`
	descStatus       = `The store's events, head, whether the projections caught up, and the Arweave mirror.`
	descProfile      = `Current facts per subject (the user, a person, a project) from past turns, with source ids. Call it when the user's preferences or circumstances matter.`
	descConsolidate  = `Derive facts from new turns with the store's model: stores those their cited turns support, updates profiles, reports what was stored or refused. Call it only when asked.`
	descEdit         = `Correct a stored item: a new version replaces it (uc_get with history lists old ones); a document is edited whole. If a fact changed in the world, use uc_store with supersedes.`
)

// toolTable is every tool, in the order tools/list gives them.
var toolTable = []ToolEntry{
	entry("uc_store", descStore, (*server).toolStore, fOutSchema),
	entry("uc_query", descQuery, (*server).toolQuery, fOutSchema|fReadOnly),
	entry("uc_context", descContext, (*server).toolContext, fReadOnly|fBudgeted),
	entry("uc_get", descGet, (*server).toolGet, fReadOnly),
	entry("uc_get_thread", descThread, (*server).toolThread, fReadOnly),
	entry("uc_get_session", descSession, (*server).toolSession, fReadOnly),
	entry("uc_list_sessions", descListSessions, (*server).toolListSessions, fReadOnly),
	entry("uc_get_document", descDocument, (*server).toolDocument, fReadOnly),
	entry("uc_period", descPeriod, (*server).toolPeriod, fReadOnly),
	entry("uc_index", descIndex, (*server).toolIndex, fReadOnly|fBudgeted),
	entry("uc_forget", descForget, (*server).toolForget, fDestructive),
	entry("uc_status", descStatus, (*server).toolStatus, fReadOnly),
	entry("uc_edit", descEdit, (*server).toolEdit, 0),
	entry("uc_profile", descProfile, (*server).toolProfile, fReadOnly),
	entry("uc_consolidate", descConsolidate, (*server).toolConsolidate, 0),
}

// views names the tools that are views over several engine methods
// rather than the MCP face of one (ucl.Methods names a method's tool), and
// the methods they call. TestToolsFollowMethodTable holds both against the
// tool table.
var views = map[string][]string{
	"uc_get_document": {"get", "sessions", "session", "replay"},
	"uc_period":       {"sessions", "session"},
}

// Tools returns the tool table (a copy): every tool the server declares,
// exposed or not.
func Tools() []ToolEntry { return append([]ToolEntry(nil), toolTable...) }

func (s *server) addTools(srv *mcp.Server) {
	for _, e := range toolTable {
		if !e.Exposed {
			continue
		}
		t := &mcp.Tool{Name: e.Name, Description: e.Description}
		switch {
		case e.ReadOnly:
			t.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: true}
		case e.Destructive:
			yes := true
			t.Annotations = &mcp.ToolAnnotations{DestructiveHint: &yes}
		}
		e.add(s, srv, t)
	}
}
