package ucl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
)

func headSeq(s *Store) uint64 { h, _ := s.Log().Head(); return h }

func searchIDs(t *testing.T, s API, req SearchRequest) ([]string, map[string][]string) {
	t.Helper()
	r, err := s.Search(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	by := map[string][]string{}
	for _, x := range r.Results {
		ids = append(ids, x.ChunkID)
		by[x.ChunkID] = x.SupersededBy
	}
	return ids, by
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// An edit replaces the content everywhere a reader looks (get, search in
// every mode, session, context); the old text is gone from search but
// kept, with who and when, in the history; a tombstone then hides every
// version, and the item cannot be edited again.
func TestEditServesNewVersionEverywhere(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	if _, err := s.Remember(ctx, RememberRequest{Content: "I live in Lisbon near the aquarium", Session: "s1", ChunkID: "fact", Meta: map[string]string{"v": "1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Remember(ctx, RememberRequest{Content: "unrelated note about cello practice", Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Edit(ctx, EditRequest{ID: "fact", Content: "I live in Porto near the bridge", By: "alice", Meta: map[string]string{"v": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 1 || res.Prev != 1 {
		t.Fatalf("edit result %+v", res)
	}
	g, err := s.Get(ctx, GetRequest{IDs: []string{"fact"}, History: true})
	if err != nil {
		t.Fatal(err)
	}
	it := g.Items[0]
	if !it.Found || it.Content != "I live in Porto near the bridge" || it.Chunks[0].Meta["v"] != "2" || !it.Chunks[0].Edited || it.Chunks[0].EditedBy != "alice" {
		t.Fatalf("get after edit: %+v", it)
	}
	if len(it.History) != 2 || it.History[0].Content != "I live in Lisbon near the aquarium" || it.History[0].Edit ||
		it.History[0].Meta["v"] != "1" || !it.History[1].Edit || it.History[1].By != "alice" || !it.History[1].Current ||
		it.History[1].Content != it.Content || it.History[0].Time == "" {
		t.Fatalf("history %+v", it.History)
	}
	for _, mode := range []string{"bm25", "vector", "hybrid"} {
		ids, _ := searchIDs(t, s, SearchRequest{Text: "Lisbon aquarium", Mode: mode})
		r, err := s.Search(ctx, SearchRequest{Text: "Lisbon aquarium", Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range r.Results {
			if strings.Contains(x.Content, "Lisbon") {
				t.Fatalf("%s: old content served: %v", mode, ids)
			}
		}
		if mode == "bm25" && contains(ids, "fact") {
			t.Fatalf("bm25 still finds the old words: %v", ids)
		}
		ids, _ = searchIDs(t, s, SearchRequest{Text: "Porto bridge", Mode: mode})
		if len(ids) == 0 || ids[0] != "fact" {
			t.Fatalf("%s: new content not found first: %v", mode, ids)
		}
	}
	sess, err := s.Session(ctx, SessionRequest{ID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if sess.Chunks[0].ID != "fact" || sess.Chunks[0].Content != it.Content || sess.Total != 2 {
		t.Fatalf("session %+v", sess.Chunks)
	}
	if sum := asJSON(t, sess.Summary); strings.Contains(sum, "Lisbon") || !strings.Contains(sum, "Porto") {
		t.Fatalf("session summary: %s", sum)
	}
	c, err := s.Context(ctx, ContextRequest{SearchRequest: SearchRequest{Text: "where do I live"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(c.Context, "Lisbon") || !strings.Contains(c.Context, "Porto") {
		t.Fatalf("context: %s", c.Context)
	}
	if _, err := s.Tombstone(ctx, TombstoneRequest{Chunks: []string{"fact"}}); err != nil {
		t.Fatal(err)
	}
	var lines []string
	if err := s.Replay(ctx, ReplayRequest{}, func(b json.RawMessage) error { lines = append(lines, string(b)); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if strings.Contains(l, "Lisbon") || strings.Contains(l, "Porto") {
			t.Fatalf("replay shows a version of a tombstoned item: %s", l)
		}
	}
	before := headSeq(s)
	if _, err := s.Edit(ctx, EditRequest{ID: "fact", Content: "again"}); !errors.Is(err, ErrTombstoned) {
		t.Fatalf("edit of a tombstoned item: %v", err)
	}
	if headSeq(s) != before {
		t.Fatal("a refused edit wrote")
	}
}

// A chunked document is edited as a whole and re-chunked (here into
// fewer chunks); editing one of its chunks is refused, as are unknown ids
// and empty text, and nothing is written. The old version's dropped chunk
// is hidden from replay once the document is tombstoned.
func TestEditDocumentRechunks(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	var b strings.Builder
	for i := 0; i < 120; i++ {
		fmt.Fprintf(&b, "paragraph %d of the zeppelin manual.\n\n", i)
	}
	res, err := s.Remember(ctx, RememberRequest{Content: b.String(), Kind: "document", ChunkTokens: 200})
	if err != nil {
		t.Fatal(err)
	}
	doc := res.Document
	if doc == "" || len(res.Results) < 3 {
		t.Fatalf("want a chunked document: %+v", res)
	}
	before := headSeq(s)
	for _, tc := range []struct {
		req  EditRequest
		want error
	}{
		{EditRequest{ID: doc + "#1", Content: "x"}, ErrEditChunk},
		{EditRequest{ID: "nope", Content: "x"}, ErrUnknownItem},
		{EditRequest{ID: doc, Content: "  "}, ErrBadRequest},
	} {
		_, err := s.Edit(ctx, tc.req)
		if !errors.Is(err, tc.want) {
			t.Fatalf("%+v: %v, want %v", tc.req, err, tc.want)
		}
		if tc.want == ErrEditChunk && !strings.Contains(err.Error(), "as a whole") {
			t.Fatalf("the error must say how to edit: %v", err)
		}
	}
	if headSeq(s) != before {
		t.Fatal("a refused edit wrote")
	}
	er, err := s.Edit(ctx, EditRequest{ID: doc, Content: "the short zeppelin manual, revised", By: "bob", ChunkTokens: 200})
	if err != nil {
		t.Fatal(err)
	}
	if len(er.Results) != 1 || len(er.Removed) != len(res.Results)-1 {
		t.Fatalf("edit result %+v", er)
	}
	g, err := s.Get(ctx, GetRequest{IDs: []string{doc}, History: true})
	if err != nil {
		t.Fatal(err)
	}
	it := g.Items[0]
	if it.Content != "the short zeppelin manual, revised" || len(it.Chunks) != 1 || it.Chunks[0].ChunkParent != doc {
		t.Fatalf("get: %+v", it)
	}
	if len(it.History) != 2 || it.History[0].Content != b.String() || it.History[1].By != "bob" {
		t.Fatalf("history: %d versions %+v", len(it.History), it.History)
	}
	g, err = s.Get(ctx, GetRequest{IDs: []string{doc + "#0"}, History: true})
	if err != nil || len(g.Items[0].History) != 2 {
		t.Fatalf("history asked by a chunk id: %+v %v", g, err)
	}
	ids, _ := searchIDs(t, s, SearchRequest{Text: "paragraph 97", Mode: "bm25"})
	if len(ids) != 0 {
		t.Fatalf("old chunks still found: %v", ids)
	}
	if _, err := s.Tombstone(ctx, TombstoneRequest{Documents: []string{doc}}); err != nil {
		t.Fatal(err)
	}
	err = s.Replay(ctx, ReplayRequest{}, func(b json.RawMessage) error {
		if strings.Contains(string(b), "zeppelin") {
			return fmt.Errorf("replay shows a version of a tombstoned document: %.200s", b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A newer fact ranks above the one it supersedes, which is marked; with
// IncludeSuperseded both rank normally; a context never holds both.
// Superseding a missing id is refused and writes nothing.
func TestSupersedeRanking(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	if _, err := s.Remember(ctx, RememberRequest{Content: "Anna lives in Lisbon, Lisbon, Lisbon.", Kind: "knowledge", ChunkID: "old"}); err != nil {
		t.Fatal(err)
	}
	before := headSeq(s)
	_, err := s.Remember(ctx, RememberRequest{Content: "Anna moved to Berlin", Kind: "knowledge", Supersedes: []string{"missing"}})
	if !errors.Is(err, ErrUnknownItem) || headSeq(s) != before {
		t.Fatalf("supersede of a missing id: %v (head %d → %d)", err, before, headSeq(s))
	}
	_, err = s.Append(ctx, AppendRequest{JSONL: `{"content":"x","supersedes":["missing"]}`})
	if !errors.Is(err, ErrUnknownItem) || headSeq(s) != before {
		t.Fatalf("JSONL supersede of a missing id: %v", err)
	}
	if _, err := s.Remember(ctx, RememberRequest{Content: "Anna moved to Berlin", Kind: "knowledge", ChunkID: "new", Supersedes: []string{"old"}}); err != nil {
		t.Fatal(err)
	}
	// "Lisbon" thrice: by text alone the old fact wins.
	ids, by := searchIDs(t, s, SearchRequest{Text: "where does Anna live Lisbon", Mode: "bm25"})
	if len(ids) != 2 || ids[0] != "new" || ids[1] != "old" || len(by["old"]) != 1 || by["old"][0] != "new" || by["new"] != nil {
		t.Fatalf("default ranking %v %v", ids, by)
	}
	ids, by = searchIDs(t, s, SearchRequest{Text: "where does Anna live Lisbon", Mode: "bm25", IncludeSuperseded: true})
	if len(ids) != 2 || ids[0] != "old" || by["old"][0] != "new" {
		t.Fatalf("with superseded %v %v", ids, by)
	}
	for _, inc := range []bool{false, true} {
		c, err := s.Context(ctx, ContextRequest{SearchRequest: SearchRequest{Text: "where does Anna live Lisbon", IncludeSuperseded: inc}})
		if err != nil {
			t.Fatal(err)
		}
		if contains(c.Included, "old") && contains(c.Included, "new") {
			t.Fatalf("context packs both: %v", c.Included)
		}
		if !contains(c.Included, "new") {
			t.Fatalf("context lacks the current fact: %v", c.Included)
		}
	}
	g, err := s.Get(ctx, GetRequest{IDs: []string{"old"}})
	if err != nil || len(g.Items[0].SupersededBy) != 1 {
		t.Fatalf("get old: %+v %v", g, err)
	}
}

// Tool calls: one shape from Remember and JSONL, found by name and
// result, listed in session order; a call without a name is refused.
func TestToolCalls(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	m, err := s.Remember(ctx, RememberRequest{Content: "what's the weather in Berlin?", Session: "s", Time: "2024-01-01T10:00:00Z"})
	if err != nil {
		t.Fatal(err)
	}
	msg := m.Results[0].ID.String()
	before := headSeq(s)
	if _, err := s.Remember(ctx, RememberRequest{Tool: &log.ToolCall{Name: " "}, Session: "s"}); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("nameless tool call: %v", err)
	}
	if _, err := s.Append(ctx, AppendRequest{JSONL: `{"type":"tool_call","result":"x"}`}); err == nil || !strings.Contains(err.Error(), "name") {
		t.Fatalf("nameless JSONL tool call: %v", err)
	}
	if headSeq(s) != before {
		t.Fatal("a refused tool call wrote")
	}
	if _, err := s.Remember(ctx, RememberRequest{Tool: &log.ToolCall{Name: "get_weather", Args: `{"city":"Berlin"}`, Status: "ok"},
		Content: "22 degrees and sunny", Parent: msg, Session: "s", Time: "2024-01-01T10:00:01Z"}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("row of the flight table with numbers 123 456\n", 300)
	line := fmt.Sprintf(`{"type":"tool_call","name":"list_flights","args":{"to":"BER"},"result":%q,"status":"ok","parent":%q,"session":"s","time":"2024-01-01T10:00:02Z"}`, long, msg)
	ar, err := s.Append(ctx, AppendRequest{JSONL: line, ChunkTokens: 200})
	if err != nil {
		t.Fatal(err)
	}
	if len(ar.Results) < 2 {
		t.Fatalf("long result not chunked: %d", len(ar.Results))
	}
	doc := ar.Results[0].ChunkParent
	g, err := s.Get(ctx, GetRequest{IDs: []string{doc}})
	if err != nil {
		t.Fatal(err)
	}
	it := g.Items[0]
	if it.Content != long || it.Chunks[0].Tool == nil || it.Chunks[0].Tool.Name != "list_flights" || it.Chunks[1].Tool != nil {
		t.Fatalf("chunked tool call: first chunk tool %+v, second %+v", it.Chunks[0].Tool, it.Chunks[1].Tool)
	}
	// A pending call gets its result by an edit; a status only fits a tool call.
	p, err := s.Remember(ctx, RememberRequest{Tool: &log.ToolCall{Name: "get_time", Status: "pending"}, Parent: msg, Session: "s", Time: "2024-01-01T10:00:05Z"})
	if err != nil {
		t.Fatal(err)
	}
	pid := p.Results[0].ID.String()
	if _, err := s.Edit(ctx, EditRequest{ID: pid, Content: "10:00 CET", Status: "ok"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Edit(ctx, EditRequest{ID: msg, Content: "x", Status: "ok"}); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("status on a message: %v", err)
	}
	g, err = s.Get(ctx, GetRequest{IDs: []string{pid}})
	if err != nil || g.Items[0].Content != "10:00 CET" || g.Items[0].Chunks[0].Tool.Status != "ok" || g.Items[0].Chunks[0].Tool.Name != "get_time" {
		t.Fatalf("completed call: %+v %v", g, err)
	}
	ids, _ := searchIDs(t, s, SearchRequest{Text: "get_weather", Mode: "bm25"})
	if len(ids) != 1 {
		t.Fatalf("by name: %v", ids)
	}
	r, err := s.Search(ctx, SearchRequest{Text: "sunny", Mode: "bm25"})
	if err != nil || len(r.Results) != 1 || r.Results[0].Tool == nil || r.Results[0].Tool.Args != `{"city":"Berlin"}` {
		t.Fatalf("by result: %+v %v", r, err)
	}
	sess, err := s.Session(ctx, SessionRequest{ID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if sess.Chunks[0].ID != msg || sess.Chunks[1].Tool == nil || sess.Chunks[1].Tool.Name != "get_weather" || sess.Chunks[2].ChunkParent != doc {
		t.Fatalf("session order: %+v", sess.Chunks[:3])
	}
}

// Thread follows parent both ways, tool calls included, and --depth bounds it.
func TestThreadBothWays(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	put := func(id, parent, content, at string, tool *log.ToolCall) {
		t.Helper()
		if _, err := s.Remember(ctx, RememberRequest{ChunkID: id, Parent: parent, Content: content, Session: "s", Time: at, Tool: tool}); err != nil {
			t.Fatal(err)
		}
	}
	put("q", "", "book me a flight", "2024-01-01T10:00:00Z", nil)
	put("a", "q", "which day?", "2024-01-01T10:00:01Z", nil)
	put("u", "a", "friday", "2024-01-01T10:00:02Z", nil)
	put("t", "u", "LH123 at 9:00", "2024-01-01T10:00:03Z", &log.ToolCall{Name: "search_flights", Args: `{"day":"fri"}`})
	put("r", "t", "booked LH123", "2024-01-01T10:00:04Z", nil)
	put("x", "", "other conversation", "2024-01-01T10:00:05Z", nil)
	ids := func(r *ThreadResult) string {
		var out []string
		for _, it := range r.Items {
			out = append(out, fmt.Sprintf("%s%+d", it.ID, it.Depth))
		}
		return strings.Join(out, " ")
	}
	r, err := s.Thread(ctx, ThreadRequest{ID: "u"})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(r); got != "q-2 a-1 u+0 t+1 r+2" || r.Root != "q" {
		t.Fatalf("thread %s (root %s)", got, r.Root)
	}
	r, err = s.Thread(ctx, ThreadRequest{ID: "u", Depth: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(r); got != "a-1 u+0 t+1" {
		t.Fatalf("depth 1: %s", got)
	}
	if _, err := s.Thread(ctx, ThreadRequest{ID: "nope"}); !errors.Is(err, ErrUnknownItem) {
		t.Fatalf("unknown: %v", err)
	}
}

// Edits, supersedes and tool calls survive a projection rebuild with the
// same digests, and the socket serves Edit and Thread like the owner.
func TestConvRebuildDigestsAndSocket(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	if _, err := s.Remember(ctx, RememberRequest{Content: "first version", ChunkID: "a", Session: "s", Time: "2024-01-01"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Remember(ctx, RememberRequest{Content: "result", Tool: &log.ToolCall{Name: "f"}, Parent: "a", Session: "s", Time: "2024-01-02"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Remember(ctx, RememberRequest{Content: "newer fact", Supersedes: []string{"a"}, Session: "s"}); err != nil {
		t.Fatal(err)
	}
	c := serve(t, s)
	if _, err := c.Edit(ctx, EditRequest{ID: "a", Content: "second version", By: "socket"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Edit(ctx, EditRequest{ID: "zz", Content: "x"}); !errors.Is(err, ErrUnknownItem) {
		t.Fatalf("socket keeps the sentinel: %v", err)
	}
	tr, err := c.Thread(ctx, ThreadRequest{ID: "a"})
	if err != nil || len(tr.Items) != 2 || tr.Items[1].Tool == nil {
		t.Fatalf("thread over the socket: %+v %v", tr, err)
	}
	v, err := s.VerifyProjections(ctx, VerifyProjectionsRequest{})
	if err != nil {
		t.Fatalf("verify after edits: %v %+v", err, v)
	}
}
