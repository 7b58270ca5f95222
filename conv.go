package ucl

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections/projstd"
	"github.com/unlimitedcontext/ucl/projections/timelines"
)

// The conversation model: edits with history, supersedes, threads (tool
// calls are RememberRequest.Tool). Formats: log/doc.go, store v2 and edit.

var (
	// ErrUnknownItem is returned when an id (to edit, to supersede, to
	// follow) names no item the store holds or has held.
	ErrUnknownItem = errors.New("ucl: no such item")
	// ErrTombstoned is returned by Edit when the item was tombstoned:
	// every version of it is hidden, and it cannot get a new one.
	ErrTombstoned = errors.New("ucl: the item is tombstoned")
	// ErrEditChunk is returned by Edit when the id names one chunk of a
	// chunked item (a document, a long tool result): such an item is
	// edited as a whole and re-chunked.
	ErrEditChunk = errors.New("ucl: a chunk of a chunked item cannot be edited alone")
)

// EditRequest replaces an item's content.
type EditRequest struct {
	// ID is the item: a chunk id, or the document id (chunk parent) of a
	// chunked item.
	ID      string `json:"id"`
	Content string `json:"content"`
	// Meta replaces the item's meta when not nil (an empty map clears it);
	// nil keeps it.
	Meta map[string]string `json:"meta,omitempty"`
	// By names who edits (shown in the history).
	By string `json:"by,omitempty"`
	// Status replaces a tool call's status (a pending call gets its result
	// and "ok" or "error"); "" keeps it. Only tool calls have one.
	Status      string `json:"status,omitempty"`
	ChunkTokens int    `json:"chunk_tokens,omitempty"`
}

// EditResult is the appended edit: one event per chunk of the new version.
type EditResult struct {
	ID string `json:"id"`
	// Prev is the seq of the version replaced.
	Prev    uint64        `json:"prev_seq"`
	Results []EventResult `json:"results"`
	// Removed lists chunks of the old version the new one has no
	// counterpart for (a re-chunk into fewer chunks).
	Removed []string `json:"removed,omitempty"`
}

// Version is one version of an item, as its history lists it.
type Version struct {
	Seq     uint64 `json:"seq"` // its first event
	EventID log.ID `json:"event_id"`
	Time    string `json:"time"` // when it was written (append time)
	// By is who wrote it: the editor of an edit, the role of the original.
	By      string            `json:"by,omitempty"`
	Edit    bool              `json:"edit"`
	Current bool              `json:"current,omitempty"`
	Content string            `json:"content"`
	Meta    map[string]string `json:"meta,omitempty"`
}

// ThreadRequest asks for the conversation around an item.
type ThreadRequest struct {
	ID string `json:"id"`
	// Depth bounds the steps followed each way (0: no bound).
	Depth int `json:"depth,omitempty"`
}

// ThreadItem is one chunk of a thread and its distance from the item
// asked for: negative up the reply-to chain, positive down the replies.
type ThreadItem struct {
	Item
	Depth int `json:"depth"`
}

// ThreadResult is a thread in content-time order (ties by seq).
type ThreadResult struct {
	ID string `json:"id"`
	// Root is the first message reached going up.
	Root  string       `json:"root"`
	Items []ThreadItem `json:"items"`
}

// item returns the live chunks of item id (a chunk id or a document id),
// the head (chunk 0) first; the error tells an unknown id from a
// tombstoned one and refuses a single chunk of a chunked item.
func item(set *projstd.Set, id string) ([]timelines.Chunk, error) {
	c, ok, err := set.Timelines.Chunk(id)
	if err != nil {
		return nil, err
	}
	if ok {
		if c.ChunkParent != "" {
			return []timelines.Chunk{c}, fmt.Errorf("%q is chunk %d of %q (edit %q as a whole): %w", id, c.ChunkIndex, c.ChunkParent, c.ChunkParent, ErrEditChunk)
		}
		return []timelines.Chunk{c}, nil
	}
	parts, err := set.Timelines.Document(id)
	if err != nil && !errors.Is(err, timelines.ErrNotFound) {
		return nil, err
	}
	if len(parts) > 0 {
		return parts, nil
	}
	gone, err := set.Timelines.WasRemoved(id)
	if err != nil {
		return nil, err
	}
	if gone {
		return nil, fmt.Errorf("%q: %w", id, ErrTombstoned)
	}
	return nil, fmt.Errorf("%q: %w", id, ErrUnknownItem)
}

// Edit appends the new version of an item. Nothing is written when the
// item is unknown, tombstoned, or a single chunk of a chunked item.
func (s *Store) Edit(ctx context.Context, req EditRequest) (*EditResult, error) {
	if strings.TrimSpace(req.ID) == "" {
		return nil, badRequest("edit: no item id")
	}
	if strings.TrimSpace(req.Content) == "" {
		return nil, badRequest("edit %q: the new text is empty", req.ID)
	}
	if err := s.needKeys(); err != nil {
		return nil, err
	}
	s.lockProj()
	defer s.projMu.Unlock()
	set, err := s.caughtUpLocked(ctx, nil)
	if err != nil {
		return nil, err
	}
	old, err := item(set, req.ID)
	if err != nil {
		return nil, fmt.Errorf("edit: %w", err)
	}
	head := old[0]
	st := log.Store{ChunkID: req.ID, Kind: head.Kind, Session: head.Session, Role: head.Role, Content: req.Content,
		Meta: head.Meta, Parent: head.Parent, Time: head.Time, Tool: head.Tool, Supersedes: head.Supersedes}
	if req.Meta != nil {
		st.Meta = req.Meta
	}
	if req.Status != "" {
		if head.Tool == nil {
			return nil, badRequest("edit %q: only a tool call has a status", req.ID)
		}
		tc := *head.Tool
		tc.Status = req.Status
		st.Tool = &tc
	}
	chunkTokens := req.ChunkTokens
	if chunkTokens <= 0 {
		chunkTokens = DefaultChunkTokens
	}
	if err := log.CheckDocumentSize(&st); err != nil {
		return nil, fmt.Errorf("edit %q: %w: %w (split the text into several documents)", req.ID, ErrBadRequest, err)
	}
	chunks := log.Chunk(&st, req.ID, chunkTokens)
	if len(chunks) == 1 && chunks[0].ChunkParent == "" && head.ChunkParent != "" {
		// A chunked item stays one: its id is a document id.
		c := *chunks[0]
		c.ChunkID, c.ChunkParent, c.ChunkIndex = req.ID+"#0", req.ID, 0
		chunks[0] = &c
	}
	keep := make(map[string]bool, len(chunks))
	for i, c := range chunks {
		keep[c.ChunkID] = true
		if i > 0 {
			c.Tool, c.Supersedes = nil, nil // the first chunk carries them
		}
	}
	var removes []string
	for _, c := range old {
		if !keep[c.ID] {
			removes = append(removes, c.ID)
		}
	}
	sort.Strings(removes)
	entries := make([]log.Entry, len(chunks))
	for i, c := range chunks {
		ed := &log.Edit{Target: req.ID, By: req.By, Store: *c}
		if i == 0 {
			ed.Prev, ed.Removes = head.Seq, removes
		}
		entries[i] = log.Entry{Body: ed}
	}
	rs, err := s.st.Log.AppendBatch(ctx, entries)
	if err != nil {
		return nil, fmt.Errorf("edit %q: %w", req.ID, err)
	}
	s.notifyAppend()
	res := &EditResult{ID: req.ID, Prev: head.Seq, Removed: removes, Results: make([]EventResult, len(rs))}
	for i, r := range rs {
		res.Results[i] = EventResult{Seq: r.Seq, ID: r.ID, Hash: r.Hash, Existed: r.Existed,
			ChunkID: chunks[i].ChunkID, ChunkParent: chunks[i].ChunkParent}
	}
	return res, nil
}

// eventAt reads and decrypts the event at seq.
func (s *Store) eventAt(seq uint64) (*log.Event, error) {
	raw, err := s.st.Log.Raw(seq)
	if err != nil {
		return nil, fmt.Errorf("read event %d: %w", seq, err)
	}
	ev, err := s.st.Log.Decrypt(raw)
	if err != nil {
		return nil, fmt.Errorf("read event %d: %w", seq, err)
	}
	return ev, nil
}

// history walks an item's versions back from its current head chunk:
// each edit names the seq of the version it replaced. A version of a
// chunked item is its chunk events, consecutive in the log (one batch).
func (s *Store) history(head timelines.Chunk) ([]Version, error) {
	var out []Version
	item := head.ItemID()
	last, _ := s.st.Log.Head()
	for seq := head.Seq; seq != 0; {
		ev, err := s.eventAt(seq)
		if err != nil {
			return nil, err
		}
		first := ev.Chunk()
		if first == nil {
			return nil, fmt.Errorf("history of %q: seq %d is a %s event", item, seq, ev.Type)
		}
		v := Version{Seq: seq, EventID: ev.ID, Time: log.FormatTime(ev.Time), Content: first.Content, Meta: first.Meta}
		var prev uint64
		same := func(e *log.Event, index int) bool { return false }
		if ed := ev.Edit(); ed != nil {
			v.Edit, v.By, prev = true, ed.By, ed.Prev
			same = func(e *log.Event, index int) bool {
				n := e.Edit()
				return n != nil && n.Target == ed.Target && n.Prev == 0 && n.Store.ChunkIndex == index
			}
		} else {
			v.By = first.Role
			if first.ChunkParent != "" {
				same = func(e *log.Event, index int) bool {
					n := e.Store()
					return n != nil && n.ChunkParent == first.ChunkParent && n.ChunkIndex == index
				}
			}
		}
		var b strings.Builder
		b.WriteString(first.Content)
		for next, index := seq+1, first.ChunkIndex+1; next <= last; next, index = next+1, index+1 {
			e, err := s.eventAt(next)
			if err != nil {
				return nil, err
			}
			if !same(e, index) {
				break
			}
			b.WriteString(e.Chunk().Content)
		}
		v.Content = b.String()
		out = append(out, v)
		if prev >= seq {
			return nil, fmt.Errorf("history of %q: edit at seq %d names a later version %d", item, seq, prev)
		}
		seq = prev
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	if len(out) > 0 {
		out[len(out)-1].Current = true
	}
	return out, nil
}

// supersedes checks that every id a store supersedes is a live item (or
// one the same input defines first, in pending).
func (s *Store) checkSupersedes(ctx context.Context, entries []log.Entry) error {
	var need bool
	for _, e := range entries {
		if st, ok := e.Body.(*log.Store); ok && len(st.Supersedes) > 0 {
			need = true
		}
	}
	if !need {
		return nil
	}
	s.lockProj()
	defer s.projMu.Unlock()
	set, err := s.caughtUpLocked(ctx, nil)
	if err != nil {
		return err
	}
	pending := map[string]bool{}
	for _, e := range entries {
		st, ok := e.Body.(*log.Store)
		if !ok {
			continue
		}
		for _, id := range st.Supersedes {
			if pending[id] {
				continue
			}
			if _, err := item(set, id); err != nil && !errors.Is(err, ErrEditChunk) {
				if errors.Is(err, ErrUnknownItem) || errors.Is(err, ErrTombstoned) {
					return fmt.Errorf("supersede %q: no live item has this id: %w", id, ErrUnknownItem)
				}
				return err
			}
		}
		pending[st.ChunkID] = true
		if st.ChunkID == "" && !e.ID.IsZero() {
			pending[e.ID.String()] = true
		}
		if st.ChunkParent != "" {
			pending[st.ChunkParent] = true
		}
	}
	return nil
}

// Thread follows parent (reply-to) links from an item: up to the root and
// down through every reply, tool calls included.
func (s *Store) Thread(ctx context.Context, req ThreadRequest) (*ThreadResult, error) {
	if strings.TrimSpace(req.ID) == "" {
		return nil, badRequest("thread: no item id")
	}
	if req.Depth < 0 {
		return nil, badRequest("thread: bad depth %d", req.Depth)
	}
	// A thread only reads the timelines: it runs beside other readers.
	var res *ThreadResult
	err := s.readProj(ctx, nil, func(set *projstd.Set, _ bool) error {
		var err error
		res, err = thread(set, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func thread(set *projstd.Set, req ThreadRequest) (*ThreadResult, error) {
	start, err := item(set, req.ID)
	if err != nil && !errors.Is(err, ErrEditChunk) {
		return nil, fmt.Errorf("thread: %w", err)
	}
	within := func(d int) bool { return req.Depth == 0 || d <= req.Depth }
	res := &ThreadResult{ID: req.ID, Root: start[0].ItemID(), Items: []ThreadItem{}}
	seen := map[string]bool{}
	type found struct {
		c     timelines.Chunk
		depth int
	}
	var all []found
	add := func(cs []timelines.Chunk, depth int) {
		for _, c := range cs {
			if !seen[c.ID] {
				seen[c.ID] = true
				all = append(all, found{c, depth})
			}
		}
	}
	add(start, 0)
	// Up: each parent until the root (or a parent no longer live).
	cur := start[0]
	for d := 1; cur.Parent != "" && within(d); d++ {
		up, err := item(set, cur.Parent)
		if errors.Is(err, ErrUnknownItem) || errors.Is(err, ErrTombstoned) {
			break
		}
		if err != nil && !errors.Is(err, ErrEditChunk) {
			return nil, fmt.Errorf("thread: %w", err)
		}
		if seen[up[0].ID] {
			break // a cycle of ids given by hand
		}
		add(up, -d)
		res.Root, cur = up[0].ItemID(), up[0]
	}
	// Down: replies to the item or to any of its chunks, breadth first.
	type node struct {
		ids   []string
		depth int
	}
	queue := []node{{ids: targets(start), depth: 0}}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if !within(n.depth + 1) {
			continue
		}
		for _, id := range n.ids {
			replies, err := set.Timelines.Replies(id)
			if err != nil {
				return nil, fmt.Errorf("thread: %w", err)
			}
			for _, r := range replies {
				if seen[r.ID] {
					continue
				}
				add([]timelines.Chunk{r}, n.depth+1)
				queue = append(queue, node{ids: targets([]timelines.Chunk{r}), depth: n.depth + 1})
			}
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i].c, all[j].c
		if a.Time != b.Time {
			return a.Time < b.Time
		}
		return a.OrderSeq() < b.OrderSeq()
	})
	for _, f := range all {
		res.Items = append(res.Items, ThreadItem{Item: itemOf(f.c), Depth: f.depth})
	}
	return res, nil
}

// targets are the ids a reply to these chunks may name as its parent.
func targets(cs []timelines.Chunk) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range cs {
		for _, id := range []string{c.ID, c.ItemID()} {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	return out
}
