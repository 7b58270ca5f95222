package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/internal/ingest"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections/timelines"
	"github.com/unlimitedcontext/ucl/query"
)

// Tool descriptions are written for the model that decides when to call
// the tool: what it is for, when to call it, what comes back.
const (
	descStore        = `Remember something: a conversation turn, a fact or decision worth keeping (kind knowledge), a whole document or a tool result (long ones are split into chunks automatically and can be read back whole with uc_get_document). Call it for every turn you want recalled in later sessions, with the session id of the current conversation and the role. Pass parent (the id of the item this replies to) to keep threads, and id as an idempotency key when you might retry. To record a tool call give tool (name, args, status) with its result as content (content may be empty while the result is pending) and the triggering message as parent. When a fact changed, pass supersedes with the ids of the outdated items: they then rank below the new one and are marked superseded_by. Returns the ids and log sequence numbers written. Stored items are encrypted, append-only and mirrored; use uc_forget to hide one.`
	descQuery        = `Search memory for items relevant to a question, across all past sessions. Hybrid retrieval (keywords and meaning); time phrases in the query such as "yesterday", "last week" or "in May 2023" rank items from that time first (they do not exclude others; use since/until to filter). Filters: sessions, kinds, roles, since/until. Returns ranked hits with id, session, role, kind, time, score and a snippet; is_chunk marks a piece of a larger document (read it with uc_get with_chunks or uc_get_document). Use uc_get to read a hit in full, uc_get_thread for the conversation around it.`
	descContext      = `Get a ready-to-use context block for the current task: the recent turns of the active session followed by the most relevant memories, packed under a token budget (the same block as the CLI's "ucl context"). Call it at the start of a task or when the user refers to something from before; put the returned context in your working memory. Give the user's message as query and the current session as session.`
	descGet          = `Read items in full by id (ids from uc_query, uc_store or uc_period). With with_chunks, an id that is one chunk of a larger document or tool result returns every chunk of that whole, in order. An id that does not exist (or was forgotten) is an error naming it. With history, every version of an edited item (uc_edit) is listed with its time and author.`
	descThread       = `Get the reply chain around an item: the items it replies to (following parent), the item itself, and the replies to it and the tool calls it triggered, up to depth steps each way, in time order. Use it to see the discussion a search hit came from.`
	descSession      = `Read one session (a conversation) in order: its items from position from, at most limit (paged; next gives the next page), with the session's time span, counts and title. Use uc_list_sessions to find session ids.`
	descListSessions = `List sessions (conversations), most recently active first, with their time span, item counts, title and short summary. since keeps only sessions active at or after a time. Use it to orient yourself ("what have we worked on lately?") and then uc_get_session to read one.`
	descDocument     = `Read a whole stored document (or long tool result) reassembled from its chunks, by its id (the chunk_parent of its chunks, or the id of any chunk) or by its name (the meta name given when it was stored).`
	descPeriod       = `List what was stored in a period, newest first, paged: "today", "yesterday", "this week", "last week", "last month", "May 2023", "in 2023", "3 days ago", or an ISO range "2023-05-01..2023-05-31" (a bare end date includes that day). Optional session and kind filters. Use it for "what did we do last week?" questions where there is no search term.`
	descForget       = `Forget items: by ids (a document's id forgets all its chunks), a whole session, or a content-time range (from/to, optionally within a session). Appends a tombstone that hides the items from every search, context, session view and replay at once, immediately. It is not erasure: the encrypted bytes stay in the log and on Arweave, and the current vault key can still decrypt them until the key is rotated. Give a reason; it is kept in the audit trail. Returns the ids hidden.`
	descStatus       = `Report the memory store's state: number of events, head sequence number and hash, whether every projection (search indexes, timelines, summaries) has caught up with the log, and the Arweave mirror (segments pending and confirmed, every event up to safe_up_to confirmed).`
)

func (s *server) addTools(srv *mcp.Server) {
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(srv, &mcp.Tool{Name: "uc_store", Description: descStore}, s.toolStore)
	mcp.AddTool(srv, &mcp.Tool{Name: "uc_query", Description: descQuery, Annotations: ro}, s.toolQuery)
	mcp.AddTool(srv, &mcp.Tool{Name: "uc_context", Description: descContext, Annotations: ro}, s.toolContext)
	mcp.AddTool(srv, &mcp.Tool{Name: "uc_get", Description: descGet, Annotations: ro}, s.toolGet)
	mcp.AddTool(srv, &mcp.Tool{Name: "uc_get_thread", Description: descThread, Annotations: ro}, s.toolThread)
	mcp.AddTool(srv, &mcp.Tool{Name: "uc_get_session", Description: descSession, Annotations: ro}, s.toolSession)
	mcp.AddTool(srv, &mcp.Tool{Name: "uc_list_sessions", Description: descListSessions, Annotations: ro}, s.toolListSessions)
	mcp.AddTool(srv, &mcp.Tool{Name: "uc_get_document", Description: descDocument, Annotations: ro}, s.toolDocument)
	mcp.AddTool(srv, &mcp.Tool{Name: "uc_period", Description: descPeriod, Annotations: ro}, s.toolPeriod)
	mcp.AddTool(srv, &mcp.Tool{Name: "uc_index", Description: descIndex, Annotations: ro}, s.toolIndex)
	destructive := true
	mcp.AddTool(srv, &mcp.Tool{Name: "uc_forget", Description: descForget, Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive}}, s.toolForget)
	mcp.AddTool(srv, &mcp.Tool{Name: "uc_status", Description: descStatus, Annotations: ro}, s.toolStatus)
	mcp.AddTool(srv, &mcp.Tool{Name: "uc_edit", Description: descEdit}, s.toolEdit)
}

// ---- uc_store

func (s *server) toolStore(ctx context.Context, _ *mcp.CallToolRequest, in StoreIn) (*mcp.CallToolResult, StoreOut, error) {
	var out StoreOut
	if in.Tool != nil {
		if strings.TrimSpace(in.Tool.Name) == "" {
			return nil, out, badArg("tool.name", "is empty: a tool call needs a name")
		}
		if in.Kind == "" {
			in.Kind = "tool_call"
		}
		if in.Kind != "tool_call" {
			return nil, out, badArg("kind", "a tool call is of kind tool_call, not %s", in.Kind)
		}
	} else if strings.TrimSpace(in.Content) == "" {
		return nil, out, badArg("content", "is empty: give the text to remember")
	}
	if len(in.Content) > maxContentSize {
		return nil, out, badArg("content", "is %d bytes; one call takes at most %d (use `ucl append` for bulk input)", len(in.Content), maxContentSize)
	}
	kind, err := log.ParseKind(in.Kind)
	if err != nil {
		return nil, out, badArg("kind", "%q is not a kind: want conversation, document, knowledge or tool_call", in.Kind)
	}
	if in.Time != "" {
		if _, err := ingest.ParseTime(in.Time); err != nil {
			return nil, out, badArg("time", "%v", err)
		}
	}
	for k := range in.Meta {
		if k == "" {
			return nil, out, badArg("meta", "has an empty key")
		}
	}
	if in.Parent != "" {
		if _, err := s.getChunks(ctx, []string{in.Parent}); err != nil {
			return nil, out, fmt.Errorf("parent: %w", err)
		}
	}
	// The chunk id is chosen here rather than by the engine so that the ids
	// of every chunk are known from the result: one chunk keeps it, a
	// chunked whole gets id#0, id#1, ... (log.Chunk).
	chunkID := ""
	if in.ID != "" {
		chunkID = ingest.EventID(in.ID).String()
	} else {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, out, fmt.Errorf("make chunk id: %w", err)
		}
		chunkID = hex.EncodeToString(b[:])
	}
	role := in.Role
	if role == "" && kind == log.KindConversation {
		role = "user"
	}
	req := ucl.RememberRequest{Content: in.Content, Session: in.Session, Role: role, Kind: kind.String(),
		Meta: in.Meta, Time: in.Time, ID: in.ID, Parent: in.Parent, ChunkID: chunkID, Supersedes: in.Supersedes, AllowDuplicate: in.AllowDuplicate}
	if req.Tool, err = toolCallOf(in.Tool); err != nil {
		return nil, out, err
	}
	res, err := s.eng.Remember(ctx, req)
	if err != nil {
		return nil, out, engineErr("store", err)
	}
	out.IDs = make([]string, len(res.Results))
	out.Seqs = make([]uint64, len(res.Results))
	out.Existed = len(res.Results) > 0
	for i, r := range res.Results {
		out.IDs[i] = chunkID
		if len(res.Results) > 1 {
			out.IDs[i] = fmt.Sprintf("%s#%d", chunkID, i)
		}
		if r.DuplicateOf != "" {
			out.IDs[i] = r.DuplicateOf
		}
		out.Seqs[i] = r.Seq
		out.Existed = out.Existed && r.Existed
	}
	if len(res.Results) > 1 {
		out.Chunked, out.Parent = true, chunkID
		if res.Document != "" {
			out.Parent = res.Document
		}
	}
	if d := res.Results[0].DuplicateOf; d != "" {
		out.DuplicateOf = d
		if out.Chunked {
			out.DuplicateOf = out.Parent
		}
	}
	var b strings.Builder
	switch {
	case out.DuplicateOf != "":
		fmt.Fprintf(&b, "already stored: %s has the same text (ignoring case and spacing) in this session, role and kind; nothing new written (allow_duplicate stores it anyway).\n", out.DuplicateOf)
	case out.Existed:
		fmt.Fprintf(&b, "already stored (same id and content): nothing new written.\n")
	case out.Chunked:
		fmt.Fprintf(&b, "stored as %d chunks of document %s (seq %d-%d).\n", len(out.IDs), chunkID, out.Seqs[0], out.Seqs[len(out.Seqs)-1])
	default:
		fmt.Fprintf(&b, "stored.\n")
	}
	fmt.Fprintf(&b, "ids: %s\n", strings.Join(out.IDs, ", "))
	return textResult(b.String()), out, nil
}

// ---- uc_query

func (s *server) toolQuery(ctx context.Context, _ *mcp.CallToolRequest, in QueryIn) (*mcp.CallToolResult, QueryOut, error) {
	var out QueryOut
	if strings.TrimSpace(in.Query) == "" {
		return nil, out, badArg("query", "is empty: say what to look for")
	}
	k, err := checkRange("k", in.K, DefaultK, MaxK)
	if err != nil {
		return nil, out, err
	}
	req := ucl.SearchRequest{Text: in.Query, K: k, Session: in.Active, Sessions: in.Sessions, Kinds: in.Kinds, Roles: in.Roles,
		Now: s.opts.Now().UTC().Format(time.RFC3339Nano), IncludeSuperseded: in.IncludeSuperseded}
	if err := checkKinds(in.Kinds); err != nil {
		return nil, out, err
	}
	if req.Since, req.Until, err = checkSpan("since", in.Since, "until", in.Until); err != nil {
		return nil, out, err
	}
	mode, err := query.ParseMode(in.Mode)
	if err != nil {
		return nil, out, badArg("mode", "%q: want hybrid, bm25 or vector", in.Mode)
	}
	req.Mode = string(mode)
	for _, id := range in.Sessions {
		if err := s.checkSession(ctx, "sessions", id); err != nil {
			return nil, out, err
		}
	}
	if in.Active != "" {
		if err := s.checkSession(ctx, "active_session", in.Active); err != nil {
			return nil, out, err
		}
	}
	res, err := s.eng.Search(ctx, req)
	if err != nil {
		return nil, out, engineErr("query", err)
	}
	out = QueryOut{Query: res.Query, Mode: string(res.Mode), Since: fmtMS(res.Since), Until: fmtMS(res.Until), Hits: []Hit{}}
	var b strings.Builder
	if len(res.Results) == 0 {
		b.WriteString("no matching memories.\n")
	}
	for i, r := range res.Results {
		h := Hit{ID: r.ChunkID, Session: r.Session, Role: r.Role, Kind: r.Kind, Time: fmtMS(r.Time), Seq: r.Seq,
			Score: r.Score, Snippet: snippet(r.Content, SnippetRunes), IsChunk: r.ChunkParent != "", ChunkParent: r.ChunkParent,
			Tool: toolOutOf(r.Tool), SupersededBy: r.SupersededBy}
		out.Hits = append(out.Hits, h)
		fmt.Fprintf(&b, "%d. [%s] %s %s%s id=%s score=%.4f", i+1, h.Time, orDash(h.Session), whoOf(h.Role, h.Kind), chunkNote(h.IsChunk), h.ID, h.Score)
		if h.Tool != nil {
			fmt.Fprintf(&b, " tool=%s", h.Tool.Name)
		}
		if len(h.SupersededBy) > 0 {
			fmt.Fprintf(&b, " superseded_by=%s", strings.Join(h.SupersededBy, ","))
		}
		fmt.Fprintf(&b, "\n   %s\n", h.Snippet)
	}
	return textResult(b.String()), out, nil
}

// ---- uc_context

func (s *server) toolContext(ctx context.Context, _ *mcp.CallToolRequest, in ContextIn) (*mcp.CallToolResult, ContextOut, error) {
	var out ContextOut
	budget := DefaultBudget
	if in.Budget != nil {
		if *in.Budget <= 0 {
			return nil, out, badArg("budget", "must be a positive number of tokens (e.g. 4000), got %d", *in.Budget)
		}
		budget = *in.Budget
	}
	recent := DefaultRecent
	if in.Recent != nil {
		if *in.Recent < 0 || *in.Recent > MaxLimit {
			return nil, out, badArg("recent", "must be 0 to %d, got %d", MaxLimit, *in.Recent)
		}
		recent = *in.Recent
	}
	if strings.TrimSpace(in.Query) == "" && (in.Session == "" || recent == 0) {
		return nil, out, badArg("query", "is empty: give the user's message (or a session to get its recent turns only)")
	}
	format, err := query.ParseFormat(in.Format)
	if err != nil {
		return nil, out, badArg("format", "%q: want xml, json or text", in.Format)
	}
	if in.Session != "" {
		if err := s.checkSession(ctx, "session", in.Session); err != nil {
			return nil, out, err
		}
	}
	res, err := s.eng.Context(ctx, ucl.ContextRequest{
		SearchRequest: ucl.SearchRequest{Text: in.Query, Session: in.Session, Now: s.opts.Now().UTC().Format(time.RFC3339Nano)},
		Budget:        budget, Recent: recent, Format: string(format),
	})
	if err != nil {
		return nil, out, engineErr("context", err)
	}
	out = ContextOut{Context: res.Context, Format: string(res.Format), Tokens: res.Tokens, Budget: res.Budget,
		Included: nonNil(res.Included), Recent: nonNil(res.Recent)}
	return textResult(res.Context), out, nil
}

// ---- uc_get

func (s *server) toolGet(ctx context.Context, _ *mcp.CallToolRequest, in GetIn) (*mcp.CallToolResult, GetOut, error) {
	var out GetOut
	if len(in.IDs) == 0 {
		return nil, out, badArg("ids", "is empty: give at least one id")
	}
	if len(in.IDs) > MaxLimit {
		return nil, out, badArg("ids", "has %d ids; at most %d per call", len(in.IDs), MaxLimit)
	}
	chunks, err := s.getChunks(ctx, in.IDs)
	if err != nil {
		return nil, out, err
	}
	if in.WithChunks {
		var parents []string
		for _, c := range chunks {
			if c.ChunkParent != "" {
				parents = append(parents, c.ChunkParent)
			}
		}
		if len(parents) > 0 {
			whole, err := s.getChunks(ctx, parents)
			if err != nil {
				return nil, out, err
			}
			// Replace each chunk by its whole, keeping the order asked for.
			byParent := map[string][]ucl.Item{}
			for _, c := range whole {
				byParent[c.ChunkParent] = append(byParent[c.ChunkParent], c)
			}
			var expanded []ucl.Item
			for _, c := range chunks {
				if c.ChunkParent != "" {
					expanded = append(expanded, byParent[c.ChunkParent]...)
					continue
				}
				expanded = append(expanded, c)
			}
			chunks = expanded
		}
	}
	seen := map[string]bool{}
	out.Items = []Item{}
	for _, c := range chunks {
		if !seen[c.ID] {
			seen[c.ID] = true
			out.Items = append(out.Items, itemOf(c))
		}
	}
	text := renderItems(out.Items)
	if in.History {
		if out.History, err = s.histories(ctx, in.IDs); err != nil {
			return nil, out, err
		}
		text += renderHistories(out.History)
	}
	return textResult(text), out, nil
}

// getChunks resolves ids (chunk ids or document ids) to live chunks, in the
// order given, a document's chunks in order. Unknown ids are one error that
// names them all.
func (s *server) getChunks(ctx context.Context, ids []string) ([]ucl.Item, error) {
	for _, id := range ids {
		if strings.TrimSpace(id) == "" {
			return nil, badArg("ids", "contains an empty id")
		}
	}
	res, err := s.eng.Get(ctx, ucl.GetRequest{IDs: ids})
	if errors.Is(err, timelines.ErrNotFound) && len(ids) > 1 {
		// The engine may fail the whole batch on one unknown id; ask id by
		// id so the error can name every missing one.
		res, err = &ucl.GetResult{}, nil
		for _, id := range ids {
			one, err := s.eng.Get(ctx, ucl.GetRequest{IDs: []string{id}})
			switch {
			case errors.Is(err, timelines.ErrNotFound):
				res.Items = append(res.Items, ucl.GetItem{ID: id})
			case err != nil:
				return nil, engineErr("get", err)
			default:
				res.Items = append(res.Items, one.Items...)
			}
		}
	} else if errors.Is(err, timelines.ErrNotFound) {
		res, err = &ucl.GetResult{Items: []ucl.GetItem{{ID: ids[0]}}}, nil
	}
	if err != nil {
		return nil, engineErr("get", err)
	}
	var out []ucl.Item
	var missing []string
	for _, it := range res.Items {
		if !it.Found || len(it.Chunks) == 0 {
			missing = append(missing, it.ID)
			continue
		}
		out = append(out, it.Chunks...)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: no item with id %s (never stored, or forgotten)", ErrNotFound, quoteList(missing))
	}
	return out, nil
}

// ---- uc_get_session

func (s *server) toolSession(ctx context.Context, _ *mcp.CallToolRequest, in SessionIn) (*mcp.CallToolResult, SessionOut, error) {
	var out SessionOut
	if strings.TrimSpace(in.Session) == "" {
		return nil, out, badArg("session", "is empty: give a session id (uc_list_sessions lists them)")
	}
	if in.From < 0 {
		return nil, out, badArg("from", "must be 0 or more, got %d", in.From)
	}
	req := ucl.SessionRequest{ID: in.Session, Offset: in.From}
	if in.Last != 0 {
		if in.From != 0 || in.Limit != 0 {
			return nil, out, badArg("last", "cannot be combined with from or limit: last=%d asks for the most recent items", in.Last)
		}
		last, err := checkRange("last", in.Last, DefaultLimit, MaxLimit)
		if err != nil {
			return nil, out, err
		}
		req.Last = last
	} else {
		limit, err := checkRange("limit", in.Limit, DefaultLimit, MaxLimit)
		if err != nil {
			return nil, out, err
		}
		req.Limit = limit
	}
	res, err := s.eng.Session(ctx, req)
	if err != nil {
		return nil, out, sessionErr("session", in.Session, err)
	}
	if req.Last > 0 {
		// The page ends at the session's end; report where it starts
		// so that paging backwards (from, limit) can continue.
		in.From = res.Total - len(res.Chunks)
	}
	out.Session = sessionInfoOf(res.Session, res.Summary.Text)
	out.Items = make([]Item, len(res.Chunks))
	for i, c := range res.Chunks {
		out.Items[i] = itemOf(c)
	}
	if end := in.From + len(res.Chunks); end < res.Total && len(res.Chunks) > 0 {
		out.Next = end
	}
	var b strings.Builder
	fmt.Fprintf(&b, "session %s: %d items, %s to %s. %s\n", out.Session.ID, res.Total, out.Session.First, out.Session.Last, out.Session.Title)
	if in.From >= res.Total && res.Total > 0 {
		fmt.Fprintf(&b, "from %d is past the end.\n", in.From)
	}
	if req.Last > 0 && in.From > 0 {
		fmt.Fprintf(&b, "the last %d items (from=%d); earlier ones: call again with from and limit.\n", len(res.Chunks), in.From)
	}
	b.WriteString(renderItems(out.Items))
	if out.Next > 0 {
		fmt.Fprintf(&b, "(more: call again with from=%d)\n", out.Next)
	}
	return textResult(b.String()), out, nil
}

// ---- uc_list_sessions

func (s *server) toolListSessions(ctx context.Context, _ *mcp.CallToolRequest, in ListSessionsIn) (*mcp.CallToolResult, ListSessionsOut, error) {
	var out ListSessionsOut
	limit, err := checkRange("limit", in.Limit, DefaultLimit, MaxLimit)
	if err != nil {
		return nil, out, err
	}
	var since int64
	if in.Since != "" {
		if since, err = ingest.ParseTime(in.Since); err != nil {
			return nil, out, badArg("since", "%v", err)
		}
	}
	res, err := s.eng.Sessions(ctx, ucl.SessionsRequest{})
	if err != nil {
		return nil, out, engineErr("list sessions", err)
	}
	out.Sessions = []SessionInfo{}
	for _, si := range res.Sessions {
		if in.Since != "" && si.Last < since {
			break // most recently active first: every later one is older
		}
		if len(out.Sessions) == limit {
			out.More = true
			break
		}
		// The L0 summary comes with one session's view; a page of one
		// chunk keeps that cheap.
		one, err := s.eng.Session(ctx, ucl.SessionRequest{ID: si.ID, Limit: 1})
		if err != nil {
			return nil, out, engineErr("list sessions", err)
		}
		out.Sessions = append(out.Sessions, sessionInfoOf(si, one.Summary.Text))
	}
	var b strings.Builder
	if len(out.Sessions) == 0 {
		b.WriteString("no sessions.\n")
	}
	for _, si := range out.Sessions {
		fmt.Fprintf(&b, "- %s (%d items, %s to %s): %s\n", si.ID, si.Items, si.First, si.Last, si.Title)
		if si.Summary != "" {
			fmt.Fprintf(&b, "  %s\n", snippet(si.Summary, 400))
		}
	}
	if out.More {
		fmt.Fprintf(&b, "(more sessions: raise limit, or use since)\n")
	}
	return textResult(b.String()), out, nil
}

// ---- uc_get_document

func (s *server) toolDocument(ctx context.Context, _ *mcp.CallToolRequest, in DocumentIn) (*mcp.CallToolResult, DocumentOut, error) {
	var out DocumentOut
	id, name := strings.TrimSpace(in.ID), strings.TrimSpace(in.Name)
	switch {
	case id == "" && name == "":
		return nil, out, badArg("id", "give the document's id or its name")
	case id != "" && name != "":
		return nil, out, badArg("name", "give id or name, not both")
	}
	if id == "" {
		var err error
		if id, err = s.documentByName(ctx, name); err != nil {
			return nil, out, err
		}
	}
	chunks, err := s.getChunks(ctx, []string{id})
	if err != nil {
		return nil, out, err
	}
	if len(chunks) == 1 && chunks[0].ChunkParent != "" {
		// A chunk id: the document is its parent.
		if chunks, err = s.getChunks(ctx, []string{chunks[0].ChunkParent}); err != nil {
			return nil, out, err
		}
	}
	first := chunks[0]
	out = DocumentOut{ID: first.ID, Name: first.Meta["name"], Session: first.Session, Time: fmtMS(first.Time)}
	if first.ChunkParent != "" {
		out.ID = first.ChunkParent
	}
	parts := make([]string, len(chunks))
	for i, c := range chunks {
		out.Chunks = append(out.Chunks, c.ID)
		parts[i] = c.Content
	}
	// Chunks are cut without dropping a byte: joined as they are they give
	// back the stored document exactly.
	out.Content = strings.Join(parts, "")
	head := fmt.Sprintf("document %s", out.ID)
	if out.Name != "" {
		head += fmt.Sprintf(" (%s)", out.Name)
	}
	return textResult(fmt.Sprintf("%s, %d chunk(s), %s:\n\n%s\n", head, len(chunks), out.Time, out.Content)), out, nil
}

// documentByName finds the id of the live document whose meta name is
// name: first through a search (fast when the name occurs in the text),
// then by walking the sessions' documents.
func (s *server) documentByName(ctx context.Context, name string) (string, error) {
	res, err := s.eng.Search(ctx, ucl.SearchRequest{Text: name, K: MaxK, Kinds: []string{"document", "tool_call"}, Mode: string(query.ModeBM25), NoTemporal: true})
	if err != nil && !errors.Is(err, query.ErrEmptyQuery) {
		return "", engineErr("find document", err)
	}
	if res != nil {
		for _, r := range res.Results {
			if strings.EqualFold(r.Meta["name"], name) {
				return docID(r.ChunkID, r.ChunkParent), nil
			}
		}
	}
	sessions, err := s.eng.Sessions(ctx, ucl.SessionsRequest{})
	if err != nil {
		return "", engineErr("find document", err)
	}
	for _, si := range sessions.Sessions {
		if si.Documents == 0 {
			continue
		}
		sess, err := s.eng.Session(ctx, ucl.SessionRequest{ID: si.ID})
		if err != nil {
			return "", engineErr("find document", err)
		}
		for _, c := range sess.Chunks {
			if (c.Kind == log.KindDocument || c.Kind == log.KindToolCall) && strings.EqualFold(c.Meta["name"], name) {
				return docID(c.ID, c.ChunkParent), nil
			}
		}
	}
	return "", fmt.Errorf("%w: no document named %q (names are the meta name given to uc_store)", ErrNotFound, name)
}

func docID(id, parent string) string {
	if parent != "" {
		return parent
	}
	return id
}

// ---- uc_period

func (s *server) toolPeriod(ctx context.Context, _ *mcp.CallToolRequest, in PeriodIn) (*mcp.CallToolResult, PeriodOut, error) {
	var out PeriodOut
	since, until, err := parsePeriod(in.Period, s.opts.Now())
	if err != nil {
		return nil, out, badArg("period", "%v", err)
	}
	if in.From < 0 {
		return nil, out, badArg("from", "must be 0 or more, got %d", in.From)
	}
	limit, err := checkRange("limit", in.Limit, DefaultLimit, MaxLimit)
	if err != nil {
		return nil, out, err
	}
	var kind log.Kind
	if in.Kind != "" {
		if kind, err = log.ParseKind(in.Kind); err != nil {
			return nil, out, badArg("kind", "%q is not a kind: want conversation, document, knowledge or tool_call", in.Kind)
		}
	}
	inSpan := func(t int64) bool { return (since == 0 || t >= since) && (until == 0 || t < until) }
	var sessions []ucl.SessionInfo
	if in.Session != "" {
		sessions = []ucl.SessionInfo{{ID: in.Session}}
		if err := s.checkSession(ctx, "session", in.Session); err != nil {
			return nil, out, err
		}
	} else {
		res, err := s.eng.Sessions(ctx, ucl.SessionsRequest{})
		if err != nil {
			return nil, out, engineErr("period", err)
		}
		for _, si := range res.Sessions {
			// Skip sessions whose span misses the period entirely.
			if (until != 0 && si.First >= until) || (since != 0 && si.Last < since) {
				continue
			}
			sessions = append(sessions, si)
		}
	}
	var all []ucl.Item
	for _, si := range sessions {
		sess, err := s.eng.Session(ctx, ucl.SessionRequest{ID: si.ID})
		if err != nil {
			return nil, out, sessionErr("period", si.ID, err)
		}
		for _, c := range sess.Chunks {
			if inSpan(c.Time) && (in.Kind == "" || c.Kind == kind) {
				all = append(all, c)
			}
		}
	}
	sortChunks(all)
	for i, j := 0, len(all)-1; i < j; i, j = i+1, j-1 {
		all[i], all[j] = all[j], all[i] // newest first
	}
	out = PeriodOut{Since: fmtMS(since), Until: fmtMS(until), Total: len(all), Items: []Item{}}
	for i := in.From; i < len(all) && len(out.Items) < limit; i++ {
		out.Items = append(out.Items, itemOf(all[i]))
	}
	if end := in.From + len(out.Items); end < len(all) && len(out.Items) > 0 {
		out.Next = end
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d item(s) from %s to %s (newest first).\n", out.Total, orOpen(out.Since), orOpen(out.Until))
	b.WriteString(renderItems(out.Items))
	if out.Next > 0 {
		fmt.Fprintf(&b, "(more: call again with from=%d)\n", out.Next)
	}
	return textResult(b.String()), out, nil
}

// ---- uc_forget

func (s *server) toolForget(ctx context.Context, _ *mcp.CallToolRequest, in ForgetIn) (*mcp.CallToolResult, ForgetOut, error) {
	var out ForgetOut
	req := ucl.TombstoneRequest{Session: in.Session, Reason: in.Reason}
	from, to, err := checkSpan("from", in.From, "to", in.To)
	if err != nil {
		return nil, out, err
	}
	if (from != "") != (to != "") {
		return nil, out, badArg("to", "a time range needs both from and to")
	}
	req.From, req.To = from, to
	if len(in.IDs) == 0 && in.Session == "" && from == "" {
		return nil, out, badArg("ids", "say what to forget: ids, a session, or a from/to range")
	}
	if len(in.IDs) > 0 {
		// Resolve every id before writing anything: an unknown id fails the
		// whole call, so nothing is half-forgotten.
		chunks, err := s.getChunks(ctx, in.IDs)
		if err != nil {
			return nil, out, err
		}
		asked := map[string]bool{}
		for _, id := range in.IDs {
			asked[id] = true
		}
		docs := map[string]bool{}
		for _, c := range chunks {
			if asked[c.ID] {
				req.Chunks = append(req.Chunks, c.ID)
			} else if c.ChunkParent != "" && asked[c.ChunkParent] && !docs[c.ChunkParent] {
				docs[c.ChunkParent] = true
				req.Documents = append(req.Documents, c.ChunkParent)
			}
		}
	}
	if in.Session != "" {
		if err := s.checkSession(ctx, "session", in.Session); err != nil {
			return nil, out, err
		}
	}
	res, err := s.eng.Tombstone(ctx, req)
	if err != nil {
		return nil, out, engineErr("forget", err)
	}
	out = ForgetOut{Seq: res.Seq, Removed: nonNil(res.Removed), Erasure: false, Note: ucl.TombstoneNote}
	text := fmt.Sprintf("forgot %d item(s) (tombstone seq %d): they are hidden from every search, context and session view at once.\n%s\n",
		len(out.Removed), out.Seq, ucl.TombstoneNote)
	return textResult(text), out, nil
}

// ---- uc_status

func (s *server) toolStatus(ctx context.Context, _ *mcp.CallToolRequest, _ StatusIn) (*mcp.CallToolResult, StatusOut, error) {
	var out StatusOut
	st, err := s.eng.Status(ctx, ucl.StatusRequest{})
	if err != nil {
		return nil, out, engineErr("status", err)
	}
	ps, err := s.eng.ProjectionStatus(ctx, ucl.ProjectionStatusRequest{})
	if err != nil {
		return nil, out, engineErr("status", err)
	}
	out = StatusOut{Events: st.Events, Head: st.HeadSeq, HeadHash: st.HeadHash, CaughtUp: true, Projections: []ProjectionStatus{}}
	for _, p := range ps.Projections {
		caught := p.Behind == 0 && p.OnChain
		out.CaughtUp = out.CaughtUp && caught
		out.Projections = append(out.Projections, ProjectionStatus{Name: p.Name, Seq: p.Checkpoint.Seq, CaughtUp: caught})
	}
	if m := st.Mirror; m != nil {
		out.Mirror = &MirrorStatus{Pending: m.Posting + m.Submitted, Confirmed: m.Confirmed, SafeUpTo: m.SafeSeq}
		if st.HeadSeq > m.CoveredSeq {
			out.Mirror.Unuploaded = st.HeadSeq - m.CoveredSeq
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d events, head seq %d.\n", out.Events, out.Head)
	for _, p := range out.Projections {
		state := "caught up"
		if !p.CaughtUp {
			state = fmt.Sprintf("at seq %d (catches up on the next read)", p.Seq)
		}
		fmt.Fprintf(&b, "projection %s: %s\n", p.Name, state)
	}
	if st.MirrorText != "" {
		fmt.Fprintf(&b, "mirror: %s\n", st.MirrorText)
	} else if out.Mirror == nil {
		b.WriteString("mirror: none\n")
	}
	return textResult(b.String()), out, nil
}

// ---- helpers

// checkSession fails with a bad-argument error naming arg when the
// session does not exist.
func (s *server) checkSession(ctx context.Context, arg, id string) error {
	if strings.TrimSpace(id) == "" {
		return badArg(arg, "contains an empty session id")
	}
	if _, err := s.eng.Session(ctx, ucl.SessionRequest{ID: id, Limit: 1}); err != nil {
		return sessionErr(arg, id, err)
	}
	return nil
}

func sessionErr(arg, id string, err error) error {
	if errors.Is(err, timelines.ErrNotFound) {
		return fmt.Errorf("%w %s: %w: no session %q (uc_list_sessions lists them)", ErrBadArgument, arg, ErrNotFound, id)
	}
	return engineErr(arg, err)
}

// engineErr turns an engine error into a tool error. Input errors keep
// their message (they say what is wrong); others are prefixed with what
// failed.
func engineErr(what string, err error) error {
	switch {
	case errors.Is(err, ucl.ErrBadRequest), errors.Is(err, ingest.ErrBadInput), errors.Is(err, query.ErrEmptyQuery),
		errors.Is(err, query.ErrBadBudget), errors.Is(err, query.ErrBadK), errors.Is(err, query.ErrBadMode),
		errors.Is(err, query.ErrBadFormat), errors.Is(err, query.ErrBadFilter), errors.Is(err, query.ErrBadTimeRange):
		return fmt.Errorf("%w: %w", ErrBadArgument, err)
	case errors.Is(err, timelines.ErrNotFound), errors.Is(err, ucl.ErrNoDocument), errors.Is(err, ucl.ErrNoMatch):
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func checkRange(name string, v, def, max int) (int, error) {
	switch {
	case v == 0:
		return def, nil
	case v < 0 || v > max:
		return 0, badArg(name, "must be 1 to %d, got %d", max, v)
	}
	return v, nil
}

func checkKinds(kinds []string) error {
	for _, k := range kinds {
		if _, err := log.ParseKind(k); err != nil || k == "" {
			return badArg("kinds", "%q is not a kind: want conversation, document, knowledge or tool_call", k)
		}
	}
	return nil
}

// checkSpan validates a time range given as strings and returns them in
// RFC 3339 (the engine parses them again; unix ms survive either way).
func checkSpan(sinceName, since, untilName, until string) (string, string, error) {
	var a, b int64
	var err error
	if since != "" {
		if a, err = ingest.ParseTime(since); err != nil {
			return "", "", badArg(sinceName, "%v", err)
		}
		since = fmtMS(a)
		if a == 0 {
			since = "1970-01-01T00:00:00.001Z"
		}
	}
	if until != "" {
		if b, err = ingest.ParseTime(until); err != nil {
			return "", "", badArg(untilName, "%v", err)
		}
		until = fmtMS(b)
	}
	if since != "" && until != "" && b <= a {
		return "", "", badArg(untilName, "%s is not after %s %s", until, sinceName, since)
	}
	return since, until, nil
}

func itemOf(c ucl.Item) Item {
	return Item{ID: c.ID, Session: c.Session, Role: c.Role, Kind: c.Kind.String(), Time: fmtMS(c.Time), Seq: c.Seq,
		Content: c.Content, Meta: c.Meta, Parent: c.Parent, ChunkParent: c.ChunkParent, ChunkIndex: c.ChunkIndex,
		Tool: toolOutOf(c.Tool), Supersedes: c.Supersedes, EditedBy: c.EditedBy, Edited: c.Edited}
}

func sessionInfoOf(si ucl.SessionInfo, summary string) SessionInfo {
	return SessionInfo{ID: si.ID, First: fmtMS(si.First), Last: fmtMS(si.Last), Items: si.Chunks, Kinds: si.Kinds,
		Title: si.Title, Summary: summary}
}

// sortChunks orders by content time, then seq (the timelines' order).
func sortChunks(cs []ucl.Item) {
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].Time != cs[j].Time {
			return cs[i].Time < cs[j].Time
		}
		return cs[i].Seq < cs[j].Seq
	})
}

func renderItems(items []Item) string {
	var b strings.Builder
	for _, it := range items {
		fmt.Fprintf(&b, "[%s] %s %s id=%s", it.Time, orDash(it.Session), whoOf(it.Role, it.Kind), it.ID)
		if it.Parent != "" {
			fmt.Fprintf(&b, " reply-to=%s", it.Parent)
		}
		if it.ChunkParent != "" {
			fmt.Fprintf(&b, " chunk %d of %s", it.ChunkIndex, it.ChunkParent)
		}
		if it.Tool != nil {
			fmt.Fprintf(&b, " tool=%s args=%s status=%s", it.Tool.Name, compactJSON(it.Tool.Args), orDash(it.Tool.Status))
		}
		if it.Edited {
			fmt.Fprintf(&b, " edited")
		}
		fmt.Fprintf(&b, "\n%s\n\n", it.Content)
	}
	return b.String()
}

func fmtMS(ms int64) string {
	if ms == 0 {
		return ""
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}

func snippet(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func whoOf(role, kind string) string {
	if role != "" {
		return role
	}
	return kind
}

func chunkNote(isChunk bool) string {
	if isChunk {
		return " (chunk of a larger item)"
	}
	return ""
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func orOpen(s string) string {
	if s == "" {
		return "open"
	}
	return s
}

func quoteList(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = fmt.Sprintf("%q", id)
	}
	return strings.Join(q, ", ")
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
