package ucl

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/internal/ingest"
)

func TestRememberDuplicateReturnsExisting(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	first, err := s.Remember(ctx, RememberRequest{Content: "I moved to Berlin in May.", Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	head, _ := s.Log().Head()
	orig := first.Results[0]
	// Case, spacing and zero-width characters do not make a new memory.
	for _, c := range []string{"I moved to Berlin in May.", "  i MOVED to\tberlin\nin may. ", "I moved\u200b to Berlin in May."} {
		r, err := s.Remember(ctx, RememberRequest{Content: c, Session: "s1"})
		if err != nil {
			t.Fatal(err)
		}
		got := r.Results[0]
		if got.DuplicateOf != orig.ID.String() || got.Seq != orig.Seq || got.ID != orig.ID || got.Hash != orig.Hash {
			t.Fatalf("%q: %+v, want duplicate of %+v", c, got, orig)
		}
	}
	if h, _ := s.Log().Head(); h != head {
		t.Fatalf("duplicates wrote events: head %d -> %d", head, h)
	}
	// Anything else is stored: near-but-different text, another session,
	// role or kind, and an explicit allow.
	stored := []RememberRequest{
		{Content: "I moved to Berlin in June.", Session: "s1"},
		{Content: "I moved to Berlin in May!", Session: "s1"},
		{Content: "I moved to Berlin in May.", Session: "s2"},
		{Content: "I moved to Berlin in May.", Session: "s1", Role: "assistant"},
		{Content: "I moved to Berlin in May.", Session: "s1", Kind: "knowledge"},
		{Content: "I moved to Berlin in May.", Session: "s1", AllowDuplicate: true},
	}
	for _, req := range stored {
		r, err := s.Remember(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if r.Results[0].DuplicateOf != "" || r.Results[0].Seq <= head {
			t.Fatalf("%+v was not stored: %+v", req, r.Results[0])
		}
	}
	// Once the original is tombstoned, the oldest live duplicate answers.
	if _, err := s.Tombstone(ctx, TombstoneRequest{Chunks: []string{orig.ID.String()}}); err != nil {
		t.Fatal(err)
	}
	r, err := s.Remember(ctx, RememberRequest{Content: "i moved to berlin in may.", Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if d := r.Results[0].DuplicateOf; d == "" || d == orig.ID.String() {
		t.Fatalf("after tombstone: %+v", r.Results[0])
	}
	// Tombstone them all: the same text is stored again.
	if _, err := s.Tombstone(ctx, TombstoneRequest{Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	r, err = s.Remember(ctx, RememberRequest{Content: "I moved to Berlin in May.", Session: "s1"})
	if err != nil || r.Results[0].DuplicateOf != "" {
		t.Fatalf("after session tombstone: %+v %v", r, err)
	}
}

func TestRememberDuplicateDocument(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	doc := strings.Repeat("The quarterly report covers revenue, churn and hiring plans. ", 200)
	a, err := s.Remember(ctx, RememberRequest{Content: doc, Kind: "document", Session: "d"})
	if err != nil || a.Document == "" {
		t.Fatalf("%+v %v", a, err)
	}
	b, err := s.Remember(ctx, RememberRequest{Content: strings.ToUpper(doc), Kind: "document", Session: "d"})
	if err != nil {
		t.Fatal(err)
	}
	if b.Document != a.Document || len(b.Results) != len(a.Results) {
		t.Fatalf("duplicate document: %+v, want %s", b, a.Document)
	}
	for i, r := range b.Results {
		if r.DuplicateOf != a.Results[i].ChunkID || r.Seq != a.Results[i].Seq {
			t.Fatalf("chunk %d: %+v vs %+v", i, r, a.Results[i])
		}
	}
	// One word changed in the last chunk: a new document.
	c, err := s.Remember(ctx, RememberRequest{Content: doc + "Except Mars.", Kind: "document", Session: "d"})
	if err != nil || c.Document == a.Document || c.Results[0].DuplicateOf != "" {
		t.Fatalf("different document deduplicated: %+v %v", c, err)
	}
}

func TestAppendBatchWithDuplicates(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	if _, err := s.Remember(ctx, RememberRequest{Content: "Cashew allergy.", Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	in := `{"session":"s1","role":"user","content":"cashew  ALLERGY."}
{"session":"s1","role":"user","content":"Peanuts are fine."}
{"session":"s1","role":"user","content":"peanuts are fine."}
{"session":"s1","content":"Peanuts are fine, mostly."}
`
	res, err := s.Append(ctx, AppendRequest{JSONL: in})
	if err != nil {
		t.Fatal(err)
	}
	rs := res.Results
	if len(rs) != 4 || rs[0].DuplicateOf == "" || rs[1].DuplicateOf != "" || rs[3].DuplicateOf != "" {
		t.Fatalf("results: %+v", rs)
	}
	if rs[2].DuplicateOf != rs[1].ID.String() || rs[2].Seq != rs[1].Seq {
		t.Fatalf("in-batch duplicate: %+v of %+v", rs[2], rs[1])
	}
	if h, _ := s.Log().Head(); h != 3 {
		t.Fatalf("head %d, want 3 (1 + 2 new)", h)
	}
	// The same input again, deterministic: every line is a duplicate,
	// of the same items.
	again, err := s.Append(ctx, AppendRequest{JSONL: in})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range again.Results {
		want := rs[i].DuplicateOf
		if want == "" {
			want = rs[i].ID.String()
		}
		if r.DuplicateOf != want {
			t.Fatalf("line %d again: %+v, want duplicate of %s", i+1, r, want)
		}
	}
	if h, _ := s.Log().Head(); h != 3 {
		t.Fatalf("head %d after a duplicate batch", h)
	}
	// Allowed: everything written.
	res, err = s.Append(ctx, AppendRequest{JSONL: in, AllowDuplicate: true})
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := s.Log().Head(); h != 7 {
		t.Fatalf("head %d after allowed duplicates, want 7", h)
	}
	// Over the socket the same.
	c := serve(t, s)
	r, err := c.Remember(ctx, RememberRequest{Content: "PEANUTS ARE FINE.", Session: "s1"})
	if err != nil || r.Results[0].DuplicateOf != rs[1].ID.String() {
		t.Fatalf("client: %+v %v", r, err)
	}
}

// An idempotent re-append (same id) is the log's business, not a duplicate.
func TestDuplicateIsNotIdempotentReplay(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	a, err := s.Remember(ctx, RememberRequest{Content: "Tea at five.", ID: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Remember(ctx, RememberRequest{Content: "Tea at five.", ID: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	if !b.Results[0].Existed || b.Results[0].DuplicateOf != "" || b.Results[0].Seq != a.Results[0].Seq {
		t.Fatalf("re-append: %+v", b.Results[0])
	}
}

func TestDedupeReport(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	in := `{"session":"a","role":"user","content":"We agreed to ship the billing migration on the first Monday of June after the audit."}
{"session":"b","role":"user","content":"We agreed to ship the billing migration on the first Monday of June after the audit, probably."}
{"session":"c","role":"assistant","content":"WE AGREED to ship the billing migration on the first Monday of June after the audit."}
{"session":"a","role":"user","content":"The cat sleeps on the red sofa every afternoon when the sun comes through the window."}
{"session":"a","role":"user","content":"Totally unrelated note about the Postgres replica lag during the nightly backup window."}
`
	if _, err := s.Append(ctx, AppendRequest{JSONL: in}); err != nil {
		t.Fatal(err)
	}
	h, _ := s.Log().Head()
	res, err := s.Dedupe(ctx, DedupeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Items != 5 || res.Groups != 1 || len(res.List) != 1 || len(res.List[0].Members) != 3 || res.List[0].Exact {
		t.Fatalf("report: %+v", res)
	}
	for _, m := range res.List[0].Members {
		if !strings.Contains(strings.ToLower(m.Snippet), "billing migration") {
			t.Fatalf("unrelated member %+v", m)
		}
	}
	exact, err := s.Dedupe(ctx, DedupeRequest{Threshold: 1})
	if err != nil {
		t.Fatal(err)
	}
	if exact.Groups != 1 || len(exact.List[0].Members) != 2 || !exact.List[0].Exact {
		t.Fatalf("threshold 1: %+v", exact)
	}
	again, err := s.Dedupe(ctx, DedupeRequest{})
	if err != nil || asJSON(t, again) != asJSON(t, res) {
		t.Fatalf("not deterministic: %v", err)
	}
	if h2, _ := s.Log().Head(); h2 != h {
		t.Fatalf("the report wrote events: %d -> %d", h, h2)
	}
	c := serve(t, s)
	viaSocket, err := c.Dedupe(ctx, DedupeRequest{})
	if err != nil || asJSON(t, viaSocket) != asJSON(t, res) {
		t.Fatalf("client report differs: %v", err)
	}
	for _, req := range []DedupeRequest{{Threshold: 1.5}, {Threshold: -0.1}, {Limit: -1}, {Kinds: []string{"poem"}}} {
		if _, err := s.Dedupe(ctx, req); !errors.Is(err, ErrBadRequest) {
			t.Fatalf("%+v: %v", req, err)
		}
	}
}

// A bad line anywhere rejects the input, duplicates or not: nothing is
// written.
func TestDuplicateInBadInputWritesNothing(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	if _, err := s.Remember(ctx, RememberRequest{Content: "Cashew allergy.", Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	in := `{"session":"s1","role":"user","content":"cashew allergy."}
{"session":"s1","role":"user","content":"New fact."}
{"session":"s1","role":"user","content":""}
`
	if _, err := s.Append(ctx, AppendRequest{JSONL: in}); !errors.Is(err, ErrBadInput) {
		t.Fatalf("bad input: %v", err)
	}
	if h, _ := s.Log().Head(); h != 1 {
		t.Fatalf("head %d after a refused input", h)
	}
	if _, err := s.Remember(ctx, RememberRequest{Content: "   ", Session: "s1"}); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("empty store: %v", err)
	}
}

// The dedup projection is one of the set: verify rebuilds it aside and
// compares its digest, after duplicates and tombstones.
func TestDedupProjectionVerifies(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	for _, c := range []string{"one fact", "ONE  fact", "another fact", "a third"} {
		if _, err := s.Remember(ctx, RememberRequest{Content: c, Session: "s"}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := s.Remember(ctx, RememberRequest{Content: "one fact", Session: "s", AllowDuplicate: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Tombstone(ctx, TombstoneRequest{Chunks: []string{r.Results[0].ID.String()}}); err != nil {
		t.Fatal(err)
	}
	v, err := s.VerifyProjections(ctx, VerifyProjectionsRequest{})
	if err != nil || !v.OK || v.Digests["dedup"] == "" {
		t.Fatalf("verify: %+v %v", v, err)
	}
}

// A store checks duplicates with the dedup projection alone; a read opens
// the whole set, which takes the dedup projection over.
func TestDuplicateCheckOpensOnlyDedup(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	a, err := s.Remember(ctx, RememberRequest{Content: "Lisbon in May.", Session: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if s.set != nil || s.dedupSet == nil {
		t.Fatalf("after a store: set %v, dedup set %v", s.set != nil, s.dedupSet != nil)
	}
	if _, err := s.Search(ctx, SearchRequest{Text: "lisbon"}); err != nil {
		t.Fatal(err)
	}
	if s.set == nil || s.dedupSet != nil {
		t.Fatalf("after a read: set %v, dedup set %v", s.set != nil, s.dedupSet != nil)
	}
	b, err := s.Remember(ctx, RememberRequest{Content: "lisbon in may.", Session: "t"})
	if err != nil || b.Results[0].DuplicateOf != a.Results[0].ID.String() {
		t.Fatalf("duplicate with the set open: %+v %v", b, err)
	}
}

// Chunks given line by line (chunk_parent in the JSONL) are parts of a
// document, not items: a chunk equal to a standalone note is stored.
func TestChunkLineIsNoDuplicateOfANote(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	if _, err := s.Remember(ctx, RememberRequest{Content: "Chapter one.", Session: "d", Kind: "document"}); err != nil {
		t.Fatal(err)
	}
	in := `{"session":"d","kind":"document","role":"user","content":"Chapter one.","chunk_parent":"book","chunk_index":3}` + "\n"
	res, err := s.Append(ctx, AppendRequest{JSONL: in})
	if err != nil || res.Results[0].DuplicateOf != "" {
		t.Fatalf("chunk line: %+v %v", res, err)
	}
}

// "allow_duplicate" on a JSONL line writes that line only.
func TestAppendLineAllowsDuplicate(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	if _, err := s.Remember(ctx, RememberRequest{Content: "Tea at five.", Session: "s"}); err != nil {
		t.Fatal(err)
	}
	in := `{"session":"s","role":"user","content":"tea at five.","allow_duplicate":true}
{"session":"s","role":"user","content":"TEA AT FIVE."}
`
	res, err := s.Append(ctx, AppendRequest{JSONL: in})
	if err != nil {
		t.Fatal(err)
	}
	rs := res.Results
	if rs[0].DuplicateOf != "" || rs[0].Seq != 2 || rs[1].DuplicateOf == "" {
		t.Fatalf("results: %+v", rs)
	}
	if h, _ := s.Log().Head(); h != 2 {
		t.Fatalf("head %d, want 2", h)
	}
	_, err = s.Append(ctx, AppendRequest{JSONL: `{"session":"s","content":"x","allow_duplicate":"yes"}`})
	var le *ingest.LineError
	if !errors.As(err, &le) || le.Field != "allow_duplicate" {
		t.Fatalf("allow_duplicate of the wrong type: %v", err)
	}
}
