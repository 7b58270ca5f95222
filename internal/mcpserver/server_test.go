package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/log"
)

// now is the clock of every test: Wednesday 2023-05-10 12:00 UTC (the
// week of the seeded conversation starts Monday 2023-05-08).
var now = time.Date(2023, 5, 10, 12, 0, 0, 0, time.UTC)

// syncBuf is a log sink the server writes from its goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type env struct {
	t     *testing.T
	store *ucl.Store
	cs    *mcp.ClientSession
	log   *syncBuf
}

// testWallet is one Arweave wallet for every store of these tests (as
// internal/httpapi does): an RSA-4096 key costs seconds of CPU under
// -race, and no test here talks to a gateway or needs two wallets.
var testWallet = sync.OnceValues(func() (*arweave.Wallet, error) {
	w, _, err := arweave.GenerateWallet()
	return w, err
})

// initStore creates a store in dir with the tests' wallet.
func initStore(t *testing.T, dir string) *ucl.Store {
	t.Helper()
	w, err := testWallet()
	if err != nil {
		t.Fatal(err)
	}
	st, err := ucl.Init(dir, ucl.InitOptions{Durability: log.None, Wallet: w})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// newEnv opens a real store in a temp dir and connects an SDK client to a
// server over it through the in-memory transports.
func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, Options{})
}

// newEnvWith is newEnv with server options o (Log, Now and Version are
// the test's).
func newEnvWith(t *testing.T, o Options) *env {
	t.Helper()
	st := initStore(t, t.TempDir())
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
	logs := &syncBuf{}
	o.Log, o.Now, o.Version = logs, func() time.Time { return now }, "test"
	srv := New(st, o)
	ctx := context.Background()
	st1, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st1, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return &env{t: t, store: st, cs: cs, log: logs}
}

// call calls a tool and returns its result; a protocol error fails the test.
func (e *env) call(name string, args any) *mcp.CallToolResult {
	e.t.Helper()
	res, err := e.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		e.t.Fatalf("%s: protocol error: %v", name, err)
	}
	return res
}

// ok calls a tool that must succeed and decodes its structured content.
func ok[T any](e *env, name string, args any) (T, string) {
	e.t.Helper()
	var out T
	res := e.call(name, args)
	text := resultText(res)
	if res.IsError {
		e.t.Fatalf("%s(%v): tool error: %s", name, args, text)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		e.t.Fatalf("%s: structured content %s: %v", name, b, err)
	}
	return out, text
}

// fails calls a tool that must return a tool error containing want.
func (e *env) fails(name string, args any, want string) {
	e.t.Helper()
	res := e.call(name, args)
	text := resultText(res)
	if !res.IsError {
		e.t.Fatalf("%s(%v): want a tool error containing %q, got success: %s", name, args, want, text)
	}
	if !strings.Contains(text, want) {
		e.t.Fatalf("%s(%v): error %q does not contain %q", name, args, text, want)
	}
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// head is the log head seq, to prove a failed call wrote nothing.
func (e *env) head() uint64 {
	e.t.Helper()
	st, err := e.store.Status(context.Background(), ucl.StatusRequest{})
	if err != nil {
		e.t.Fatal(err)
	}
	return st.HeadSeq
}

// longDoc is a document well over one chunk (log.DefaultChunkTokens).
func longDoc() string {
	var b strings.Builder
	for i := 0; i < 60; i++ {
		fmt.Fprintf(&b, "Section %d of the cutover runbook: drain the queue, snapshot the ledger, flip the replica %d. ", i, i)
		if i%6 == 5 {
			b.WriteString("\n\n")
		}
	}
	return b.String()
}

type seeded struct {
	q, a, fact, doc string
	docChunks       []string
}

// seed stores a small conversation in session s1 (a question and a reply
// to it), a fact in s2 last month, and a chunked document in s1.
func (e *env) seed() seeded {
	e.t.Helper()
	var s seeded
	q, _ := ok[StoreOut](e, "uc_store", StoreIn{Content: "When do we do the Postgres cutover?", Session: "s1", Role: "user", Time: "2023-05-08T10:00:00Z"})
	s.q = q.IDs[0]
	a, _ := ok[StoreOut](e, "uc_store", StoreIn{Content: "The Postgres cutover is planned for Saturday night, after the backup.", Session: "s1", Role: "assistant", Parent: s.q, Time: "2023-05-08T10:01:00Z"})
	s.a = a.IDs[0]
	f, _ := ok[StoreOut](e, "uc_store", StoreIn{Content: "The staging database password rotates every 30 days.", Session: "s2", Kind: "knowledge", Time: "2023-04-12T09:00:00Z"})
	s.fact = f.IDs[0]
	d, _ := ok[StoreOut](e, "uc_store", StoreIn{Content: longDoc(), Session: "s1", Kind: "document", Meta: map[string]string{"name": "runbook.md"}, Time: "2023-05-09T08:00:00Z", ID: "runbook-v1"})
	if !d.Chunked || len(d.IDs) < 2 {
		e.t.Fatalf("document not chunked: %+v", d)
	}
	s.doc, s.docChunks = d.Parent, d.IDs
	return s
}

func TestListToolsAndResources(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	tools, err := e.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if len(tl.Description) < 60 {
			t.Errorf("%s: description too short for a model: %q", tl.Name, tl.Description)
		}
		if tl.InputSchema == nil {
			t.Errorf("%s: missing input schema", tl.Name)
		}
		// Output schemas only where programs read the result.
		if want := tl.Name == "uc_store" || tl.Name == "uc_query"; (tl.OutputSchema != nil) != want {
			t.Errorf("%s: output schema %v, want one: %v", tl.Name, tl.OutputSchema != nil, want)
		}
	}
	sort.Strings(names)
	want := "uc_consolidate uc_context uc_edit uc_forget uc_get uc_get_document uc_get_session uc_get_thread uc_index uc_list_sessions uc_period uc_profile uc_query uc_status uc_store"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("tools: got %s, want %s", got, want)
	}
	rs, err := e.cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.Resources) != 1 || rs.Resources[0].URI != AutoContextURI {
		t.Fatalf("resources: %+v", rs.Resources)
	}
	ts, err := e.cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var tmpls []string
	for _, tm := range ts.ResourceTemplates {
		tmpls = append(tmpls, tm.URITemplate)
	}
	sort.Strings(tmpls)
	if got := strings.Join(tmpls, " "); got != DocumentTemplate+" "+SessionTemplate {
		t.Fatalf("templates: %s", got)
	}
}

func TestStore(t *testing.T) {
	e := newEnv(t)
	s := e.seed()
	// Idempotent retry: same id and content writes nothing.
	h := e.head()
	again, text := ok[StoreOut](e, "uc_store", StoreIn{Content: longDoc(), Session: "s1", Kind: "document", Meta: map[string]string{"name": "runbook.md"}, Time: "2023-05-09T08:00:00Z", ID: "runbook-v1"})
	if !again.Existed || again.Parent != s.doc || e.head() != h {
		t.Fatalf("re-store: %+v (head %d → %d)", again, h, e.head())
	}
	if !strings.Contains(text, "already stored") {
		t.Errorf("text: %q", text)
	}
	got, _ := ok[GetOut](e, "uc_get", GetIn{IDs: []string{s.a}})
	if it := got.Items[0]; it.Parent != s.q || it.Role != "assistant" || it.Session != "s1" || it.Time != "2023-05-08T10:01:00Z" {
		t.Fatalf("stored item: %+v", it)
	}
}

func TestStoreBadArguments(t *testing.T) {
	e := newEnv(t)
	s := e.seed()
	h := e.head()
	e.fails("uc_store", StoreIn{Content: "  "}, "content: is empty")
	e.fails("uc_store", map[string]any{"session": "s1"}, "content")
	e.fails("uc_store", StoreIn{Content: "x", Kind: "email"}, `kind: "email" is not a kind`)
	e.fails("uc_store", StoreIn{Content: "x", Time: "last tuesday"}, "time: cannot parse time")
	e.fails("uc_store", StoreIn{Content: "x", Parent: "nope"}, `no item with id "nope"`)
	e.fails("uc_store", StoreIn{Content: "x", Meta: map[string]string{"": "v"}}, "meta: has an empty key")
	e.fails("uc_store", map[string]any{"content": "x", "bogus": 1}, "bogus")
	// Same idempotency key, different content: refused, nothing written.
	ok[StoreOut](e, "uc_store", StoreIn{Content: "first", Session: "s1", ID: "turn-7"})
	h = e.head()
	e.fails("uc_store", StoreIn{Content: "second", Session: "s1", ID: "turn-7"}, "store")
	if e.head() != h {
		t.Fatalf("a failed store wrote events: head %d → %d", h, e.head())
	}
	_ = s
}

func TestQuery(t *testing.T) {
	e := newEnv(t)
	s := e.seed()
	out, text := ok[QueryOut](e, "uc_query", QueryIn{Query: "postgres cutover", K: 5})
	if len(out.Hits) == 0 {
		t.Fatal("no hits")
	}
	ids := map[string]bool{}
	for _, h := range out.Hits {
		ids[h.ID] = true
		if h.Snippet == "" || h.Kind == "" || h.Time == "" || h.Seq == 0 {
			t.Errorf("incomplete hit %+v", h)
		}
	}
	if !ids[s.q] || !ids[s.a] {
		t.Fatalf("hits %v miss the conversation %s %s", out.Hits, s.q, s.a)
	}
	if !strings.Contains(text, s.a) {
		t.Errorf("text does not name the hits: %s", text)
	}
	// Filters: only knowledge; only s2; a time window excluding April.
	out, _ = ok[QueryOut](e, "uc_query", QueryIn{Query: "password rotates", Kinds: []string{"knowledge"}})
	if len(out.Hits) != 1 || out.Hits[0].ID != s.fact {
		t.Fatalf("kind filter: %+v", out.Hits)
	}
	out, _ = ok[QueryOut](e, "uc_query", QueryIn{Query: "password rotates cutover", Since: "2023-05-01"})
	for _, h := range out.Hits {
		if h.ID == s.fact {
			t.Fatalf("since filter let April through: %+v", h)
		}
	}
	// A hit in the document is marked as a chunk.
	out, _ = ok[QueryOut](e, "uc_query", QueryIn{Query: "runbook replica snapshot ledger", Kinds: []string{"document"}})
	if len(out.Hits) == 0 || !out.Hits[0].IsChunk || out.Hits[0].ChunkParent != s.doc {
		t.Fatalf("document hit: %+v", out.Hits)
	}
}

func TestQueryBadArguments(t *testing.T) {
	e := newEnv(t)
	e.seed()
	e.fails("uc_query", QueryIn{Query: " "}, "query: is empty")
	e.fails("uc_query", QueryIn{Query: "x", K: 201}, "k: must be 1 to 200, got 201")
	e.fails("uc_query", QueryIn{Query: "x", K: -1}, "k: must be 1 to 200")
	e.fails("uc_query", QueryIn{Query: "x", Sessions: []string{"nope"}}, `no session "nope"`)
	e.fails("uc_query", QueryIn{Query: "x", Session: "nope"}, `no session "nope"`)
	e.fails("uc_query", QueryIn{Query: "x", Since: "2023-13-45"}, "since: cannot parse time")
	e.fails("uc_query", QueryIn{Query: "x", Since: "2023-05-02", Until: "2023-05-01"}, "until: ")
	e.fails("uc_query", QueryIn{Query: "x", Kinds: []string{"mail"}}, `kinds: "mail" is not a kind`)
	e.fails("uc_query", QueryIn{Query: "x", Mode: "fuzzy"}, `mode: "fuzzy"`)
}

func TestContext(t *testing.T) {
	e := newEnv(t)
	s := e.seed()
	out, text := ok[ContextOut](e, "uc_context", ContextIn{Query: "when is the cutover?", Session: "s1"})
	if !strings.Contains(text, "Saturday night") {
		t.Fatalf("context: %q", text)
	}
	if out.Tokens > out.Budget || out.Budget != DefaultBudget || out.Format != "xml" {
		t.Fatalf("context accounting: %+v", out)
	}
	if !contains(out.Recent, s.a) {
		t.Fatalf("recent turns %v miss %s", out.Recent, s.a)
	}
	small := 60
	out, _ = ok[ContextOut](e, "uc_context", ContextIn{Query: "cutover runbook", Budget: &small, Format: "text"})
	if out.Tokens > small || out.Format != "text" {
		t.Fatalf("small budget: %+v", out)
	}
	// Same block as the engine gives the CLI.
	want, err := e.store.Context(context.Background(), ucl.ContextRequest{SearchRequest: ucl.SearchRequest{Text: "when is the cutover?", Session: "s1", Now: now.Format(time.RFC3339)}, Budget: DefaultBudget, Recent: DefaultRecent})
	if err != nil {
		t.Fatal(err)
	}
	_, text = ok[ContextOut](e, "uc_context", ContextIn{Query: "when is the cutover?", Session: "s1"})
	if text != want.Context {
		t.Fatalf("context differs from the engine's:\n%s\n---\n%s", text, want.Context)
	}
}

func TestContextBadArguments(t *testing.T) {
	e := newEnv(t)
	e.seed()
	zero, neg := 0, -5
	e.fails("uc_context", ContextIn{Query: "x", Budget: &zero}, "budget: must be 1 to 100000 tokens")
	e.fails("uc_context", ContextIn{Query: "x", Budget: &neg}, "budget: must be 1 to 100000")
	e.fails("uc_context", ContextIn{}, "query: is empty")
	e.fails("uc_context", ContextIn{Query: "x", Session: "nope"}, `no session "nope"`)
	e.fails("uc_context", ContextIn{Query: "x", Format: "yaml"}, `format: "yaml"`)
	tiny := 3
	e.fails("uc_context", ContextIn{Query: "cutover", Budget: &tiny}, "budget")
}

func TestGet(t *testing.T) {
	e := newEnv(t)
	s := e.seed()
	out, _ := ok[GetOut](e, "uc_get", GetIn{IDs: []string{s.q, s.a}})
	if len(out.Items) != 2 || out.Items[0].ID != s.q || out.Items[1].ID != s.a {
		t.Fatalf("get: %+v", out.Items)
	}
	// A chunk alone, then with its whole document in order.
	out, _ = ok[GetOut](e, "uc_get", GetIn{IDs: []string{s.docChunks[1]}})
	if len(out.Items) != 1 || out.Items[0].ChunkIndex != 1 || out.Items[0].ChunkParent != s.doc {
		t.Fatalf("chunk: %+v", out.Items)
	}
	out, _ = ok[GetOut](e, "uc_get", GetIn{IDs: []string{s.docChunks[1]}, WithChunks: true})
	if len(out.Items) != len(s.docChunks) {
		t.Fatalf("with_chunks: %d items, want %d", len(out.Items), len(s.docChunks))
	}
	for i, it := range out.Items {
		if it.ID != s.docChunks[i] || it.ChunkIndex != i {
			t.Fatalf("with_chunks order: item %d is %s (index %d)", i, it.ID, it.ChunkIndex)
		}
	}
}

func TestGetBadArguments(t *testing.T) {
	e := newEnv(t)
	s := e.seed()
	e.fails("uc_get", GetIn{}, "ids: is empty")
	e.fails("uc_get", GetIn{IDs: []string{"nope"}}, `no item with id "nope"`)
	e.fails("uc_get", GetIn{IDs: []string{s.q, "nope", "gone"}}, `"nope", "gone"`)
	e.fails("uc_get", GetIn{IDs: []string{""}}, "empty id")
}

func TestThread(t *testing.T) {
	e := newEnv(t)
	s := e.seed()
	r2, _ := ok[StoreOut](e, "uc_store", StoreIn{Content: "Then I'll book the maintenance window.", Session: "s1", Parent: s.a, Time: "2023-05-08T10:02:00Z"})
	for _, id := range []string{s.q, s.a, r2.IDs[0]} {
		out, _ := ok[ThreadOut](e, "uc_get_thread", ThreadIn{ID: id})
		var got []string
		for _, it := range out.Items {
			got = append(got, it.ID)
		}
		if strings.Join(got, ",") != strings.Join([]string{s.q, s.a, r2.IDs[0]}, ",") || out.Anchor != id {
			t.Fatalf("thread of %s: %v", id, got)
		}
	}
	out, _ := ok[ThreadOut](e, "uc_get_thread", ThreadIn{ID: s.q, Depth: 1})
	if len(out.Items) != 2 {
		t.Fatalf("depth 1 from the root: %d items", len(out.Items))
	}
	e.fails("uc_get_thread", ThreadIn{ID: "nope"}, `no item with id "nope"`)
	e.fails("uc_get_thread", ThreadIn{ID: s.q, Depth: 101}, "depth: must be 1 to 100")
	e.fails("uc_get_thread", ThreadIn{}, "id: is empty")
}

func TestSession(t *testing.T) {
	e := newEnv(t)
	s := e.seed()
	all, text := ok[SessionOut](e, "uc_get_session", SessionIn{Session: "s1"})
	n := 2 + len(s.docChunks)
	if len(all.Items) != n || all.Session.Items != n || all.NextOffset != 0 || all.Items[0].ID != s.q {
		t.Fatalf("session: %d items, info %+v, next %d", len(all.Items), all.Session, all.NextOffset)
	}
	if !strings.Contains(text, "Postgres cutover") {
		t.Errorf("text: %s", text)
	}
	p1, _ := ok[SessionOut](e, "uc_get_session", SessionIn{Session: "s1", Limit: 2})
	if len(p1.Items) != 2 || p1.NextOffset != 2 {
		t.Fatalf("page 1: %d items, next %d", len(p1.Items), p1.NextOffset)
	}
	p2, _ := ok[SessionOut](e, "uc_get_session", SessionIn{Session: "s1", Offset: p1.NextOffset, Limit: 500})
	if len(p2.Items) != n-2 || p2.NextOffset != 0 || p2.Items[0].ID != all.Items[2].ID {
		t.Fatalf("page 2: %d items, next %d", len(p2.Items), p2.NextOffset)
	}
	last, text := ok[SessionOut](e, "uc_get_session", SessionIn{Session: "s1", Last: 2})
	if len(last.Items) != 2 || last.NextOffset != 0 || last.Items[0].ID != all.Items[n-2].ID || last.Items[1].ID != all.Items[n-1].ID {
		t.Fatalf("last 2: %d items, next %d", len(last.Items), last.NextOffset)
	}
	if !strings.Contains(text, fmt.Sprintf("(offset %d)", n-2)) {
		t.Errorf("last 2 does not say where it starts: %s", text)
	}
	e.fails("uc_get_session", SessionIn{Session: "s1", Last: 2, Offset: 1}, "last: cannot be combined with offset or limit")
	e.fails("uc_get_session", SessionIn{Session: "s1", Last: 501}, "last: must be 1 to 500")
	e.fails("uc_get_session", SessionIn{Session: "nope"}, `no session "nope"`)
	e.fails("uc_get_session", SessionIn{}, "session: is empty")
	e.fails("uc_get_session", SessionIn{Session: "s1", Limit: 501}, "limit: must be 1 to 500")
	e.fails("uc_get_session", SessionIn{Session: "s1", Offset: -1}, "offset: must be 0 or more")
}

func TestListSessions(t *testing.T) {
	e := newEnv(t)
	e.seed()
	out, _ := ok[ListSessionsOut](e, "uc_list_sessions", ListSessionsIn{})
	if len(out.Sessions) != 2 || out.Sessions[0].ID != "s1" || out.Sessions[1].ID != "s2" || out.More {
		t.Fatalf("sessions: %+v", out)
	}
	if s1 := out.Sessions[0]; s1.Title == "" || s1.Summary == "" || s1.First != "2023-05-08T10:00:00Z" {
		t.Fatalf("s1: %+v", s1)
	}
	out, _ = ok[ListSessionsOut](e, "uc_list_sessions", ListSessionsIn{Since: "2023-05-01"})
	if len(out.Sessions) != 1 || out.Sessions[0].ID != "s1" {
		t.Fatalf("since: %+v", out.Sessions)
	}
	out, _ = ok[ListSessionsOut](e, "uc_list_sessions", ListSessionsIn{Limit: 1})
	if len(out.Sessions) != 1 || !out.More {
		t.Fatalf("limit: %+v", out)
	}
	e.fails("uc_list_sessions", ListSessionsIn{Since: "yesterday-ish"}, "since: cannot parse time")
	e.fails("uc_list_sessions", ListSessionsIn{Limit: 1000}, "limit: must be 1 to 500")
}

func TestDocument(t *testing.T) {
	e := newEnv(t)
	s := e.seed()
	for _, in := range []DocumentIn{{ID: s.doc}, {ID: s.docChunks[2]}, {Name: "runbook.md"}, {Name: "RUNBOOK.MD"}} {
		out, _ := ok[DocumentOut](e, "uc_get_document", in)
		if out.ID != s.doc || out.Name != "runbook.md" || len(out.Chunks) != len(s.docChunks) {
			t.Fatalf("%+v: %+v", in, out)
		}
		if out.Content != longDoc() { // byte for byte, not normalised
			t.Fatalf("%+v: reassembled content differs", in)
		}
	}
	e.fails("uc_get_document", DocumentIn{}, "give the document's id or its name")
	e.fails("uc_get_document", DocumentIn{ID: "nope"}, `no item with id "nope"`)
	e.fails("uc_get_document", DocumentIn{Name: "missing.md"}, `no item named "missing.md"`)
	e.fails("uc_get_document", DocumentIn{ID: s.doc, Name: "runbook.md"}, "not both")
}

// norm drops white space differences (chunking joins paragraphs anew).
func norm(s string) string { return strings.Join(strings.Fields(s), " ") }

func TestPeriod(t *testing.T) {
	e := newEnv(t)
	s := e.seed()
	week, _ := ok[PeriodOut](e, "uc_period", PeriodIn{Period: "this week"})
	if week.Since != "2023-05-08T00:00:00Z" || week.Total != 2+len(s.docChunks) {
		t.Fatalf("this week: since %s, total %d", week.Since, week.Total)
	}
	if week.Items[len(week.Items)-1].ID != s.q {
		t.Fatalf("not newest first: last is %s", week.Items[len(week.Items)-1].ID)
	}
	for i := 1; i < len(week.Items); i++ {
		if week.Items[i].Time > week.Items[i-1].Time {
			t.Fatalf("not newest first at %d", i)
		}
	}
	last, _ := ok[PeriodOut](e, "uc_period", PeriodIn{Period: "last month"})
	if last.Total != 1 || last.Items[0].ID != s.fact {
		t.Fatalf("last month: %+v", last)
	}
	may, _ := ok[PeriodOut](e, "uc_period", PeriodIn{Period: "May 2023", Kinds: []string{"conversation"}})
	if may.Total != 2 {
		t.Fatalf("May 2023 conversation: %d", may.Total)
	}
	iso, _ := ok[PeriodOut](e, "uc_period", PeriodIn{Period: "2023-04-01..2023-05-08"})
	if iso.Total != 3 || iso.Until != "2023-05-09T00:00:00Z" {
		t.Fatalf("iso range (end date inclusive): total %d until %s", iso.Total, iso.Until)
	}
	pg, _ := ok[PeriodOut](e, "uc_period", PeriodIn{Period: "this week", Limit: 2, Offset: 1})
	if len(pg.Items) != 2 || pg.Items[0].ID != week.Items[1].ID || pg.NextOffset != 3 {
		t.Fatalf("paging: %+v", pg)
	}
	s1, _ := ok[PeriodOut](e, "uc_period", PeriodIn{Period: "in 2023", Sessions: []string{"s2"}})
	if s1.Total != 1 {
		t.Fatalf("session filter: %d", s1.Total)
	}
	today, _ := ok[PeriodOut](e, "uc_period", PeriodIn{Period: "today"})
	if today.Total != 0 || len(today.Items) != 0 {
		t.Fatalf("today: %+v", today)
	}
	e.fails("uc_period", PeriodIn{Period: "sometime soon"}, `cannot read period "sometime soon"`)
	e.fails("uc_period", PeriodIn{Period: "last week pizza"}, `"pizza" is not part of a time phrase`)
	e.fails("uc_period", PeriodIn{Period: "2023-05-09..2023-05-01"}, "end is not after its start")
	e.fails("uc_period", PeriodIn{Period: "2023-02-30..2023-03-01"}, "period start")
	e.fails("uc_period", PeriodIn{Period: ""}, "period is empty")
	e.fails("uc_period", PeriodIn{Period: "today", Sessions: []string{"nope"}}, `no session "nope"`)
	e.fails("uc_period", PeriodIn{Period: "today", Kinds: []string{"mail"}}, `kinds: "mail"`)
}

func TestForget(t *testing.T) {
	e := newEnv(t)
	s := e.seed()
	out, text := ok[ForgetOut](e, "uc_forget", ForgetIn{IDs: []string{s.a}, Reason: "test"})
	if len(out.Removed) != 1 || out.Removed[0] != s.a || out.Erasure || out.Seq == 0 {
		t.Fatalf("forget: %+v", out)
	}
	for _, want := range []string{"hidden from every search", "not erasure", "vault-key rotation"} {
		if !strings.Contains(text, want) {
			t.Errorf("forget text lacks %q: %s", want, text)
		}
	}
	e.fails("uc_get", GetIn{IDs: []string{s.a}}, "forgotten")
	q, _ := ok[QueryOut](e, "uc_query", QueryIn{Query: "Saturday night cutover backup"})
	for _, h := range q.Hits {
		if h.ID == s.a {
			t.Fatal("forgotten item still found by uc_query")
		}
	}
	// A document by its id: every chunk goes.
	out, _ = ok[ForgetOut](e, "uc_forget", ForgetIn{IDs: []string{s.doc}})
	if len(out.Removed) != len(s.docChunks) {
		t.Fatalf("document forget removed %d, want %d", len(out.Removed), len(s.docChunks))
	}
	// A session.
	out, _ = ok[ForgetOut](e, "uc_forget", ForgetIn{Session: "s2"})
	if len(out.Removed) != 1 || out.Removed[0] != s.fact {
		t.Fatalf("session forget: %+v", out)
	}
	e.fails("uc_get_session", SessionIn{Session: "s2"}, `no session "s2"`)
}

func TestForgetBadArguments(t *testing.T) {
	e := newEnv(t)
	s := e.seed()
	h := e.head()
	e.fails("uc_forget", ForgetIn{}, "say what to forget")
	e.fails("uc_forget", ForgetIn{IDs: []string{s.q, "nope"}}, `no item with id "nope"`)
	e.fails("uc_forget", ForgetIn{Session: "nope"}, `no session "nope"`)
	e.fails("uc_forget", ForgetIn{Since: "2023-05-01"}, "needs both since and until")
	e.fails("uc_forget", ForgetIn{Since: "2023-05-02", Until: "2023-05-01"}, "until: ")
	e.fails("uc_forget", ForgetIn{Since: "garbage", Until: "2023-05-01"}, "since: cannot parse time")
	if e.head() != h {
		t.Fatalf("a refused forget wrote events: head %d → %d", h, e.head())
	}
	// The item named next to the unknown id is still there.
	ok[GetOut](e, "uc_get", GetIn{IDs: []string{s.q}})
}

func TestStatus(t *testing.T) {
	e := newEnv(t)
	e.seed()
	out, text := ok[StatusOut](e, "uc_status", StatusIn{})
	if out.Events != e.head() || out.Head != e.head() || out.HeadHash == "" || len(out.Projections) == 0 {
		t.Fatalf("status: %+v", out)
	}
	if out.Mirror != nil || !strings.Contains(text, "mirror") {
		t.Fatalf("mirror of an unmirrored store: %+v / %s", out.Mirror, text)
	}
	// After a read every projection has caught up.
	ok[QueryOut](e, "uc_query", QueryIn{Query: "cutover"})
	out, _ = ok[StatusOut](e, "uc_status", StatusIn{})
	if !out.CaughtUp {
		t.Fatalf("not caught up after a query: %+v", out.Projections)
	}
	ok[StoreOut](e, "uc_store", StoreIn{Content: "one more turn", Session: "s1"})
	out, _ = ok[StatusOut](e, "uc_status", StatusIn{})
	if out.CaughtUp {
		t.Fatalf("caught up before any read saw the new event: %+v", out.Projections)
	}
}

func TestResources(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	// Empty store: auto context is empty, not an error.
	r, err := e.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: AutoContextURI})
	if err != nil || r.Contents[0].Text != "" {
		t.Fatalf("auto context of an empty store: %v %+v", err, r)
	}
	s := e.seed()
	r, err = e.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "uc://sessions/s1"})
	if err != nil {
		t.Fatal(err)
	}
	if txt := r.Contents[0].Text; !strings.Contains(txt, "# session s1") || !strings.Contains(txt, "Saturday night") || !strings.Contains(txt, s.docChunks[0]) {
		t.Fatalf("session resource: %s", txt)
	}
	r, err = e.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "uc://documents/" + s.doc})
	if err != nil {
		t.Fatal(err)
	}
	if norm(r.Contents[0].Text) != norm(longDoc()) {
		t.Fatal("document resource differs from the stored document")
	}
	// The most recently active session is s1, its last user turn the question.
	r, err = e.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: AutoContextURI})
	if err != nil {
		t.Fatal(err)
	}
	if txt := r.Contents[0].Text; !strings.Contains(txt, "Saturday night") {
		t.Fatalf("auto context: %s", txt)
	}
	for _, uri := range []string{"uc://sessions/nope", "uc://documents/nope"} {
		if _, err := e.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil || !strings.Contains(err.Error(), "not found") {
			t.Errorf("%s: want resource not found, got %v", uri, err)
		}
	}
}

func TestCallsAreLogged(t *testing.T) {
	e := newEnv(t)
	ok[StatusOut](e, "uc_status", StatusIn{})
	e.fails("uc_query", QueryIn{Query: ""}, "is empty")
	l := e.log.String()
	if !strings.Contains(l, "tool=uc_status") || !strings.Contains(l, "tool=uc_query") || !strings.Contains(l, "tool_error=") {
		t.Fatalf("log: %s", l)
	}
}

func TestHTTPHandler(t *testing.T) {
	st := initStore(t, t.TempDir())
	defer st.Close()
	srv := New(st, Options{Log: &syncBuf{}})
	if _, err := HTTPHandler(srv, ""); err != ErrNoToken {
		t.Fatalf("empty token: %v", err)
	}
	h, err := HTTPHandler(srv, "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	ts := httptest.NewServer(mux)
	defer ts.Close()
	ctx := context.Background()
	// Without the token: 401, and the SDK client fails to connect.
	resp, err := http.Post(ts.URL+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: status %d", resp.StatusCode)
	}
	for _, tok := range []string{"", "wrong"} {
		c := mcp.NewClient(&mcp.Implementation{Name: "c"}, nil)
		tr := &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{tok}}}
		if cs, err := c.Connect(ctx, tr, nil); err == nil {
			cs.Close()
			t.Fatalf("token %q: connected", tok)
		}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "c"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{"s3cret"}}}
	cs, err := c.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "uc_store", Arguments: StoreIn{Content: "over http", Session: "h"}})
	if err != nil || res.IsError {
		t.Fatalf("store over http: %v %s", err, resultText(res))
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "uc_query", Arguments: QueryIn{Query: "over http"}})
	if err != nil || res.IsError || !strings.Contains(resultText(res), "over http") {
		t.Fatalf("query over http: %v %s", err, resultText(res))
	}
}

type bearer struct{ tok string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.tok != "" {
		r.Header.Set("Authorization", "Bearer "+b.tok)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
