// Package mcpserver is ucl's Model Context Protocol server: the tools and
// resources through which an LLM client (Claude Code, Cursor, Windsurf, any
// MCP client) uses a ucl store as its memory. It is an adapter over the
// engine (package ucl): every tool validates its arguments, makes engine
// calls and renders the answer twice, as text for the model and as
// structured content for programs. It holds no state; New returns a server
// that any number of transports may share (stdio for `ucl mcp`, streamable
// HTTP through HTTPHandler for `ucl serve`, in-memory in tests).
//
// # Tools
//
// The input and output JSON of each tool is the JSON of its In and Out
// types in types.go (the schemas clients see are derived from them; fields
// without omitempty are required, unknown fields are refused). Times in
// outputs are RFC 3339 UTC; times in inputs are RFC 3339, a date
// (2023-05-08, UTC) or unix milliseconds.
//
//	uc_store          StoreIn → StoreOut            store one item (chunked when long)
//	uc_query          QueryIn → QueryOut            ranked hits with snippets
//	uc_context        ContextIn → ContextOut        the packed context block (`ucl context`)
//	uc_get            GetIn → GetOut                items by id; with_chunks gives a chunk's whole
//	uc_get_thread     ThreadIn → ThreadOut          the reply chain (parent) around an item
//	uc_get_session    SessionIn → SessionOut        one session in order, paged
//	uc_list_sessions  ListSessionsIn → ListSessionsOut
//	uc_get_document   DocumentIn → DocumentOut      a document reassembled, by id or meta name
//	uc_period         PeriodIn → PeriodOut          items in a period, newest first, paged
//	uc_index          IndexIn → IndexOut            a navigable map under a token budget (ucl index)
//	uc_forget         ForgetIn → ForgetOut          a tombstone (hides; not erasure)
//	uc_status         StatusIn → StatusOut          log head, projections, mirror
//
// Item ids are chunk ids. uc_store chooses the chunk id itself (from the
// idempotency key when one is given, else at random) so that it can return
// the id of every chunk it wrote: a single chunk has that id, a chunked
// whole has id#0, id#1, ... and the whole is addressed by id. A store whose
// text equals (ignoring case and spacing) a live item of the same session,
// role and kind writes nothing and returns that item's ids, with
// duplicate_of set (allow_duplicate stores it anyway).
//
// # Errors
//
// A bad argument (empty query or content, budget ≤ 0, k outside 1..200,
// malformed time or period, unknown kind or mode, unknown session, ids
// that do not exist or were forgotten, unknown fields) is a tool error
// (isError, the message naming the argument), never a protocol error or a
// crash. Every argument is checked before anything is written, so a
// refused uc_store or uc_forget appends nothing.
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
// Shared is the Engine `ucl mcp` uses: it owns the store and serves it on
// DIR/ucl.sock, or attaches to the process that does, and takes over when
// that process exits, so several editors and a terminal use one memory.
package mcpserver
