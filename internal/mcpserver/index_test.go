package mcpserver

import (
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
	if !strings.HasPrefix(m.Open, "uc_index ") || !strings.Contains(text, m.Open) {
		t.Fatalf("month group call %q not in the text:\n%s", m.Open, text)
	}
	var args IndexIn
	if err := json.Unmarshal([]byte(strings.TrimPrefix(m.Open, "uc_index ")), &args); err != nil {
		t.Fatal(err)
	}
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
