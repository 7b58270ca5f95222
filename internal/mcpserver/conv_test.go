package mcpserver

import (
	"strings"
	"testing"
)

// uc_store writes tool calls in the engine's one shape; uc_get_thread
// shows a message with its tool call; uc_edit replaces the content and
// uc_get with history lists the versions; supersedes demotes and marks;
// bad input is refused.
func TestConversationModelTools(t *testing.T) {
	e := newEnv(t)
	s := e.seed()
	tc, _ := ok[StoreOut](e, "uc_store", StoreIn{Session: "s1", Parent: s.q, Time: "2023-05-08T10:00:30Z",
		Content: "cutover window: Saturday 22:00-02:00", Tool: &ToolIn{Name: "calendar_lookup", Args: map[string]any{"event": "cutover"}, Status: "ok"}})
	th, _ := ok[ThreadOut](e, "uc_get_thread", ThreadIn{ID: s.q})
	var got []string
	for _, it := range th.Items {
		got = append(got, it.ID)
	}
	if strings.Join(got, ",") != strings.Join([]string{s.q, tc.IDs[0], s.a}, ",") {
		t.Fatalf("thread %v", got)
	}
	if tool := th.Items[1].Tool; tool == nil || tool.Name != "calendar_lookup" || tool.Args != `{"event":"cutover"}` || th.Items[1].Kind != "tool_call" {
		t.Fatalf("tool call item %+v", th.Items[1])
	}
	hits, _ := ok[QueryOut](e, "uc_query", QueryIn{Query: "calendar_lookup", Mode: "bm25"})
	if len(hits.Hits) == 0 || hits.Hits[0].ID != tc.IDs[0] || hits.Hits[0].Tool == nil {
		t.Fatalf("tool call by name: %+v", hits.Hits)
	}
	e.fails("uc_store", StoreIn{Content: "x", Tool: &ToolIn{Name: " "}}, "tool.name: is empty")
	e.fails("uc_store", StoreIn{Content: "x", Kind: "document", Tool: &ToolIn{Name: "f"}}, "kind")

	ed, _ := ok[EditOut](e, "uc_edit", EditIn{ID: s.fact, Content: "The staging database password rotates every 7 days."})
	if ed.Prev == 0 || len(ed.Seqs) != 1 {
		t.Fatalf("edit %+v", ed)
	}
	g, text := ok[GetOut](e, "uc_get", GetIn{IDs: []string{s.fact}, History: true})
	if g.Items[0].Content != "The staging database password rotates every 7 days." || !g.Items[0].Edited ||
		len(g.History) != 1 || len(g.History[0].Versions) != 2 || !strings.Contains(g.History[0].Versions[0].Content, "30 days") ||
		g.History[0].Versions[1].By != "mcp" || !strings.Contains(text, "history of") {
		t.Fatalf("get with history: %+v", g)
	}
	e.fails("uc_edit", EditIn{ID: "nope", Content: "x"}, `no item with id "nope"`)
	e.fails("uc_edit", EditIn{ID: s.docChunks[1], Content: "x"}, "as a whole")
	e.fails("uc_edit", EditIn{ID: s.fact, Content: " "}, "content: is empty")

	n, _ := ok[StoreOut](e, "uc_store", StoreIn{Content: "The staging database password now rotates daily.", Kind: "knowledge", Supersedes: []string{s.fact}})
	q, _ := ok[QueryOut](e, "uc_query", QueryIn{Query: "staging database password rotates days", Mode: "bm25"})
	if len(q.Hits) < 2 || q.Hits[0].ID != n.IDs[0] || q.Hits[1].ID != s.fact || len(q.Hits[1].SupersededBy) != 1 {
		t.Fatalf("supersede ranking: %+v", q.Hits)
	}
	e.fails("uc_store", StoreIn{Content: "x", Supersedes: []string{"nope"}}, "nope")
}
