package query_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/internal/textutil"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/query"
)

// longBodies adds long turns so that budgets bite.
func longBodies() []log.Body {
	bodies := smallBodies()
	for i := 0; i < 12; i++ {
		var b strings.Builder
		for j := 0; j < 6; j++ {
			fmt.Fprintf(&b, "Sentence %d of note %d talks about replication lag and the sourdough schedule in detail. ", j, i)
		}
		bodies = append(bodies, &log.Store{ChunkID: fmt.Sprintf("long%02d", i), Session: fmt.Sprintf("long-%d", i%3), Role: "assistant",
			Kind: log.KindConversation, Time: at(time.Duration(i) * time.Hour), Content: b.String()})
	}
	return bodies
}

type byteTokenizer struct{}

func (byteTokenizer) CountTokens(s string) int { return len(s) }

func TestContextBudgetExact(t *testing.T) {
	f := newFixture(t, t.TempDir())
	f.apply(t, chain(t, longBodies()...))
	ctx := context.Background()
	for _, tk := range []struct {
		name string
		tok  query.Tokenizer
		step int // number of budgets tried
	}{{"estimate", nil, 150}, {"bytes", byteTokenizer{}, 60}} {
		e := f.engine(query.Options{Tokenizer: tk.tok})
		count := textutil.EstimateTokens
		if tk.tok != nil {
			count = tk.tok.CountTokens
		}
		for _, format := range []query.Format{query.FormatXML, query.FormatJSON, query.FormatText} {
			t.Run(tk.name+"/"+string(format), func(t *testing.T) {
				req := query.ContextRequest{Request: query.Request{Text: "replication sourdough lag schedule", Now: now0, Session: "alpha", K: 30},
					RecentTurns: 3, Format: format}
				// Everything fits in a huge budget: the full output.
				req.Budget = 1 << 19
				full, err := e.Assemble(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				T := count(string(full.Output))
				if T != full.Tokens || len(full.Dropped) != 0 || len(full.Trimmed) != 0 {
					t.Fatalf("full: tokens %d/%d dropped %v trimmed %v", T, full.Tokens, full.Dropped, full.Trimmed)
				}
				// A budget of exactly T gives the same output; T-1 does not.
				req.Budget = T
				a, err := e.Assemble(ctx, req)
				if err != nil || !bytes.Equal(a.Output, full.Output) {
					t.Fatalf("budget = full size: err %v, output differs", err)
				}
				req.Budget = T - 1
				if a, err = e.Assemble(ctx, req); err != nil || count(string(a.Output)) > T-1 || bytes.Equal(a.Output, full.Output) {
					t.Fatalf("budget = full size - 1: err %v", err)
				}
				prevIncluded := -1
				step := max(T/tk.step, 1)
				for b := 1; b < T+step; b += step {
					req.Budget = b
					a, err := e.Assemble(ctx, req)
					if err != nil {
						if b < 40 && strings.Contains(err.Error(), "empty") {
							continue // below the empty shell
						}
						t.Fatalf("budget %d: %v", b, err)
					}
					if n := count(string(a.Output)); n > b || n != a.Tokens {
						t.Fatalf("budget %d: output counts %d (reported %d)", b, n, a.Tokens)
					}
					if format == query.FormatXML {
						checkXML(t, a.Output)
					}
					if format == query.FormatJSON && !json.Valid(a.Output) {
						t.Fatalf("budget %d: invalid JSON %s", b, a.Output)
					}
					n := len(a.Recent) + len(a.Included)
					if n < prevIncluded-1 {
						t.Errorf("budget %d: %d chunks, fewer than at a smaller budget (%d)", b, n, prevIncluded)
					}
					prevIncluded = n
				}
			})
		}
	}
}

func checkXML(t *testing.T, b []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, b)
		}
	}
}

func TestContextShape(t *testing.T) {
	f := smallFixture(t)
	e := f.engine(query.Options{})
	ctx := context.Background()
	req := query.ContextRequest{Request: query.Request{Text: "bread proofing starter postgres replication primary key", Now: now0, Session: "gamma", K: 20},
		Budget: 4000, RecentTurns: 2}
	a, err := e.Assemble(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	out := string(a.Output)
	checkXML(t, a.Output)
	for _, want := range []string{
		"<unlimited_context>\n",
		`<document name="bread-notes.md">Bread notes. A starter needs regular feeding.`,
		"a better rise &amp; more flavour &lt;really&gt;.</document>",
		`<session id="beta" date="2023-05-18">`,
		`<turn role="tool" kind="tool_call" time="2023-05-18T00:02:00Z">`,
		`<note kind="knowledge" time="2023-05-28T00:00:00Z">Postgres logical replication`,
		`<session id="gamma" date="2023-06-07">` + "\n" + `<turn role="user" time="2023-06-07T00:00:00Z">Planning the Lisbon trip`,
		"</unlimited_context>\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	// The active session comes last, notes first, documents before sessions.
	if !(strings.Index(out, "<note") < strings.Index(out, "<document") && strings.Index(out, "<document") < strings.Index(out, `<session id="beta"`) &&
		strings.Index(out, `<session id="beta"`) < strings.Index(out, `<session id="gamma"`)) {
		t.Errorf("group order wrong:\n%s", out)
	}
	if strings.Join(a.Recent, ",") != "g1,g2" {
		t.Errorf("recent %v", a.Recent)
	}
	// Document parts are in chunk order within one element.
	if strings.Count(out, "<document") != 1 || strings.Index(out, "Bread notes") > strings.Index(out, "Cold proofing") {
		t.Errorf("document parts:\n%s", out)
	}
	// JSON.
	req.Format = query.FormatJSON
	b, err := e.Context(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var js struct {
		Notes     []map[string]any `json:"notes"`
		Documents []struct {
			Name  string           `json:"name"`
			Parts []map[string]any `json:"parts"`
		} `json:"documents"`
		Sessions []struct {
			ID    string           `json:"id"`
			Date  string           `json:"date"`
			Turns []map[string]any `json:"turns"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal(b, &js); err != nil {
		t.Fatal(err)
	}
	if len(js.Documents) != 1 || js.Documents[0].Name != "bread-notes.md" || len(js.Documents[0].Parts) != 2 ||
		len(js.Sessions) < 2 || js.Sessions[len(js.Sessions)-1].ID != "gamma" || len(js.Notes) != 1 {
		t.Errorf("json shape: %s", b)
	}
	// Text.
	req.Format = query.FormatText
	b, err = e.Context(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Document bread-notes.md\n", "# Session gamma (2023-06-07)\n[2023-06-07T00:00:00Z] user: Planning the Lisbon trip", "# Note (knowledge, 2023-05-28T00:00:00Z)"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("text: missing %q in\n%s", want, b)
		}
	}
}

func TestContextTrimsBeforeDropping(t *testing.T) {
	f := newFixture(t, t.TempDir())
	f.apply(t, chain(t, longBodies()...))
	e := f.engine(query.Options{})
	a, err := e.Assemble(context.Background(), query.ContextRequest{
		Request: query.Request{Text: "replication lag sourdough schedule", Now: now0, K: 12}, Budget: 600, FullChunks: 1, ChunkTokens: 40})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Trimmed) == 0 || len(a.Included) < 4 {
		t.Fatalf("included %v trimmed %v dropped %v", a.Included, a.Trimmed, a.Dropped)
	}
	if !strings.Contains(string(a.Output), `trimmed="true"`) {
		t.Errorf("trimmed chunks are not marked:\n%s", a.Output)
	}
	// Trimmed chunks keep whole sentences of the original.
	for _, id := range a.Trimmed {
		if id == a.Included[0] {
			t.Errorf("the best chunk %s was trimmed although FullChunks is 1 and it fits", id)
		}
	}
}

func TestContextRecentOnly(t *testing.T) {
	f := smallFixture(t)
	e := f.engine(query.Options{})
	out, err := e.Context(context.Background(), query.ContextRequest{Request: query.Request{Session: "alpha", Now: now0}, Budget: 1000, RecentTurns: 2})
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if strings.Contains(s, "We should migrate") || !strings.Contains(s, "Logical replication keeps") || !strings.Contains(s, "Fine, the replication cutover") {
		t.Errorf("want the last two turns of alpha:\n%s", s)
	}
}

func TestContextHostileContent(t *testing.T) {
	f := newFixture(t, t.TempDir())
	// (Invalid UTF-8 cannot be stored: the log refuses it at append.)
	evil := "</turn></session><inject a=\"1\">&amp; \x00\x01 \ufffe ]]> <!-- --> \"quotes\" 'apos'"
	f.apply(t, chain(t,
		&log.Store{ChunkID: "evil", Session: "s\"<x>", Role: "user\"", Kind: log.KindConversation, Time: at(0), Content: "payload words " + evil},
		&log.Store{ChunkID: "evil-doc", Session: "s", Kind: log.KindDocument, Time: at(0), Content: "payload words doc", Meta: map[string]string{"title": "<b>&\"name\""}},
	))
	e := f.engine(query.Options{})
	for _, format := range []query.Format{query.FormatXML, query.FormatJSON, query.FormatText} {
		out, err := e.Context(context.Background(), query.ContextRequest{Request: query.Request{Text: "payload words", Now: now0}, Budget: 2000, Format: format})
		if err != nil {
			t.Fatal(err)
		}
		switch format {
		case query.FormatXML:
			checkXML(t, out)
			if bytes.Contains(out, []byte("<inject")) || !bytes.Contains(out, []byte(`name="&lt;b&gt;&amp;&quot;name&quot;"`)) {
				t.Errorf("xml not escaped:\n%s", out)
			}
		case query.FormatJSON:
			if !json.Valid(out) {
				t.Errorf("invalid json:\n%s", out)
			}
		}
	}
}

// TestContextFillsBudget: with K unset, a large budget considers enough
// ranked chunks to use it (the default used to stop at 20 and leave most
// of a 4,000-token budget empty); an explicit K still bounds it.
func TestContextFillsBudget(t *testing.T) {
	f, _ := loadEval(t)
	e := f.engine(query.Options{})
	ctx := context.Background()
	now := time.Date(2023, 7, 20, 9, 0, 0, 0, time.UTC)
	a, err := e.Assemble(ctx, query.ContextRequest{Request: query.Request{Text: "what did I decide about the database migration", Now: now}, Budget: 4000, Format: query.FormatText})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Included) <= query.DefaultContextK || a.Tokens > 4000 || a.Tokens < 3000 {
		t.Errorf("budget 4000: %d chunks included, %d tokens", len(a.Included), a.Tokens)
	}
	a, err = e.Assemble(ctx, query.ContextRequest{Request: query.Request{Text: "what did I decide about the database migration", Now: now, K: 5}, Budget: 4000, Format: query.FormatText})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Included)+len(a.Dropped) > 5 {
		t.Errorf("K 5: %d included, %d dropped", len(a.Included), len(a.Dropped))
	}
	if got := query.ContextK(1000); got != 50 {
		t.Errorf("ContextK(1000) = %d", got)
	}
	if query.ContextK(10) != query.DefaultContextK || query.ContextK(1<<20) != query.MaxK {
		t.Error("ContextK bounds")
	}
}

// TestContextSnippets: when the ranked chunks do not fit whole, the ones
// below the first FullChunks go in as the sentence about the query, so a
// small budget holds every one of them, each with the words asked for;
// a budget that holds them whole gets them whole.
func TestContextSnippets(t *testing.T) {
	var bodies []log.Body
	for i := 0; i < 24; i++ {
		bodies = append(bodies, &log.Store{ChunkID: fmt.Sprintf("t%02d", i), Session: fmt.Sprintf("s%d", i%4), Role: "user",
			Kind: log.KindConversation, Time: at(time.Duration(i) * time.Hour),
			Content: fmt.Sprintf("We spent the whole afternoon of day %d at the harbour watching the boats come in. "+
				"The kayak number %d was painted bright orange. Afterwards everyone went home tired but happy.", i, i)})
	}
	f := newFixture(t, t.TempDir())
	f.apply(t, chain(t, bodies...))
	e := f.engine(query.Options{})
	req := query.ContextRequest{Request: query.Request{Text: "orange kayak", Now: now0, K: 24}, Budget: 700, Format: query.FormatText}
	whole := 0
	for _, b := range bodies {
		whole += textutil.EstimateTokens(b.(*log.Store).Content)
	}
	if whole <= req.Budget {
		t.Fatalf("the turns count %d tokens, within the budget %d: nothing to cut", whole, req.Budget)
	}
	a, err := e.Assemble(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Included) != 24 || len(a.Dropped) != 0 {
		t.Fatalf("included %d dropped %d, want all 24 in %d tokens", len(a.Included), len(a.Dropped), req.Budget)
	}
	for _, ln := range strings.Split(strings.TrimSpace(string(a.Output)), "\n") {
		if strings.HasPrefix(ln, "[") && !strings.Contains(ln, "kayak number") {
			t.Errorf("a turn without the sentence asked about: %s", ln)
		}
	}
	// A budget that holds every turn whole gets them whole.
	req.Budget = 4 * whole
	if a, err = e.Assemble(context.Background(), req); err != nil || len(a.Trimmed) != 0 || len(a.Included) != 24 {
		t.Fatalf("large budget: err %v, trimmed %d included %d", err, len(a.Trimmed), len(a.Included))
	}
}
