package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/internal/textutil"
)

func TestIndex(t *testing.T) {
	e := newEnv(t)
	s := e.seed()
	// Few matches: in full, with ids uc_get opens.
	out, text := ok[IndexOut](e, "uc_index", IndexIn{Query: "cutover", Budget: 2000})
	if out.Matches < 2 || len(out.Items) != out.Matches || out.Tokens > 2000 || textutil.EstimateTokens(text) > 2000 {
		t.Fatalf("index: %+v\n%s", out, text)
	}
	var ids []string
	for _, it := range out.Items {
		ids = append(ids, it.ID)
		if !strings.Contains(text, "["+it.ID+"]") {
			t.Fatalf("item %s not in the text:\n%s", it.ID, text)
		}
	}
	got, _ := ok[GetOut](e, "uc_get", GetIn{IDs: ids})
	if len(got.Items) != len(ids) {
		t.Fatalf("uc_get of the index ids: %+v", got)
	}
	if !strings.Contains(text, s.q) {
		t.Fatalf("the question %s is not in the index:\n%s", s.q, text)
	}
	// Many matches: groups, each with a uc_index call that opens it.
	var sb strings.Builder
	for i := 0; i < 700; i++ {
		fmt.Fprintf(&sb, `{"session":"g%02d","role":"user","content":"Ledger note %d on the reconciliation batch %d.","time":"2023-%02d-10T10:00:00Z"}`+"\n", i/25, i, i%97, 1+i%6)
	}
	if _, err := e.store.Append(t.Context(), appendReq(sb.String())); err != nil {
		t.Fatal(err)
	}
	out, text = ok[IndexOut](e, "uc_index", IndexIn{Query: "ledger", Budget: 1500})
	if out.Matches < 700 || len(out.Sessions) == 0 || len(out.Months) == 0 || out.Tokens > 1500 || textutil.EstimateTokens(text) > 1500 {
		t.Fatalf("index of 700: %+v\n%s", out, text)
	}
	m := out.Months[0]
	if m.Open.Tool != "uc_index" || !strings.Contains(text, " → "+m.Open.String()+"\n") {
		t.Fatalf("month group call %q not in the text:\n%s", m.Open, text)
	}
	var args IndexIn
	strictArgs(t, m.Open, &args)
	sub, _ := ok[IndexOut](e, "uc_index", args)
	if sub.Matches != m.Matches {
		t.Fatalf("month %s: %d matches in the group, %d when opened", m.Key, m.Matches, sub.Matches)
	}
	// Deterministic (the clock is pinned).
	again, text2 := ok[IndexOut](e, "uc_index", IndexIn{Query: "ledger", Budget: 1500})
	if text2 != text || again.Tokens != out.Tokens {
		t.Fatal("uc_index is not deterministic")
	}
	// Bad input.
	e.fails("uc_index", IndexIn{Budget: 50}, "budget")
	e.fails("uc_index", IndexIn{Budget: -1}, "budget")
	e.fails("uc_index", IndexIn{Kinds: []string{"email"}}, "kinds")
	e.fails("uc_index", IndexIn{Since: "soon"}, "since")
	e.fails("uc_index", IndexIn{Now: "whenever"}, "now")
}

// strictArgs decodes a tool call's arguments into in, refusing a name the
// tool does not take.
func strictArgs(t *testing.T, c ToolCall, in any) {
	t.Helper()
	b, err := json.Marshal(c.Arguments)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(in); err != nil {
		t.Fatalf("%s: %v", c, err)
	}
}

// The engine returns each group's call as data (a method and its
// request's fields); uc_index shows it as a call of this server's tools,
// in the text and the structured result, with the tools' own argument
// names, and the call opens the group.
func TestIndexLinksAreToolCalls(t *testing.T) {
	e := newEnv(t)
	var sb strings.Builder
	for i := 0; i < 600; i++ {
		fmt.Fprintf(&sb, `{"session":"h%02d","role":"user","content":"Harbour log %d, berth %d.","time":"2023-%02d-10T10:00:00Z"}`+"\n", i/30, i, i%41, 1+i%5)
	}
	if _, err := e.store.Append(t.Context(), appendReq(sb.String())); err != nil {
		t.Fatal(err)
	}
	out, text := ok[IndexOut](e, "uc_index", IndexIn{Budget: 1200})
	if len(out.Sessions) == 0 || out.Tokens > 1200 || textutil.EstimateTokens(text) > 1200 {
		t.Fatalf("index of the store: %+v\n%s", out, text)
	}
	if strings.Contains(text, " → session {") || strings.Contains(text, " → index {") || strings.Contains(text, "ucl ") {
		t.Fatalf("a link is not in the MCP syntax:\n%s", text)
	}
	for _, g := range out.Sessions {
		if g.Open.Tool != "uc_get_session" || !strings.Contains(text, " → "+g.Open.String()+"\n") {
			t.Fatalf("session group %s: call %s not in the text:\n%s", g.Key, g.Open, text)
		}
		var in SessionIn
		strictArgs(t, g.Open, &in)
		got, _ := ok[SessionOut](e, "uc_get_session", in)
		if got.Session.ID != g.Key {
			t.Fatalf("the call of session group %s opened %+v", g.Key, got.Session)
		}
	}
}

func TestStoreDuplicate(t *testing.T) {
	e := newEnv(t)
	first, _ := ok[StoreOut](e, "uc_store", StoreIn{Content: "The cat is called Momo.", Session: "s1"})
	h := e.head()
	dup, text := ok[StoreOut](e, "uc_store", StoreIn{Content: "the cat is called  MOMO.", Session: "s1"})
	if dup.DuplicateOf != first.IDs[0] || dup.IDs[0] != first.IDs[0] || e.head() != h || !strings.Contains(text, "already stored") {
		t.Fatalf("duplicate: %+v %q (head %d → %d)", dup, text, h, e.head())
	}
	allowed, _ := ok[StoreOut](e, "uc_store", StoreIn{Content: "the cat is called  MOMO.", Session: "s1", AllowDuplicate: true})
	if allowed.DuplicateOf != "" || e.head() != h+1 {
		t.Fatalf("allowed duplicate: %+v", allowed)
	}
	other, _ := ok[StoreOut](e, "uc_store", StoreIn{Content: "The cat is called Mimi.", Session: "s1"})
	if other.DuplicateOf != "" || e.head() != h+2 {
		t.Fatalf("different text: %+v", other)
	}
	// A duplicate document returns the existing document's ids.
	d1, _ := ok[StoreOut](e, "uc_store", StoreIn{Content: longDoc(), Session: "s1", Kind: "document"})
	d2, _ := ok[StoreOut](e, "uc_store", StoreIn{Content: strings.ToUpper(longDoc()), Session: "s1", Kind: "document"})
	if d2.DuplicateOf != d1.Parent || d2.Parent != d1.Parent || strings.Join(d2.IDs, ",") != strings.Join(d1.IDs, ",") {
		t.Fatalf("duplicate document: %+v vs %+v", d2, d1)
	}
}

func appendReq(jsonl string) ucl.AppendRequest { return ucl.AppendRequest{JSONL: jsonl} }
