package ucl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/unlimitedcontext/ucl/internal/ingest"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections/projstd"
	"github.com/unlimitedcontext/ucl/projections/timelines"
)

func badRequest(format string, a ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, a...), ErrBadRequest)
}

// checkMetaFilter is the rule of a meta filter (Get, Index): every key is
// non-empty. Query checks the same in its plan (query.ErrBadFilter).
func checkMetaFilter(meta map[string]string) error {
	for k := range meta {
		if k == "" {
			return badRequest("meta: empty key")
		}
	}
	return nil
}

// parseTime parses a request time ("" is 0).
func parseTime(field, v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	ms, err := ingest.ParseTime(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %v: %w", field, err, ErrBadRequest)
	}
	return ms, nil
}

// results pairs the log's results with their entries, so that the chunks
// of a split document carry the document id a reader asks Get for.
func results(rs []log.Result, entries []log.Entry) []EventResult {
	out := make([]EventResult, len(rs))
	for i, r := range rs {
		out[i] = EventResult{Seq: r.Seq, ID: r.ID, Hash: r.Hash, Existed: r.Existed}
		if i < len(entries) {
			if st, ok := entries[i].Body.(*log.Store); ok {
				out[i].ChunkID, out[i].ChunkParent = st.ChunkID, st.ChunkParent
			}
		}
	}
	return out
}

// Append parses req.JSONL completely and appends its events: inputs of up
// to AppendBlock events atomically, larger ones in blocks of AppendBlock.
// A bad line rejects the whole input before anything is written.
func (s *Store) Append(ctx context.Context, req AppendRequest) (*AppendResult, error) {
	entries, allow, err := ingest.ReadAllFlags(strings.NewReader(req.JSONL), ingest.Options{ChunkTokens: req.ChunkTokens})
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, ErrNoInput
	}
	if err := s.needKeys(); err != nil {
		return nil, err
	}
	if err := s.checkSupersedes(ctx, entries); err != nil {
		return nil, fmt.Errorf("append: %w", err)
	}
	all := entries
	var plan *dupPlan
	if !req.AllowDuplicate {
		s.dedupMu.Lock()
		defer s.dedupMu.Unlock()
		if plan, err = s.planDuplicates(ctx, entries, allow); err != nil {
			return nil, err
		}
		entries = plan.kept
	} else if hasTombstone(entries) {
		s.dedupMu.Lock() // a consolidation's check and append hold it too
		defer s.dedupMu.Unlock()
	}
	// What was derived from the input's tombstones' targets goes at the
	// end of the input, under the lock a consolidation's check holds.
	n := len(entries)
	if hasTombstone(entries) {
		s.lockProj()
		defer s.projMu.Unlock()
		derived, err := s.appendCascadeLocked(ctx, entries)
		if err != nil {
			return nil, fmt.Errorf("append: derived memory: %w", err)
		}
		entries = append(entries[:n:n], derived...)
	}
	if len(entries) > AppendBlock {
		// Several batches: a conflict late in the input must fail before
		// the first one is written.
		if err := s.st.Log.Check(entries); err != nil {
			return nil, fmt.Errorf("append: %w", err)
		}
	}
	res := &AppendResult{Results: []EventResult{}}
	defer s.notifyAppend()
	for i := 0; i < len(entries); i += AppendBlock {
		block := entries[i:min(i+AppendBlock, len(entries))]
		rs, err := s.st.Log.AppendBatch(ctx, block)
		if err != nil {
			if i > 0 {
				return res, fmt.Errorf("append events %d..%d: %w (events 1..%d were written)", i+1, i+len(block), err, i)
			}
			return nil, fmt.Errorf("append: %w", err)
		}
		res.Results = append(res.Results, results(rs, block)...)
		if req.Progress != nil {
			req.Progress("append", uint64(i+len(block)), uint64(len(entries)))
		}
	}
	res.Results = res.Results[:min(n, len(res.Results))]
	if plan != nil {
		res.Results = plan.merge(res.Results, all)
	}
	return res, nil
}

// Remember stores one piece of memory, split into chunks like Append.
func (s *Store) Remember(ctx context.Context, req RememberRequest) (*AppendResult, error) {
	if req.Tool != nil {
		// A tool call: its result may not exist yet.
		if strings.TrimSpace(req.Tool.Name) == "" {
			return nil, badRequest("a tool call needs a name")
		}
		if req.Kind != "" && req.Kind != "tool_call" {
			return nil, badRequest("a tool call is of kind tool_call, not %s", req.Kind)
		}
		req.Kind = "tool_call"
		if req.Role == "" {
			req.Role = "tool"
		}
	} else if strings.TrimSpace(req.Content) == "" {
		return nil, badRequest("nothing to store: the text is empty")
	}
	if req.Kind == "" {
		req.Kind = "conversation"
	}
	if req.Role == "" {
		req.Role = "user"
	}
	if err := CheckRole(req.Role); err != nil {
		return nil, err
	}
	kind, err := log.ParseKind(req.Kind)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", err, ErrBadRequest)
	}
	st := &log.Store{Kind: kind, Session: req.Session, Role: req.Role, Content: req.Content,
		Meta: req.Meta, Parent: req.Parent, ChunkID: req.ChunkID, Tool: req.Tool, Supersedes: req.Supersedes}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("%v: %w", err, ErrBadRequest)
	}
	if st.Meta == nil {
		st.Meta = map[string]string{}
	}
	if st.Time, err = parseTime("time", req.Time); err != nil {
		return nil, err
	}
	var id log.ID
	if req.ID != "" {
		if id = ingest.EventID(req.ID); id.IsZero() {
			return nil, badRequest("the all-zero id is reserved (it means no id, which would turn idempotency off)")
		}
	}
	if err := s.needKeys(); err != nil {
		return nil, err
	}
	chunkTokens := req.ChunkTokens
	if chunkTokens <= 0 {
		chunkTokens = DefaultChunkTokens
	}
	if st.Kind == log.KindDocument || st.Kind == log.KindToolCall {
		if err := log.CheckDocumentSize(st); err != nil {
			return nil, fmt.Errorf("%w: %w (split the text into several documents)", ErrBadRequest, err)
		}
	}
	entries := ingest.StoreEntries(st, id, chunkTokens)
	for _, e := range entries {
		if err := log.CheckSize(e.Body); err != nil {
			// Bad request and, more precisely, too large (both match).
			return nil, fmt.Errorf("%w: %w (long text belongs in a document, kind document, which is split into chunks)", ErrBadRequest, err)
		}
	}
	if err := s.checkSupersedes(ctx, entries); err != nil {
		return nil, err
	}
	if !req.AllowDuplicate {
		s.dedupMu.Lock()
		defer s.dedupMu.Unlock()
		plan, err := s.planDuplicates(ctx, entries, nil)
		if err != nil {
			return nil, err
		}
		if len(plan.kept) == 0 {
			return &AppendResult{Results: plan.merge(nil, entries), Document: plan.document}, nil
		}
	}
	defer s.notifyAppend()
	rs, err := s.st.Log.AppendBatch(ctx, entries)
	if err != nil {
		return nil, err
	}
	res := &AppendResult{Results: results(rs, entries)}
	if len(entries) > 1 {
		res.Document = res.Results[0].ChunkParent
	}
	return res, nil
}

// Tombstone appends a tombstone for req's targets, documents expanded to
// their live chunks, and reports the chunks it removed.
func (s *Store) Tombstone(ctx context.Context, req TombstoneRequest) (*TombstoneResult, error) {
	t := &log.Tombstone{Chunks: append([]string(nil), req.Chunks...), Session: req.Session, Reason: req.Reason}
	var err error
	if t.From, err = parseTime("from", req.From); err != nil {
		return nil, err
	}
	if t.To, err = parseTime("to", req.To); err != nil {
		return nil, err
	}
	if (t.From != 0 || t.To != 0) && t.To <= t.From {
		return nil, badRequest("bad time range")
	}
	if len(t.Chunks) == 0 && len(req.Documents) == 0 && t.Session == "" && t.From == 0 {
		return nil, ErrNoTargets
	}
	s.lockProj()
	defer s.projMu.Unlock()
	set, err := s.caughtUpLocked(ctx, nil)
	if err != nil {
		return nil, err
	}
	if t.Chunks, err = documentChunks(set, req.Documents, t.Chunks); err != nil {
		return nil, err
	}
	// A tombstone is permanent: one that hits nothing (a mistyped id or
	// session) would only clutter the audit trail and hide the mistake.
	hit, err := set.Timelines.Matches(t)
	if err != nil {
		return nil, err
	}
	if len(hit) == 0 {
		return nil, fmt.Errorf("tombstone %s: %w", describeTargets(t), ErrNoMatch)
	}
	// What was derived from the targets goes in the same batch.
	tid := newID()
	derived, cascade, err := derivedCascade(set, tid, hit)
	if err != nil {
		return nil, fmt.Errorf("tombstone: derived memory: %w", err)
	}
	rs, err := s.st.Log.AppendBatch(ctx, append([]log.Entry{{ID: tid, Body: t}}, derived...))
	if err != nil {
		return nil, err
	}
	r := rs[0]
	cascade.written(derived, rs[1:])
	s.notifyAppend()
	if err := set.CatchUp(ctx, nil); err != nil {
		return nil, fmt.Errorf("catch up projections: %w", err)
	}
	removed, err := set.Timelines.Removed(r.Seq)
	if err != nil && !errors.Is(err, context.Canceled) {
		return nil, err
	}
	return &TombstoneResult{Seq: r.Seq, ID: r.ID, Hash: r.Hash, Removed: removed, Erasure: false, Note: TombstoneNote, Derived: cascade}, nil
}

// describeTargets names a tombstone's targets for an error message.
func describeTargets(t *log.Tombstone) string {
	var parts []string
	if len(t.Chunks) > 0 {
		parts = append(parts, "chunks "+strings.Join(t.Chunks, ", "))
	}
	if t.Session != "" {
		parts = append(parts, fmt.Sprintf("session %q", t.Session))
	}
	if t.From != 0 || t.To != 0 {
		parts = append(parts, fmt.Sprintf("content time [%s, %s)", time.UnixMilli(t.From).UTC().Format(time.RFC3339), time.UnixMilli(t.To).UTC().Format(time.RFC3339)))
	}
	return strings.Join(parts, " and ")
}

// documentChunks appends the live chunk ids of each document (by chunk
// parent) to ids: tombstones and grants name documents, the log and the
// projections know chunks. A document with no live chunk is ErrNoDocument.
func documentChunks(set *projstd.Set, docs, ids []string) ([]string, error) {
	for _, d := range docs {
		parts, err := set.Timelines.Document(d)
		if err != nil && !errors.Is(err, timelines.ErrNotFound) {
			return nil, err
		}
		if len(parts) == 0 {
			return nil, fmt.Errorf("no live document with chunk parent %q: %w", d, ErrNoDocument)
		}
		for _, p := range parts {
			ids = append(ids, p.ID)
		}
	}
	return ids, nil
}
