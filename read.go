package ucl

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/unlimitedcontext/ucl/consolidate"
	"github.com/unlimitedcontext/ucl/internal/fsutil"
	"github.com/unlimitedcontext/ucl/internal/mirror"
	"github.com/unlimitedcontext/ucl/internal/store"
	"github.com/unlimitedcontext/ucl/internal/textutil"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections/projstd"
	"github.com/unlimitedcontext/ucl/projections/timelines"
	"github.com/unlimitedcontext/ucl/query"
)

func marshalLine(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// tombstonedEvent is a store event whose chunk was tombstoned, as Replay
// shows it: header and targeting fields, no content or meta.
type tombstonedEvent struct {
	Seq        uint64   `json:"seq"`
	Time       string   `json:"time"`
	Type       string   `json:"type"`
	ID         log.ID   `json:"id"`
	Hash       log.Hash `json:"hash"`
	Prev       log.Hash `json:"prev"`
	ChunkID    string   `json:"chunk_id"`
	Session    string   `json:"session,omitempty"`
	Role       string   `json:"role,omitempty"`
	Kind       log.Kind `json:"kind"`
	Tombstoned bool     `json:"tombstoned"`
	By         uint64   `json:"tombstoned_by_seq"`
}

// rawEvent is an event's plaintext header, as Replay shows it with Raw.
type rawEvent struct {
	Seq       uint64   `json:"seq"`
	Time      string   `json:"time"`
	Type      string   `json:"type"`
	ID        log.ID   `json:"id"`
	KeyEpoch  uint32   `json:"key_epoch"`
	Hash      log.Hash `json:"hash"`
	Prev      log.Hash `json:"prev"`
	BodyBytes int      `json:"body_bytes"`
}

// Replay calls fn with each selected event as one JSON document, verified
// against the chain. Content of tombstoned chunks is withheld unless
// req.IncludeTombstoned. Raw needs no vault key.
func (s *Store) Replay(ctx context.Context, req ReplayRequest, fn func(json.RawMessage) error) error {
	var typ log.Type
	if req.Type != "" {
		var err error
		if typ, err = log.ParseType(req.Type); err != nil {
			return fmt.Errorf("%v: %w", err, ErrBadRequest)
		}
	}
	if req.To != 0 && req.From > req.To {
		return badRequest("empty range %d..%d", req.From, req.To)
	}
	l := s.st.Log
	if req.Raw || !l.HasKeys() {
		if !req.Raw {
			return log.ErrNoKeys
		}
		if req.Session != "" {
			return badRequest("a session filter needs decryption")
		}
		return l.Records(ctx, req.From, req.To, func(r *log.Record) error {
			if typ != 0 && r.Header.Type != typ {
				return nil
			}
			b, err := marshalLine(rawEvent{r.Header.Seq, log.FormatTime(r.Header.Time), r.Header.Type.String(), r.Header.ID,
				r.Header.KeyEpoch, r.Hash, r.Header.Prev, len(r.Raw) - log.HeaderSize})
			if err != nil {
				return err
			}
			return fn(b)
		})
	}
	var dead map[string]uint64
	if !req.IncludeTombstoned {
		tr := log.NewTombstoneTracker()
		if err := l.Events(ctx, 0, 0, func(e *log.Event) error { tr.Observe(e); return nil }); err != nil {
			return err
		}
		dead = tr.Dead()
	}
	return l.Events(ctx, req.From, req.To, func(e *log.Event) error {
		if typ != 0 && e.Type != typ {
			return nil
		}
		st := e.Chunk() // a store, or the version an edit put in place
		if req.Session != "" && (st == nil || st.Session != req.Session) {
			return nil
		}
		var v any = e
		if st != nil {
			if by, ok := dead[st.ChunkID]; ok {
				v = tombstonedEvent{e.Seq, log.FormatTime(e.Time), e.Type.String(), e.ID, e.Hash, e.Prev, st.ChunkID, st.Session, st.Role, st.Kind, true, by}
			}
		}
		b, err := marshalLine(v)
		if err != nil {
			return err
		}
		return fn(b)
	})
}

// AuditLog calls fn with one entry per event, verified against the chain.
// Tombstones list the chunks they removed. Without the vault key only the
// plaintext headers are reported.
func (s *Store) AuditLog(ctx context.Context, req AuditLogRequest, fn func(AuditEntry) error) error {
	var typ log.Type
	var err error
	if req.Type != "" {
		if typ, err = log.ParseType(req.Type); err != nil {
			return fmt.Errorf("%v: %w", err, ErrBadRequest)
		}
	}
	since, err := parseTime("since", req.Since)
	if err != nil {
		return err
	}
	until, err := parseTime("until", req.Until)
	if err != nil {
		return err
	}
	keep := func(h log.Header) bool {
		return (typ == 0 || h.Type == typ) && (since == 0 || h.Time >= since) && (until == 0 || h.Time < until)
	}
	by := s.st.Meta.WalletAddress
	l := s.st.Log
	if !l.HasKeys() {
		return l.Records(ctx, 0, 0, func(r *log.Record) error {
			if !keep(r.Header) {
				return nil
			}
			return fn(AuditEntry{Seq: r.Header.Seq, Time: log.FormatTime(r.Header.Time), Type: r.Header.Type.String(),
				ID: r.Header.ID, Hash: r.Hash, By: by, KeyEpoch: r.Header.KeyEpoch})
		})
	}
	shredBefore, err := s.shredCut(ctx)
	if err != nil {
		return err
	}
	tr := log.NewTombstoneTracker()
	return l.Events(ctx, 0, 0, func(e *log.Event) error {
		removed := tr.Observe(e)
		if !keep(e.Header) {
			return nil
		}
		a := AuditEntry{Seq: e.Seq, Time: log.FormatTime(e.Time), Type: e.Type.String(), ID: e.ID, Hash: e.Hash, By: by, KeyEpoch: e.KeyEpoch}
		switch b := e.Body.(type) {
		case *log.Shredded:
			a.Shredded = true
		case *log.Rekey:
			a.RekeyEpoch, a.RekeyKeys = b.Epoch, len(b.Keys)
		case *log.Store:
			a.ChunkID, a.Session, a.Kind, a.Role, a.Bytes = b.ChunkID, b.Session, b.Kind.String(), b.Role, len(b.Content)
		case *log.Tombstone:
			var t []string
			if len(b.Chunks) > 0 {
				t = append(t, fmt.Sprintf("chunks=%d", len(b.Chunks)))
			}
			if b.Session != "" {
				t = append(t, "session="+b.Session)
			}
			if b.From != 0 || b.To != 0 {
				t = append(t, fmt.Sprintf("content %s..%s", log.FormatTime(b.From), log.FormatTime(b.To)))
			}
			a.Targets, a.Reason, a.Removed, a.Erasure = strings.Join(t, " "), b.Reason, removed, "pending"
			if e.Seq < shredBefore {
				a.Erasure = "shredded"
			}
		case *log.Edit:
			a.ChunkID, a.Session, a.Kind, a.Role, a.Bytes = b.Store.ChunkID, b.Store.Session, b.Store.Kind.String(), b.Store.Role, len(b.Store.Content)
		case *log.ShareGrant:
			a.Grantee = b.Grantee
		case *log.ShareRevoke:
			a.Grantee = b.Grantee
		}
		return fn(a)
	})
}

// queryRequest converts a SearchRequest.
func queryRequest(r SearchRequest) (query.Request, error) {
	q := query.Request{Text: r.Text, K: r.K, Session: r.Session, Sessions: r.Sessions, Kinds: r.Kinds, Roles: r.Roles,
		NoTemporal: r.NoTemporal, Explain: r.Explain, IncludeSuperseded: r.IncludeSuperseded, Meta: r.Meta, MMRLambda: r.MMR}
	if r.MMR < 0 || r.MMR >= 1 {
		return q, badRequest("mmr takes a relevance weight in (0,1), e.g. 0.7")
	}
	for _, k := range q.Kinds {
		switch k {
		case "conversation", "document", "knowledge", "tool_call", "profile":
		default:
			return q, fmt.Errorf("unknown kind %q: %w", k, ErrBadRequest)
		}
	}
	var err error
	if q.Since, err = parseTime("since", r.Since); err != nil {
		return q, err
	}
	if q.Until, err = parseTime("until", r.Until); err != nil {
		return q, err
	}
	if q.Since != 0 && q.Until != 0 && q.Until <= q.Since {
		return q, badRequest("empty time range")
	}
	if r.Now != "" {
		ms, err := parseTime("now", r.Now)
		if err != nil {
			return q, err
		}
		q.Now = time.UnixMilli(ms).UTC()
	}
	if r.TZ != "" {
		if q.Location, err = time.LoadLocation(r.TZ); err != nil {
			return q, fmt.Errorf("time zone %q: %w: want an IANA name such as Europe/Lisbon, UTC or Local", r.TZ, ErrBadRequest)
		}
	}
	switch o := strings.ToLower(r.Origin); o {
	case "", "all":
		q.Origin = query.OriginAny
	case "own", "shared":
		q.Origin = query.Origin(o)
	default:
		return q, fmt.Errorf("unknown origin %q: %w", o, ErrBadRequest)
	}
	if q.Mode, err = query.ParseMode(r.Mode); err != nil {
		return q, err
	}
	return q, nil
}

// Search runs hybrid retrieval over the projections, caught up first.
func (s *Store) Search(ctx context.Context, req SearchRequest) (*SearchResult, error) {
	q, err := queryRequest(req)
	if err != nil {
		return nil, err
	}
	run, err := s.runner(ctx, req, &q)
	if err != nil {
		return nil, err
	}
	var res *SearchResult
	err = run(ctx, req.Progress, func(e *query.Engine) error {
		r, err := e.Search(ctx, q)
		if err != nil {
			return err
		}
		if q.AsOf == 0 { // shared chunks are not part of the log's past
			if err := s.searchSharedLocked(ctx, q, req.Progress, r); err != nil {
				return err
			}
		}
		res = &SearchResult{Response: *r}
		res.TimeFilter, err = timeNote(q, r, func() (int, error) {
			q2 := q
			q2.NoTemporal = true
			r2, err := e.Search(ctx, q2)
			if err != nil {
				return 0, fmt.Errorf("search without time phrases: %w", err)
			}
			return len(r2.Results), nil
		})
		return err
	})
	return res, err
}

// timeNote explains what time phrases did to a search when a reader
// could not tell from the results: a phrase that became a filter and left
// nothing (with the count of results without it, from without), or a
// phrase that only ranks its window first when no result falls inside it.
// A phrase filters when the response's window is narrower than the
// request's own --since/--until; otherwise it boosts.
func timeNote(q query.Request, r *query.Response, without func() (int, error)) (*TimeFilterNote, error) {
	if q.NoTemporal || len(r.Temporal) == 0 {
		return nil, nil
	}
	note := &TimeFilterNote{Phrases: r.Temporal, Since: r.Since, Until: r.Until}
	if r.Since != q.Since || r.Until != q.Until {
		if len(r.Results) > 0 {
			return nil, nil
		}
		n, err := without()
		if err != nil {
			return nil, err
		}
		note.Mode, note.Without = "filter", &n
		return note, nil
	}
	if len(r.Results) == 0 {
		return nil, nil
	}
	note.Mode, note.Since, note.Until = "boost", 0, 0
	for _, m := range r.Temporal {
		if m.Since != 0 && (note.Since == 0 || m.Since > note.Since) {
			note.Since = m.Since
		}
		if m.Until != 0 && (note.Until == 0 || m.Until < note.Until) {
			note.Until = m.Until
		}
	}
	for _, res := range r.Results {
		if res.MentionsWindow || (note.Since == 0 || res.Time >= note.Since) && (note.Until == 0 || res.Time < note.Until) {
			return nil, nil // a result in the window (or talking about it): the ranking speaks for itself
		}
	}
	return note, nil
}

// Context assembles an LLM context under req.Budget tokens.
func (s *Store) Context(ctx context.Context, req ContextRequest) (*ContextResult, error) {
	if strings.TrimSpace(req.Text) == "" && (req.Session == "" || req.Recent <= 0) {
		return nil, fmt.Errorf("nothing to look for: %w", query.ErrEmptyQuery)
	}
	q, err := queryRequest(req.SearchRequest)
	if err != nil {
		return nil, err
	}
	// K 0: the assembler considers enough ranked chunks to fill the budget.
	format, err := query.ParseFormat(req.Format)
	if err != nil {
		return nil, err
	}
	if req.Budget == 0 {
		req.Budget = DefaultBudget
	}
	if req.Budget < 0 {
		return nil, fmt.Errorf("budget %d: %w", req.Budget, query.ErrBadBudget)
	}
	if req.Recent < 0 {
		return nil, badRequest("bad recent %d", req.Recent)
	}
	run, err := s.runner(ctx, req.SearchRequest, &q)
	if err != nil {
		return nil, err
	}
	// The current profiles open the context, within half the budget
	// (consolidate_engine.go); the rest is packed under what is left. A
	// context as of an earlier moment has none: the profiles are today's.
	var block string
	if q.AsOf == 0 {
		if block, err = s.contextProfiles(ctx, string(format), req.Budget/2); err != nil {
			return nil, err
		}
	}
	budget := req.Budget - textutil.EstimateTokens(block)
	var a *query.Assembly
	err = run(ctx, req.Progress, func(e *query.Engine) error {
		creq := query.ContextRequest{Request: q, Budget: budget, RecentTurns: req.Recent, Format: format,
			Exclude: excluder(req.Exclude)}
		if q.AsOf != 0 { // shared chunks are not part of the log's past
			var err error
			a, err = e.Assemble(ctx, creq)
			return err
		}
		s.sharedMu.Lock()
		defer s.sharedMu.Unlock()
		cr, err := s.sharedContextLocked(ctx, e, creq, req.Progress)
		if err != nil {
			return err
		}
		a, err = cr.engine.Assemble(ctx, cr.req)
		return err
	})
	if err != nil {
		return nil, err
	}
	if block != "" {
		a.Output = consolidate.SpliceContext(string(format), a.Output, block)
		a.Tokens, a.Budget = textutil.EstimateTokens(string(a.Output)), req.Budget
	}
	return &ContextResult{Assembly: *a, Context: string(a.Output)}, nil
}

// excluder returns the test ContextRequest.Exclude describes (nil: none).
func excluder(texts []string) func(string) bool {
	if len(texts) == 0 {
		return nil
	}
	set := make(map[string]bool, len(texts))
	for _, t := range texts {
		set[collapseSpace(t)] = true
	}
	return func(content string) bool { return set[collapseSpace(content)] }
}

// collapseSpace makes every run of white space one space and trims the
// ends: the comparison ContextRequest.Exclude promises.
func collapseSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// Sessions lists sessions, most recent first.
func (s *Store) Sessions(ctx context.Context, req SessionsRequest) (*SessionsResult, error) {
	if req.Limit < 0 {
		return nil, badRequest("limit %d: want 0 (all) or more", req.Limit)
	}
	var ss []timelines.SessionInfo
	err := s.readProj(ctx, req.Progress, func(set *projstd.Set, _ bool) error {
		// Opening the set mapped pages of the full-text segments that a
		// listing never reads (9.4 MB at 1M events).
		s.adviseReads()
		var err error
		ss, err = set.Timelines.SessionsTop(req.Limit)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]SessionInfo, len(ss))
	for i, si := range ss {
		out[i] = sessionInfoOf(si)
	}
	return &SessionsResult{Sessions: out}, nil
}

// Session returns a session's live chunks in content-time order (from
// req.Offset, at most req.Limit when positive) and its summary.
func (s *Store) Session(ctx context.Context, req SessionRequest) (*SessionResult, error) {
	if req.Offset < 0 || req.Limit < 0 || req.Last < 0 || (req.Last > 0 && (req.Offset > 0 || req.Limit > 0)) {
		return nil, badRequest("bad page %d+%d (last %d)", req.Offset, req.Limit, req.Last)
	}
	var res *SessionResult
	asOf, read, err := s.readAt(ctx, req.Progress, req.AsOf)
	if err != nil {
		return nil, err
	}
	err = read(func(set *projstd.Set, live bool) error {
		offset, limit := req.Offset, req.Limit
		if req.Last > 0 {
			offset, limit = -req.Last, 0
		}
		if live && asOf != 0 { // as it was only if nothing was added since (asof.go)
			if _, all, _, err := set.Timelines.SessionPage(req.ID, 0, 0); err == nil && slices.ContainsFunc(all, func(c timelines.Chunk) bool { return c.Seq > asOf }) {
				return errAsOfRebuild
			}
		}
		info, chunks, total, err := set.Timelines.SessionPage(req.ID, offset, limit)
		if err != nil {
			return err
		}
		res = &SessionResult{Session: sessionInfoOf(info), Total: total}
		if set.Summary != nil {
			sum, _, err := set.Summary.Session(info.ID)
			if err != nil {
				return err
			}
			res.Summary = summaryOf(sum)
		}
		res.Chunks = itemsOf(chunks) // empty, not nil, for a page past the end
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// Get returns, for each id, the live chunk with that id or else the live
// chunks of the document with that chunk parent.
func (s *Store) Get(ctx context.Context, req GetRequest) (*GetResult, error) {
	res := &GetResult{Items: []GetItem{}}
	if err := checkMetaFilter(req.Meta); err != nil {
		return nil, err
	}
	asOf, read, err := s.readAt(ctx, nil, req.AsOf)
	if err != nil {
		return nil, err
	}
	err = read(func(set *projstd.Set, live bool) error {
		ids := req.IDs
		if len(req.Meta) > 0 {
			found, more, err := set.FTS.WithMeta(ctx, req.Meta, GetMetaLimit)
			if err != nil {
				return err
			}
			ids, res.More = append(slices.Clip(ids), found...), more
		}
		for i, id := range ids {
			it := GetItem{ID: id, Chunks: []Item{}}
			c, ok, err := set.Timelines.Chunk(id)
			if err != nil {
				return err
			}
			var parts []timelines.Chunk
			if ok {
				if live && c.Seq > asOf { // stored later: not there yet
					if i < len(req.IDs) { // asked for by id (not found by meta)
						res.Items = append(res.Items, it)
					}
					continue
				}
				parts = []timelines.Chunk{c}
				it.Content = c.Content
			} else {
				parts, err = set.Timelines.Document(id)
				if err != nil && !errors.Is(err, timelines.ErrNotFound) {
					return err
				}
				if live {
					parts = slices.DeleteFunc(parts, func(c timelines.Chunk) bool { return c.Seq > asOf })
				}
				it.Content, it.Missing = joinChunks(parts)
			}
			it.Found, it.Chunks = len(parts) > 0, itemsOf(parts)
			if it.Found {
				head := parts[0]
				if it.SupersededBy, err = set.Timelines.SupersededBy(&head); err != nil {
					return err
				}
				if req.History {
					if head.ChunkParent != "" {
						// A chunk's versions are its document's.
						parts, err := set.Timelines.Document(head.ChunkParent)
						if err != nil {
							return err
						}
						head = parts[0]
					}
					if it.History, err = s.history(head); err != nil {
						return fmt.Errorf("get %q: %w", id, err)
					}
				}
			}
			res.Items = append(res.Items, it)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// joinChunks reassembles a document from its chunks, which Timelines
// returns in chunk-index order. Chunk boundaries carry no separator (the
// chunker cuts the text without dropping a byte), so plain concatenation
// is the stored text; indexes absent from the sequence were tombstoned.
func joinChunks(parts []timelines.Chunk) (string, []int) {
	var b strings.Builder
	var missing []int
	next := 0
	for _, p := range parts {
		for ; next < p.ChunkIndex; next++ {
			missing = append(missing, next)
		}
		if p.ChunkIndex >= next {
			next = p.ChunkIndex + 1
		}
		b.WriteString(p.Content)
	}
	return b.String(), missing
}

// Status describes the store; the mirror part comes from the local state
// only (no network call).
func (s *Store) Status(ctx context.Context, req StatusRequest) (*StatusResult, error) {
	head, hash := s.st.Log.Head()
	r := &StatusResult{Dir: s.st.Dir, Events: head, HeadSeq: head, HeadHash: hash.String(),
		SizeBytes: fsutil.DiskUsage(s.st.Dir), LogBytes: fsutil.DiskUsage(s.st.Path(store.LogDir)),
		Durability: s.st.Log.Durability().String(), LogID: s.st.Meta.LogID, WalletAddress: s.st.Meta.WalletAddress,
		VaultKey: s.st.Keys != nil}
	if s.st.Keys != nil {
		r.KeyEpoch = s.st.Keys.Current()
	}
	path := s.st.Path(store.MirrorFile)
	if _, err := os.Stat(path); err != nil {
		r.MirrorText = "not mirrored (nothing pushed yet)"
		return r, nil
	}
	if !s.mirror.TryLock() {
		r.MirrorText = "state busy (a sync is running)"
		return r, nil
	}
	defer s.mirror.Unlock()
	st, err := mirror.OpenState(path)
	if errors.Is(err, mirror.ErrMirrorStateCorrupt) {
		r.MirrorText = "state unreadable: " + err.Error()
		return r, nil
	}
	if err != nil {
		r.MirrorText = "state busy (a sync is running)"
		return r, nil
	}
	defer st.Close()
	sum, segs, diverged, err := s.localSummary(st, s.st.Meta.LogIDBytes())
	if err != nil {
		r.MirrorText = "state unreadable: " + err.Error()
		return r, nil
	}
	r.Mirror = &MirrorSummary{Segments: sum.Segments, CoveredSeq: sum.CoveredSeq, SafeSeq: sum.SafeSeq,
		Posting: sum.Posting, Submitted: sum.Submitted, Confirmed: sum.Confirmed, Bytes: sum.Bytes, Diverged: len(segs) - diverged}
	switch {
	case sum.CoveredSeq == 0:
		r.MirrorText = fmt.Sprintf("nothing mirrored yet (0 of %d events on Arweave)", head)
	default:
		r.MirrorText = fmt.Sprintf("%d segments; on Arweave up to %d of %d, confirmed up to %d", sum.Segments, sum.CoveredSeq, head, sum.SafeSeq)
	}
	if n := r.Mirror.Diverged; n > 0 {
		r.MirrorText += fmt.Sprintf("; %d segments on Arweave hold another history than this log (it was cut below them and regrown): pushing refuses until the log is rebuilt from Arweave or a new log is started", n)
	}
	return r, nil
}

// AuditShow reports one event (see API). It reads the whole log (the audit
// entry, and whether a later tombstone removed the event, are known only
// at the end); it is an audit command, not a hot path.
func (s *Store) AuditShow(ctx context.Context, req AuditShowRequest) (*AuditShowResult, error) {
	l := s.st.Log
	head, _ := l.Head()
	if req.Seq == 0 || req.Seq > head {
		return nil, fmt.Errorf("audit show: seq %d: %w (head is %d)", req.Seq, log.ErrNotFound, head)
	}
	raw, err := l.Raw(req.Seq)
	if err != nil {
		return nil, fmt.Errorf("audit show: %w", err)
	}
	h, err := log.DecodeHeader(raw)
	if err != nil {
		return nil, fmt.Errorf("audit show: %w", err)
	}
	res := &AuditShowResult{Header: hex.EncodeToString(raw[:log.HeaderSize]), Prev: h.Prev, Status: "live"}
	found := false
	err = s.AuditLog(ctx, AuditLogRequest{}, func(e AuditEntry) error {
		if e.Seq == req.Seq {
			res.AuditEntry, found = e, true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("audit show: seq %d: %w", req.Seq, log.ErrNotFound)
	}
	if !l.HasKeys() {
		res.Status = "unknown without the vault key (headers only)"
		return res, nil
	}
	// Replay renders the event and, for tombstoned content, the tombstone
	// that withholds it.
	err = s.Replay(ctx, ReplayRequest{From: req.Seq, To: req.Seq}, func(b json.RawMessage) error {
		res.Event = b
		var t tombstonedEvent
		if err := json.Unmarshal(b, &t); err != nil {
			return fmt.Errorf("audit show: %w", err)
		}
		if t.Tombstoned {
			res.TombstonedBy = t.By
			res.Status = "tombstoned: hidden everywhere, not erased (the ciphertext stays on Arweave and the current vault key can decrypt it until a key rotation shreds it)"
		}
		if res.AuditEntry.Shredded {
			res.Status = "shredded: a vault-key rotation erased this content after it was tombstoned; nobody can decrypt it, from this device or from Arweave (by design, not damage)"
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}
