package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/index"
	"github.com/unlimitedcontext/ucl/internal/ingest"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections/timelines"
	"github.com/unlimitedcontext/ucl/query"
)

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
	if in.Kind != "" {
		if err := ucl.CheckKind(in.Kind); err != nil {
			return nil, out, badArg("kind", "%q is not a kind: want conversation, document, knowledge or tool_call", in.Kind)
		}
	}
	kind, err := log.ParseKind(in.Kind)
	if err != nil { // cannot happen after CheckKind; kept so a change there cannot pass a bad kind
		return nil, out, badArg("kind", "%v", err)
	}
	if err := ucl.CheckRole(in.Role); err != nil {
		return nil, out, fmt.Errorf("%w: %w", ErrBadArgument, err)
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
	req := ucl.SearchRequest{Text: in.Query, K: k, Session: in.Session, Sessions: in.Sessions, Kinds: in.Kinds, Roles: in.Roles,
		Now: s.now(), IncludeSuperseded: in.IncludeSuperseded}
	in.Recall.apply(&req, s.opts.TZ)
	if in.Now != "" {
		req.Now = in.Now // the engine parses it, as for every face
	}
	if err := checkKinds(in.Kinds); err != nil {
		return nil, out, err
	}
	for _, r := range in.Roles {
		if err := ucl.CheckRole(r); err != nil || r == "" {
			return nil, out, badArg("roles", "%q is not a role: want user, assistant, system, developer or tool", r)
		}
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
	if in.Session != "" {
		if err := s.checkSession(ctx, "session", in.Session); err != nil {
			return nil, out, err
		}
	}
	res, err := s.eng.Search(ctx, req)
	if err != nil {
		return nil, out, engineErr("query", err)
	}
	out = QueryOut{Query: snippet(res.Query, maxEcho), Mode: string(res.Mode), Since: fmtMS(res.Since), Until: fmtMS(res.Until), Hits: []Hit{}}
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

// apply sets the shared arguments on req, tz defaulting to tz (the
// server's); the engine checks them (a bad as_of, tz or meta key is its
// request error, as on every face).
func (r Recall) apply(req *ucl.SearchRequest, tz string) {
	req.AsOf, req.Meta, req.TZ = r.AsOf, r.Meta, r.TZ
	if req.TZ == "" {
		req.TZ = tz
	}
	if r.Diverse {
		req.MMR = DiverseMMR
	}
}

// DiverseMMR is the relevance weight of diverse: true (as the CLI's
// --diverse).
const DiverseMMR = 0.7

// ---- uc_context

func (s *server) toolContext(ctx context.Context, _ *mcp.CallToolRequest, in ContextIn) (*mcp.CallToolResult, ContextOut, error) {
	var out ContextOut
	budget := DefaultBudget
	if in.Budget != nil {
		if *in.Budget <= 0 || *in.Budget > maxIndexBudget {
			return nil, out, badArg("budget", "must be 1 to %d tokens (e.g. 4000), got %d", maxIndexBudget, *in.Budget)
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
	sr := ucl.SearchRequest{Text: in.Query, Session: in.Session, Now: s.now()}
	in.Recall.apply(&sr, s.opts.TZ)
	res, err := s.eng.Context(ctx, ucl.ContextRequest{SearchRequest: sr, Budget: budget, Recent: recent, Format: string(format)})
	if err != nil {
		return nil, out, engineErr("context", err)
	}
	out = ContextOut{Format: string(res.Format), Tokens: res.Tokens, Budget: res.Budget,
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
	limit, err := checkWindow(in.Offset, in.Limit)
	if err != nil {
		return nil, out, err
	}
	chunks, err := s.getChunksAt(ctx, in.IDs, in.AsOf)
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
			whole, err := s.getChunksAt(ctx, parents, in.AsOf)
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
			it := itemOf(c)
			if in.Offset > 0 || in.Limit > 0 {
				window(&it, in.Offset, limit)
			}
			out.Items = append(out.Items, it)
		}
	}
	budget := itemsBudget
	if in.History {
		budget /= 2 // the other half for the versions
	}
	n := fitItems(out.Items, budget)
	rest := out.Items[n:]
	out.Items = out.Items[:n]
	text := renderItems(out.Items)
	if len(rest) > 0 {
		ids := make([]string, len(rest))
		for i, it := range rest {
			ids[i] = it.ID
		}
		text += fmt.Sprintf("[%d more item(s) did not fit this result: uc_get {\"ids\":%s}]\n", len(rest), mustCompactJSON(ids))
	}
	if in.History {
		if out.History, err = s.histories(ctx, in.IDs); err != nil {
			return nil, out, err
		}
		fitVersions(out.History, itemsBudget/2)
		text += renderHistories(out.History)
	}
	return textResult(text), out, nil
}

// checkWindow validates a content window (offset, limit in bytes) and
// returns the limit to use.
func checkWindow(offset, limit int) (int, error) {
	if offset < 0 {
		return 0, badArg("offset", "must be 0 or more, got %d", offset)
	}
	return checkRange("limit", limit, itemsBudget, itemsBudget)
}

// getChunks resolves ids (chunk ids or document ids) to live chunks, in the
// order given, a document's chunks in order. Unknown ids are one error that
// names them all.
func (s *server) getChunks(ctx context.Context, ids []string) ([]ucl.Item, error) {
	return s.getChunksAt(ctx, ids, "")
}

// getChunksAt is getChunks as of a log seq or time ("": now).
func (s *server) getChunksAt(ctx context.Context, ids []string, asOf string) ([]ucl.Item, error) {
	for _, id := range ids {
		if strings.TrimSpace(id) == "" {
			return nil, badArg("ids", "contains an empty id")
		}
	}
	res, err := s.eng.Get(ctx, ucl.GetRequest{IDs: ids, AsOf: asOf})
	if errors.Is(err, timelines.ErrNotFound) && len(ids) > 1 {
		// The engine may fail the whole batch on one unknown id; ask id by
		// id so the error can name every missing one.
		res, err = &ucl.GetResult{}, nil
		for _, id := range ids {
			one, err := s.eng.Get(ctx, ucl.GetRequest{IDs: []string{id}, AsOf: asOf})
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
	if in.Offset < 0 {
		return nil, out, badArg("offset", "must be 0 or more, got %d", in.Offset)
	}
	req := ucl.SessionRequest{ID: in.Session, Offset: in.Offset, AsOf: in.AsOf}
	if in.Last != 0 {
		if in.Offset != 0 || in.Limit != 0 {
			return nil, out, badArg("last", "cannot be combined with offset or limit: last=%d asks for the most recent items", in.Last)
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
	out.Session = sessionInfoOf(res.Session, res.Summary.Text)
	out.Items = make([]Item, len(res.Chunks))
	for i, c := range res.Chunks {
		out.Items[i] = itemOf(c)
	}
	if req.Last > 0 {
		// The newest items are the point of last: fit from the end. The
		// page ends at the session's end; report where it starts so that
		// paging backwards (offset, limit) can continue.
		slices.Reverse(out.Items)
		out.Items = out.Items[:fitItems(out.Items, itemsBudget)]
		slices.Reverse(out.Items)
		in.Offset = res.Total - len(out.Items)
	} else {
		out.Items = out.Items[:fitItems(out.Items, itemsBudget)]
	}
	if end := in.Offset + len(out.Items); end < res.Total && len(out.Items) > 0 {
		out.NextOffset = end
	}
	var b strings.Builder
	fmt.Fprintf(&b, "session %s: %d items, %s to %s. %s\n", out.Session.ID, res.Total, out.Session.First, out.Session.Last, snippet(out.Session.Title, 200))
	if in.Offset >= res.Total && res.Total > 0 {
		fmt.Fprintf(&b, "offset %d is past the end.\n", in.Offset)
	}
	if req.Last > 0 && in.Offset > 0 {
		fmt.Fprintf(&b, "the last %d items (offset %d); earlier ones: call again with offset and limit.\n", len(out.Items), in.Offset)
	}
	b.WriteString(renderItems(out.Items))
	if out.NextOffset > 0 {
		fmt.Fprintf(&b, "(more: call again with offset=%d)\n", out.NextOffset)
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
	size := 0 // about the bytes of the text so far
	for _, si := range res.Sessions {
		if in.Since != "" && si.Last < since {
			break // most recently active first: every later one is older
		}
		if len(out.Sessions) == limit || size > itemsBudget {
			out.More = true
			break
		}
		// The L0 summary comes with one session's view; a page of one
		// chunk keeps that cheap.
		one, err := s.eng.Session(ctx, ucl.SessionRequest{ID: si.ID, Limit: 1})
		if err != nil {
			return nil, out, engineErr("list sessions", err)
		}
		info := sessionInfoOf(si, snippet(one.Summary.Text, 400))
		info.Title = snippet(info.Title, 200)
		size += itemOverhead + len(info.Title) + len(info.Summary)
		out.Sessions = append(out.Sessions, info)
	}
	var b strings.Builder
	if len(out.Sessions) == 0 {
		b.WriteString("no sessions.\n")
	}
	for _, si := range out.Sessions {
		fmt.Fprintf(&b, "- %s (%d items, %s to %s): %s\n", si.ID, si.Items, si.First, si.Last, si.Title)
		if si.Summary != "" {
			fmt.Fprintf(&b, "  %s\n", si.Summary)
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
	limit, err := checkWindow(in.Offset, in.Limit)
	if err != nil {
		return nil, out, err
	}
	chunks, err := s.document(ctx, id, name)
	if err != nil {
		return nil, out, err
	}
	first := chunks[0]
	out = DocumentOut{ID: docID(first.ID, first.ChunkParent), Name: first.Meta["name"], Session: first.Session, Time: fmtMS(first.Time)}
	parts := make([]string, len(chunks))
	for i, c := range chunks {
		out.Chunks = append(out.Chunks, c.ID)
		parts[i] = c.Content
	}
	// Chunks are cut without dropping a byte: joined as they are they give
	// back the stored document exactly.
	it := Item{ID: out.ID, Content: strings.Join(parts, "")}
	window(&it, in.Offset, limit)
	out.Content, out.Offset, out.Size, out.NextOffset = it.Content, it.Offset, max(it.Size, len(it.Content)), it.NextOffset
	head := fmt.Sprintf("document %s", out.ID)
	if out.Name != "" {
		head += fmt.Sprintf(" (%s)", snippet(out.Name, 200))
	}
	text := fmt.Sprintf("%s, %d chunk(s), %d bytes, %s:\n\n%s\n", head, len(chunks), out.Size, out.Time, out.Content)
	if out.Offset > 0 || out.NextOffset > 0 {
		text = fmt.Sprintf("%s, %d chunk(s), bytes %d to %d of %d, %s:\n\n%s\n", head, len(chunks), out.Offset, out.Offset+len(out.Content), out.Size, out.Time, out.Content)
	}
	if out.NextOffset > 0 {
		text += fmt.Sprintf("[cut at byte %d of %d; read on: uc_get_document {\"id\":%q,\"offset\":%d}]\n", out.NextOffset, out.Size, out.ID, out.NextOffset)
	}
	return textResult(text), out, nil
}

// document returns the chunks, in order, of the document with id (its
// own or any chunk's) or, when id is empty, named name.
func (s *server) document(ctx context.Context, id, name string) ([]ucl.Item, error) {
	var chunks []ucl.Item
	var err error
	if id == "" {
		chunks, err = s.documentByName(ctx, name)
	} else {
		chunks, err = s.getChunks(ctx, []string{id})
	}
	if err == nil && len(chunks) == 1 && chunks[0].ChunkParent != "" {
		// A chunk id: the document is its parent.
		chunks, err = s.getChunks(ctx, []string{chunks[0].ChunkParent})
	}
	return chunks, err
}

// maxCandidates bounds the candidates an ambiguous name lists.
const maxCandidates = 20

// documentByName returns the chunks of the one live item whose meta name
// is name, in any session or none. The engine finds exact names through
// the full-text index's meta terms (GetRequest.Meta: a term lookup); only
// when no item has the exact name does it look for the name in another
// case, through a replay of the log. The candidates are read back to keep
// only live ones whose current version still has the name. No item is
// ErrNotFound; several are ErrAmbiguous listing them.
func (s *server) documentByName(ctx context.Context, name string) ([]ucl.Item, error) {
	var ids []string
	seen := map[string]bool{}
	add := func(id string) {
		if id != "" && !seen[id] && len(ids) < 10*maxCandidates {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	exact, err := s.eng.Get(ctx, ucl.GetRequest{Meta: map[string]string{"name": name}})
	if err != nil {
		return nil, engineErr("find document", err)
	}
	for _, it := range exact.Items {
		for _, c := range it.Chunks {
			add(docID(c.ID, c.ChunkParent))
		}
	}
	if len(ids) == 0 {
		err = s.eng.Replay(ctx, ucl.ReplayRequest{}, func(line json.RawMessage) error {
			var ev struct {
				Type        string            `json:"type"`
				ChunkID     string            `json:"chunk_id"`
				ChunkParent string            `json:"chunk_parent"`
				Target      string            `json:"target"`
				Meta        map[string]string `json:"meta"`
				Tombstoned  bool              `json:"tombstoned"`
			}
			if err := json.Unmarshal(line, &ev); err != nil {
				return fmt.Errorf("read replayed event: %w", err)
			}
			if ev.Tombstoned || !strings.EqualFold(ev.Meta["name"], name) {
				return nil
			}
			if ev.Type == "edit" && ev.Target != "" {
				add(ev.Target)
			} else {
				add(docID(ev.ChunkID, ev.ChunkParent))
			}
			return nil
		})
		if err != nil {
			return nil, engineErr("find document", err)
		}
	}
	var found [][]ucl.Item
	for _, id := range ids {
		chunks, err := s.getChunks(ctx, []string{id})
		if errors.Is(err, ErrNotFound) {
			continue // forgotten since
		}
		if err != nil {
			return nil, err
		}
		if strings.EqualFold(chunks[0].Meta["name"], name) {
			found = append(found, chunks)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("%w: no item named %q (a name is the meta name given to uc_store; uc_query finds items by their text)", ErrNotFound, name)
	case 1:
		return found[0], nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d items are named %q; call again with the id of the one you mean:", len(found), name)
	for i, cs := range found {
		if i == maxCandidates {
			fmt.Fprintf(&b, "\n- and %d more", len(found)-i)
			break
		}
		c, size := cs[0], 0
		for _, p := range cs {
			size += len(p.Content)
		}
		fmt.Fprintf(&b, "\n- id=%s session=%s kind=%s time=%s %d bytes: %s", docID(c.ID, c.ChunkParent), orDash(c.Session), c.Kind, fmtMS(c.Time), size, snippet(c.Content, 80))
	}
	return nil, fmt.Errorf("%w: %s", ErrAmbiguous, b.String())
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
	if in.Offset < 0 {
		return nil, out, badArg("offset", "must be 0 or more, got %d", in.Offset)
	}
	limit, err := checkRange("limit", in.Limit, DefaultLimit, MaxLimit)
	if err != nil {
		return nil, out, err
	}
	if err := checkKinds(in.Kinds); err != nil {
		return nil, out, err
	}
	kinds := map[string]bool{}
	for _, k := range in.Kinds {
		kinds[k] = true
	}
	for k := range in.Meta {
		if k == "" {
			return nil, out, badArg("meta", "empty key")
		}
	}
	keep := func(c ucl.Item) bool {
		for k, v := range in.Meta {
			if got, ok := c.Meta[k]; !ok || got != v {
				return false
			}
		}
		return (since == 0 || c.Time >= since) && (until == 0 || c.Time < until) && (len(kinds) == 0 || kinds[c.Kind.String()])
	}
	var sessions []ucl.SessionInfo
	if len(in.Sessions) > 0 {
		for _, id := range in.Sessions {
			if err := s.checkSession(ctx, "sessions", id); err != nil {
				return nil, out, err
			}
			sessions = append(sessions, ucl.SessionInfo{ID: id})
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
			if keep(c) {
				all = append(all, c)
			}
		}
	}
	if len(in.Sessions) == 0 {
		loose, unlisted, err := s.sessionless(ctx, in.Kinds, in.Meta, since, until)
		if err != nil {
			return nil, out, err
		}
		for _, c := range loose {
			if keep(c) {
				all = append(all, c)
			}
		}
		out.Unlisted = unlisted
	}
	sortChunks(all)
	for i, j := 0, len(all)-1; i < j; i, j = i+1, j-1 {
		all[i], all[j] = all[j], all[i] // newest first
	}
	out.Since, out.Until, out.Total, out.Items = fmtMS(since), fmtMS(until), len(all)+out.Unlisted, []Item{}
	for i := in.Offset; i < len(all) && len(out.Items) < limit; i++ {
		out.Items = append(out.Items, itemOf(all[i]))
	}
	out.Items = out.Items[:fitItems(out.Items, itemsBudget)]
	if end := in.Offset + len(out.Items); end < len(all) && len(out.Items) > 0 {
		out.NextOffset = end
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d item(s) from %s to %s (newest first).\n", out.Total, orOpen(out.Since), orOpen(out.Until))
	if out.Unlisted > 0 {
		fmt.Fprintf(&b, "%d item(s) without a session are not listed (too many for one period): ask for a shorter period.\n", out.Unlisted)
	}
	b.WriteString(renderItems(out.Items))
	if out.NextOffset > 0 {
		fmt.Fprintf(&b, "(more: call again with offset=%d)\n", out.NextOffset)
	}
	return textResult(b.String()), out, nil
}

// sessionless returns the live items without a session whose content
// time is in [since, until) (0: open) and, of those, how many it could not
// list. Sessions do not reach them, so they come from the engine's index
// (the session filter "" is "no session"), which lists at most
// index.Snippets of them.
func (s *server) sessionless(ctx context.Context, kinds []string, meta map[string]string, since, until int64) ([]ucl.Item, int, error) {
	res, err := s.eng.Index(ctx, ucl.IndexRequest{Sessions: []string{""}, Kinds: kinds, Meta: meta, Since: fmtMS(since), Until: fmtMS(until),
		Now: s.now(), Budget: maxIndexBudget})
	if err != nil {
		return nil, 0, engineErr("period", err)
	}
	var ids []string
	for _, list := range [][]index.Item{res.Items, res.Snippets} {
		for _, it := range list {
			ids = append(ids, it.ID)
		}
	}
	if len(ids) == 0 {
		return nil, res.Matches, nil
	}
	chunks, err := s.getChunks(ctx, ids)
	if err != nil {
		return nil, 0, err
	}
	var out []ucl.Item
	for _, c := range chunks {
		if c.Session == "" {
			out = append(out, c)
		}
	}
	return out, max(0, res.Matches-len(ids)), nil
}

// ---- uc_forget

func (s *server) toolForget(ctx context.Context, _ *mcp.CallToolRequest, in ForgetIn) (*mcp.CallToolResult, ForgetOut, error) {
	var out ForgetOut
	req := ucl.TombstoneRequest{Session: in.Session, Reason: in.Reason}
	from, to, err := checkSpan("since", in.Since, "until", in.Until)
	if err != nil {
		return nil, out, err
	}
	if (from != "") != (to != "") {
		return nil, out, badArg("until", "a time span needs both since and until")
	}
	req.From, req.To = from, to
	if len(in.IDs) == 0 && in.Session == "" && from == "" {
		return nil, out, badArg("ids", "say what to forget: ids, a session, or a since/until span")
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

// engineErr turns an engine error into a tool error by its class
// (ucl.ClassOf): a bad request or a missing item keeps its message (it
// says what is wrong); others are prefixed with what failed.
func engineErr(what string, err error) error {
	switch ucl.ClassOf(err) {
	case ucl.ClassBadRequest:
		return fmt.Errorf("%w: %w", ErrBadArgument, err)
	case ucl.ClassNotFound:
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

// checkKinds checks a kinds filter with the engine's ucl.CheckKind.
func checkKinds(kinds []string) error {
	for _, k := range kinds {
		if err := ucl.CheckKind(k); err != nil {
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
		if it.Size > 0 && it.NextOffset == 0 {
			fmt.Fprintf(&b, " bytes %d-%d of %d", it.Offset, it.Offset+len(it.Content), it.Size)
		}
		fmt.Fprintf(&b, "\n%s\n", it.Content)
		if it.NextOffset > 0 {
			fmt.Fprintf(&b, "%s\n", cutMarker(it))
		}
		b.WriteString("\n")
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

func mustCompactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("(unprintable: %v)", err)
	}
	return string(b)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
