package mcpserver

// Tests of the fixes of issue 25's MCP part, each through the SDK's
// in-memory transport. Arguments are JSON maps, not the In types, so that
// the same tests run against the server before the fixes (where they
// fail) and after.

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/unlimitedcontext/ucl"
)

type obj = map[string]any

// newEnvAt is newEnv with the server's clock at at.
func newEnvAt(t *testing.T, at time.Time) *env {
	t.Helper()
	st := initStore(t, t.TempDir())
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
	logs := &syncBuf{}
	srv := New(st, Options{Log: logs, Now: func() time.Time { return at }, Version: "test"})
	st1, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st1, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v0"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return &env{t: t, store: st, cs: cs, log: logs}
}

// wireSize is the JSON size of a result as it crosses the wire.
func wireSize(t *testing.T, res *mcp.CallToolResult) int {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// storeIDs stores and returns the ids written.
func (e *env) storeIDs(args obj) []string {
	e.t.Helper()
	out, _ := ok[struct {
		IDs []string `json:"ids"`
	}](e, "uc_store", args)
	return out.IDs
}

// TestOneNamePerConcept: the same concept has the same argument name in
// every tool's schema (issue 25: uc_query took sessions/active_session,
// uc_context session; uc_forget from/to where the others take since/until).
func TestOneNamePerConcept(t *testing.T) {
	e := newEnv(t)
	res, err := e.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]map[string]bool{}
	for _, tl := range res.Tools {
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		b, _ := json.Marshal(tl.InputSchema)
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		props[tl.Name] = map[string]bool{}
		for p := range s.Properties {
			props[tl.Name][p] = true
			switch p {
			case "active_session", "from", "to", "kind_filter":
				t.Errorf("%s takes %q: the concept's name elsewhere is session, offset or since/until", tl.Name, p)
			}
		}
	}
	for _, tool := range []string{"uc_query", "uc_context"} {
		if !props[tool]["session"] {
			t.Errorf("%s: the current session is not named session", tool)
		}
	}
	for _, tool := range []string{"uc_query", "uc_index", "uc_period"} {
		if !props[tool]["kinds"] {
			t.Errorf("%s: no kinds filter", tool)
		}
		if tool != "uc_period" && !(props[tool]["since"] && props[tool]["until"]) {
			t.Errorf("%s: no since/until", tool)
		}
	}
	if !(props["uc_forget"]["since"] && props["uc_forget"]["until"]) {
		t.Errorf("uc_forget: its time span is not since/until: %v", props["uc_forget"])
	}
	for _, tool := range []string{"uc_context", "uc_index"} {
		if !props[tool]["budget"] {
			t.Errorf("%s: no budget", tool)
		}
	}
	// The new name works.
	e.seed()
	e.fails("uc_query", obj{"query": "cutover", "session": "nope"}, `no session "nope"`)
}

// TestResultsBounded: one 5 MB turn does not make a result 10 MB (text
// plus the same again as structured content); a cut item says how to
// read on, and reading on gives back the exact bytes.
func TestResultsBounded(t *testing.T) {
	e := newEnv(t)
	var b strings.Builder
	for i := 0; b.Len() < 900<<10; i++ { // near the largest event the engine takes (log.MaxEventSize)
		b.WriteString("Line of the big turn, number ")
		b.WriteString(strings.Repeat("é", i%7))
		b.WriteString(" with some words about the migration.\n")
	}
	big := b.String()
	ids := e.storeIDs(obj{"content": big, "session": "big", "role": "user", "time": "2023-05-10T09:00:00Z"})
	e.storeIDs(obj{"content": "a small reply", "session": "big", "role": "assistant", "time": "2023-05-10T09:01:00Z"})
	const bound = 80 << 10 // text and structured content together
	for _, c := range []struct {
		tool string
		args obj
	}{
		{"uc_get_session", obj{"session": "big"}},
		{"uc_get", obj{"ids": ids}},
		{"uc_get", obj{"ids": ids, "with_chunks": true}},
		{"uc_period", obj{"period": "today"}},
		{"uc_get_thread", obj{"id": ids[0]}},
		{"uc_get_document", obj{"id": ids[0]}},
		{"uc_query", obj{"query": strings.Repeat("migration words ", 75_000)}}, // 1.2 MB
	} {
		res := e.call(c.tool, c.args)
		if res.IsError {
			t.Errorf("%s: %s", c.tool, resultText(res))
			continue
		}
		if n := wireSize(t, res); n > bound {
			t.Errorf("%s: result is %d bytes on the wire; the bound is %d", c.tool, n, bound)
		}
	}
	// Read the big turn back window by window, following the markers.
	id := ids[0]
	if strings.Contains(id, "#") {
		t.Skipf("the turn was chunked (%d chunks); windows are per chunk", len(ids))
	}
	var got strings.Builder
	offset := 0
	for i := 0; ; i++ {
		if i > 1000 {
			t.Fatal("no end after 1000 windows")
		}
		res := e.call("uc_get", obj{"ids": []string{id}, "offset": offset})
		if res.IsError {
			t.Fatalf("uc_get offset %d: %s", offset, resultText(res))
		}
		var out struct {
			Items []struct {
				Content    string `json:"content"`
				Offset     int    `json:"offset"`
				NextOffset int    `json:"next_offset"`
			} `json:"items"`
		}
		raw, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		it := out.Items[0]
		if it.Offset != offset {
			t.Fatalf("window at %d starts at %d", offset, it.Offset)
		}
		got.WriteString(it.Content)
		if it.NextOffset == 0 {
			break
		}
		if !strings.Contains(resultText(res), `"offset":`) {
			t.Fatalf("a cut item without a marker: %.300s", resultText(res))
		}
		offset = it.NextOffset
	}
	if got.String() != big {
		t.Fatalf("windows joined give %d bytes, want the %d stored", got.Len(), len(big))
	}
}

// TestDocumentByNameAnySession: uc_get_document finds an item stored
// without a session by its name, and an ambiguous name lists candidates.
func TestDocumentByNameAnySession(t *testing.T) {
	e := newEnv(t)
	e.seed()
	notes := e.storeIDs(obj{"content": "Notes without a session: the deploy key lives in the vault.", "kind": "document", "meta": obj{"name": "notes.md"}})
	doc, text := ok[DocumentOut](e, "uc_get_document", obj{"name": "notes.md"})
	if doc.ID != notes[0] || !strings.Contains(doc.Content, "deploy key") {
		t.Fatalf("by name: %+v %s", doc, text)
	}
	fact := e.storeIDs(obj{"content": "The on-call rota changes on Mondays.", "kind": "knowledge", "meta": obj{"name": "rota"}})
	if got, _ := ok[DocumentOut](e, "uc_get_document", obj{"name": "ROTA"}); got.ID != fact[0] {
		t.Fatalf("knowledge by name: %+v", got)
	}
	var readmes []string
	for i, sess := range []string{"", "", "s1"} {
		args := obj{"content": "README version " + string(rune('A'+i)) + " of the project.", "kind": "document", "meta": obj{"name": "README.md"}}
		if sess != "" {
			args["session"] = sess
		}
		readmes = append(readmes, e.storeIDs(args)[0])
	}
	res := e.call("uc_get_document", obj{"name": "README.md"})
	msg := resultText(res)
	if !res.IsError || !strings.Contains(msg, "3 items are named") {
		t.Fatalf("ambiguous name: error %v: %s", res.IsError, msg)
	}
	for _, id := range readmes {
		if !strings.Contains(msg, id) {
			t.Errorf("candidate %s not listed: %s", id, msg)
		}
	}
	// Forgotten ones are no candidates.
	ok[ForgetOut](e, "uc_forget", obj{"ids": readmes[:2]})
	if got, _ := ok[DocumentOut](e, "uc_get_document", obj{"name": "README.md"}); got.ID != readmes[2] {
		t.Fatalf("after forgetting two: %+v", got)
	}
}

// TestPeriodIncludesSessionless: knowledge, documents and tool calls
// stored without a session are in uc_period, as uc_index counts them.
func TestPeriodIncludesSessionless(t *testing.T) {
	e := newEnv(t)
	today := now.Add(-time.Hour).Format(time.RFC3339)
	want := map[string]bool{}
	for _, args := range []obj{
		{"content": "a turn", "session": "s1", "role": "user", "time": today},
		{"content": "Staging uses Postgres 15.", "kind": "knowledge", "time": today},
		{"content": "A design note stored as a document.", "kind": "document", "meta": obj{"name": "design.md"}, "time": today},
		{"content": "22C and sunny", "tool": obj{"name": "weather", "args": obj{"city": "Berlin"}, "status": "ok"}, "time": today},
	} {
		for _, id := range e.storeIDs(args) {
			want[id] = true
		}
	}
	e.storeIDs(obj{"content": "Old knowledge.", "kind": "knowledge", "time": "2022-01-01T00:00:00Z"})
	out, text := ok[struct {
		Total int `json:"total"`
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}](e, "uc_period", obj{"period": "today"})
	got := map[string]bool{}
	for _, it := range out.Items {
		got[it.ID] = true
	}
	if out.Total != len(want) || len(got) != len(want) {
		t.Fatalf("today: total %d, items %v; want %v\n%s", out.Total, got, want, text)
	}
	for id := range want {
		if !got[id] {
			t.Errorf("today misses %s", id)
		}
	}
	idx, _ := ok[IndexOut](e, "uc_index", obj{})
	if idx.Overview.Today != out.Total {
		t.Errorf("uc_index counts %d today, uc_period %d", idx.Overview.Today, out.Total)
	}
	kn, _ := ok[PeriodOut](e, "uc_period", obj{"period": "today", "kinds": []string{"knowledge"}})
	if kn.Total != 1 {
		t.Errorf("today's knowledge: %d items", kn.Total)
	}
}

// TestNowIncludesJustStored: an item stored in the same second as "now",
// a few hundred milliseconds before it, is today, not after now.
func TestNowIncludesJustStored(t *testing.T) {
	at := time.Date(2023, 5, 10, 12, 0, 0, 750e6, time.UTC)
	e := newEnvAt(t, at)
	e.storeIDs(obj{"content": "stored just now", "session": "s1", "role": "user", "time": "2023-05-10T12:00:00.500Z"})
	idx, text := ok[IndexOut](e, "uc_index", obj{})
	if idx.Overview.Later != 0 || idx.Overview.Today != 1 {
		t.Fatalf("overview %+v: the item stored 250 ms before now is not today\n%s", idx.Overview, text)
	}
}

// TestContextOrderAsDescribed: uc_context's description says where the
// session's recent turns are, and the block has them there (last, after
// the other sessions' memories).
func TestContextOrderAsDescribed(t *testing.T) {
	e := newEnv(t)
	s := e.seed()
	res, err := e.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		if tl.Name == "uc_context" && !strings.Contains(tl.Description, "shown last") {
			t.Errorf("uc_context's description does not say where the recent turns are: %q", tl.Description)
		}
	}
	_, text := ok[ContextOut](e, "uc_context", obj{"query": "staging database password", "session": "s1"})
	fact := strings.Index(text, "staging database password rotates")
	turn := strings.Index(text, "Postgres cutover is planned")
	if fact < 0 || turn < 0 {
		t.Fatalf("context lacks the fact or the recent turn (%s):\n%s", s.fact, text)
	}
	if turn < fact {
		t.Errorf("the active session's recent turn comes before the other memories:\n%s", text)
	}
}

// TestRolesValidated: uc_store refuses a role the engine does not know,
// as the engine does, and writes nothing; a role filter is checked too.
func TestRolesValidated(t *testing.T) {
	e := newEnv(t)
	e.seed()
	h := e.head()
	e.fails("uc_store", obj{"content": "I cast a spell", "session": "s1", "role": "wizard"}, `role "wizard"`)
	e.fails("uc_query", obj{"query": "spell", "roles": []string{"wizard"}}, `"wizard" is not a role`)
	if e.head() != h {
		t.Fatalf("a refused store wrote: head %d → %d", h, e.head())
	}
	if _, err := e.store.Remember(context.Background(), ucl.RememberRequest{Content: "x", Role: "wizard"}); err == nil || !strings.Contains(err.Error(), "bad request") {
		t.Fatalf("engine Remember with role wizard: %v", err)
	}
	e.storeIDs(obj{"content": "instructions", "session": "s1", "role": "developer"})
}
