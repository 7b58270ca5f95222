// Package mcpserver is ucl's Model Context Protocol server: the tools and
// resources through which an LLM client (Claude Code, Cursor, Windsurf, any
// MCP client) uses a ucl store as its memory. It is an adapter over the
// engine (package ucl): every tool validates its arguments, makes engine
// calls and renders the answer as text for the model and as structured
// content for programs. It holds no state; New returns a server
// that any number of transports may share (stdio for `ucl mcp`, streamable
// HTTP through HTTPHandler for `ucl serve`, in-memory in tests).
//
// # Tools
//
// Every tool is declared once, in the table of table.go (Tools returns
// it): name, description, input and output types, annotations, whether
// it is exposed. Registration and the lists below and in docs/mcp.md are
// held against it (TestDocsListTools). The input and output JSON of each
// tool is the JSON of its In and Out types in types.go (the input
// schemas clients see are derived from them; fields without omitempty
// are required, unknown fields are refused). Output schemas are declared
// only for uc_store and uc_query, whose results programs read: the whole
// tools/list stays under 12 KB of JSON (TestToolsListSize). Times in
// outputs are RFC 3339 UTC; times in inputs are RFC 3339, a date
// (2023-05-08, UTC) or unix milliseconds.
//
//	uc_store          StoreIn → StoreOut            store one item (chunked when long)
//	uc_query          QueryIn → QueryOut            ranked hits with snippets
//	uc_context        ContextIn → ContextOut        the packed context block (`ucl context`) as text
//	uc_get            GetIn → GetOut                items by id; a window of a long content (offset, limit)
//	uc_get_thread     ThreadIn → ThreadOut          the reply chain (parent) around an item
//	uc_get_session    SessionIn → SessionOut        one session in order, paged
//	uc_list_sessions  ListSessionsIn → ListSessionsOut
//	uc_get_document   DocumentIn → DocumentOut      a document reassembled, by id or name, in any session or none
//	uc_period         PeriodIn → PeriodOut          items in a period, newest first, paged, with or without a session
//	uc_index          IndexIn → IndexOut            a navigable map under a token budget (ucl index)
//	uc_forget         ForgetIn → ForgetOut          a tombstone (hides; not erasure)
//	uc_status         StatusIn → StatusOut          log head, projections, mirror
//	uc_edit           EditIn → EditOut              a new version of an item
//	uc_profile        ProfileIn → ProfileOut        the current profiles: derived facts with their source ids
//	uc_consolidate    ConsolidateIn → ConsolidateOut
//	                  derive facts from new turns with the owner's model; stored, refused, duplicates
//
// One name per concept in every tool: session (one session: the current
// one, or the one to read or forget), sessions and kinds (filters),
// since/until (content time; until exclusive), k (hits), budget (tokens),
// offset/limit (items of a list; bytes of a content in uc_get and
// uc_get_document). "Now" is the server's clock to the millisecond, so an
// item stored a moment ago is not "after now".
//
// Item ids are chunk ids. uc_store chooses the chunk id itself (from the
// idempotency key when one is given, else at random) so that it can return
// the id of every chunk it wrote: a single chunk has that id, a chunked
// whole has id#0, id#1, ... and the whole is addressed by id. A store whose
// text equals (ignoring case and spacing) a live item of the same session,
// role and kind writes nothing and returns that item's ids, with
// duplicate_of set (allow_duplicate stores it anyway).
//
// uc_get_document's name is an item's meta "name", of any kind, in any
// session or none: names are not indexed, so it reads the log's headers
// through Engine.Replay, then keeps the live items whose current version
// has the name; several are a tool error listing them (ErrAmbiguous).
// uc_period reads the sessions in the period, and the items without a
// session through the engine's index (session filter ""), which lists at
// most index.Snippets of them; beyond that PeriodOut.Unlisted counts
// those it could not list.
//
// uc_index's groups each carry the call that opens them: the engine gives
// it as data (an engine method and its request's fields, index.Link), and
// this server shows it as a call of its own tools (IndexGroup.Open, a
// ToolCall; "session" becomes uc_get_session with argument session) in
// the text and the structured content alike (index.Rewrite).
//
// # Bounds
//
// Every result's text is about 8K tokens at most (MaxResultBytes), but
// for uc_context and uc_index, whose text is packed under the budget the
// caller gives (default 4000 tokens, at most 100000). Tools
// that return items cut the contents to fit, each cut content followed by
// the marker "[cut at byte N of M; read on: uc_get {"ids":[ID],"offset":N}]"
// (uc_get_document: its own call), and page the items that do not fit
// (next_offset). The structured content carries the same cut items, and
// uc_context's block is only in the text: nothing long crosses twice. An
// argument echoed back (uc_query's query) is cut to 200 characters. The
// resources (uc://sessions/{id}, uc://documents/{id}) are whole: a client
// reads them on purpose.
//
// # Derived memory
//
// uc_profile reads the engine's Profile: per subject, the current facts
// (items of kind knowledge in the derived session) with the ids of the
// items each comes from (derived_from). uc_consolidate runs the engine's
// Consolidate with the store owner's model settings ([consolidate] in
// ucl.toml); a client cannot name a model or an endpoint, so it cannot
// send the turns elsewhere. Its report counts every fact stored, refused
// (with the reason) and duplicate, and lists them while they fit the
// result bound (omitted counts the rest); uc_profile lists whole facts
// while they fit (more_facts, and more_subjects_count with the first 50
// subjects, count the rest). Without a model uc_consolidate is a tool
// error and nothing is sent or stored; a request failing after earlier
// ones stored facts is a tool error that reports what was stored.
//
// # Errors
//
// A bad argument (empty query or content, budget ≤ 0, k outside 1..200,
// malformed time or period, unknown kind, role or mode, unknown session,
// ids that do not exist or were forgotten, unknown fields) is a tool error
// (isError, the message naming the argument), never a protocol error or a
// crash. Roles and kinds are checked by the engine's ucl.CheckRole and
// ucl.CheckKind, as every face does. Every argument is checked before
// anything is written, so a refused uc_store or uc_forget appends nothing.
//
// # Stdio
//
// StdioTransport (`ucl mcp`) is the SDK's newline-delimited JSON-RPC with
// each line checked first: a line that is not one JSON-RPC message is
// answered with the JSON-RPC 2.0 error (-32700 parse error: not JSON or
// nested too deep; -32600 invalid request: longer than MaxLineBytes, an
// array, a scalar, an object id, a wrong version) and the session goes on.
// testdata/transcript.txt is a golden session (UCL_UPDATE_GOLDEN=1
// rewrites it).
//
// # Resources
//
//	uc://sessions/{id}   a session as a transcript (text/plain)
//	uc://documents/{id}  a document reassembled from its chunks
//	uc://context/auto    the context for the most recent user turn of the
//	                     most recently active session (empty on an empty store)
//
// Unknown ids answer the protocol's resource-not-found error. Ids are
// percent-decoded from the URI.
//
// # Logging
//
// Every request is logged, one line, to Options.Log (stderr by default;
// on stdio, stdout is the protocol): method, tool or URI, duration and
// the tool error if any. Arguments and results are not logged: they are
// the user's memory.
//
// # Sharing a store
//
// OpenShared gives `ucl mcp` its Engine: ucl.Shared, the engine's one
// own-or-attach path, serving: it owns the store and serves it on
// DIR/ucl.sock, or attaches to the process that does, and takes over when
// that process exits, so several editors and a terminal use one memory.
package mcpserver
