package test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	engine "github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/index"
	"github.com/unlimitedcontext/ucl/internal/mcpserver"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// tsClient is the official MCP TypeScript SDK client script, installed by
// `make mcp-client` (npm ci in test/mcp from the committed lockfile).
func tsClient(t testing.TB) (node, script string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("skipping: node not found (install Node.js to run the MCP client tests)")
	}
	dir, err := filepath.Abs("mcp")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Fatalf("the MCP TypeScript SDK is not installed: run `make mcp-client` (%v)", err)
	}
	return node, filepath.Join(dir, "client.mjs")
}

// tsRun is what client.mjs prints.
type tsRun struct {
	Tools     []string `json:"tools"`
	Resources []string `json:"resources"`
	Templates []string `json:"templates"`
	Stored    []struct {
		IsError bool     `json:"isError"`
		IDs     []string `json:"ids"`
		Seqs    []uint64 `json:"seqs"`
	} `json:"stored"`
	Query struct {
		IsError bool     `json:"isError"`
		IDs     []string `json:"ids"`
	} `json:"query"`
	Thread          []string `json:"thread"`
	SessionResource string   `json:"sessionResource"`
	Forget          struct {
		IsError bool     `json:"isError"`
		Removed []string `json:"removed"`
		Erasure bool     `json:"erasure"`
		Text    string   `json:"text"`
	} `json:"forget"`
	QueryAfterForget []string `json:"queryAfterForget"`
	GetForgotten     struct {
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
	} `json:"getForgotten"`
	Index struct {
		IsError bool   `json:"isError"`
		Matches int    `json:"matches"`
		Tokens  int    `json:"tokens"`
		Text    string `json:"text"`
	} `json:"index"`
	BadK struct {
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
	} `json:"badK"`
	Status struct {
		Events uint64 `json:"events"`
	} `json:"status"`
	Fixes struct {
		ToolsListBytes     int    `json:"toolsListBytes"`
		ContextDescription string `json:"contextDescription"`
		Wizard             struct {
			IsError bool   `json:"isError"`
			Text    string `json:"text"`
		} `json:"wizard"`
		IndexOverview index.Overview `json:"indexOverview"`
		ByName        struct {
			IsError bool   `json:"isError"`
			ID      string `json:"id"`
			Want    string `json:"want"`
		} `json:"byName"`
		Ambiguous struct {
			IsError bool   `json:"isError"`
			Text    string `json:"text"`
		} `json:"ambiguous"`
		Period struct {
			IDs  []string `json:"ids"`
			Want []string `json:"want"`
		} `json:"period"`
		QuerySession struct {
			IsError bool   `json:"isError"`
			Text    string `json:"text"`
		} `json:"querySession"`
		Bounded struct {
			BigBytes     int  `json:"bigBytes"`
			GetBytes     int  `json:"getBytes"`
			SessionBytes int  `json:"sessionBytes"`
			QueryBytes   int  `json:"queryBytes"`
			GetMarker    bool `json:"getMarker"`
			ReadOn       bool `json:"readOn"`
		} `json:"bounded"`
	} `json:"fixes"`
}

func runTSClient(t *testing.T, session string, args ...string) (tsRun, string) {
	t.Helper()
	node, script := tsClient(t)
	cmd := exec.Command(node, append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), "UCL_MCP_SESSION="+session)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client.mjs %v: %v\nstderr: %s", args, err, stderr.String())
	}
	var r tsRun
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("client output %q: %v\nstderr: %s", out, err, stderr.String())
	}
	return r, stderr.String()
}

// checkTSRun asserts what the TypeScript client saw of one conversation.
func checkTSRun(t *testing.T, r tsRun, session string) (q, a, f string) {
	t.Helper()
	want := "uc_consolidate uc_context uc_edit uc_forget uc_get uc_get_document uc_get_session uc_get_thread uc_index uc_list_sessions uc_period uc_profile uc_query uc_status uc_store"
	if got := strings.Join(r.Tools, " "); got != want {
		t.Fatalf("tools: %s", got)
	}
	if strings.Join(r.Resources, " ") != "uc://context/auto" || strings.Join(r.Templates, " ") != "uc://documents/{id} uc://sessions/{id}" {
		t.Fatalf("resources %v, templates %v", r.Resources, r.Templates)
	}
	if len(r.Stored) != 3 {
		t.Fatalf("stored: %+v", r.Stored)
	}
	for i, s := range r.Stored {
		if s.IsError || len(s.IDs) != 1 || len(s.Seqs) != 1 || s.Seqs[0] != uint64(i+1) {
			t.Fatalf("store %d: %+v", i, s)
		}
	}
	q, a, f = r.Stored[0].IDs[0], r.Stored[1].IDs[0], r.Stored[2].IDs[0]
	if r.Query.IsError || !has(r.Query.IDs, a) || !has(r.Query.IDs, q) {
		t.Fatalf("query hits %v miss %s or %s", r.Query.IDs, q, a)
	}
	if strings.Join(r.Thread, ",") != strings.Join([]string{q, a, f}, ",") {
		t.Fatalf("thread %v", r.Thread)
	}
	if !strings.Contains(r.SessionResource, "# session "+session) || !strings.Contains(r.SessionResource, "eu-west-3") {
		t.Fatalf("session resource: %s", r.SessionResource)
	}
	if r.Index.IsError || r.Index.Matches != 3 || r.Index.Tokens > 500 || !strings.Contains(r.Index.Text, "["+a+"]") {
		t.Fatalf("uc_index: %+v", r.Index)
	}
	if r.Forget.IsError || strings.Join(r.Forget.Removed, ",") != a || r.Forget.Erasure || !strings.Contains(r.Forget.Text, "not erasure") {
		t.Fatalf("forget: %+v", r.Forget)
	}
	if has(r.QueryAfterForget, a) {
		t.Fatalf("forgotten %s still found: %v", a, r.QueryAfterForget)
	}
	if !r.GetForgotten.IsError || !strings.Contains(r.GetForgotten.Text, a) {
		t.Fatalf("uc_get of a forgotten id: %+v", r.GetForgotten)
	}
	if !r.BadK.IsError || !strings.Contains(r.BadK.Text, "k: must be 1 to 200, got 500") {
		t.Fatalf("k=500: %+v", r.BadK)
	}
	if r.Status.Events != 4 {
		t.Fatalf("status: %d events, want 3 stores and a tombstone", r.Status.Events)
	}
	checkTSFixes(t, r)
	return q, a, f
}

// checkTSFixes asserts issue 25's MCP fixes as the TypeScript client saw
// them.
func checkTSFixes(t *testing.T, r tsRun) {
	t.Helper()
	x := r.Fixes
	if x.ToolsListBytes == 0 || x.ToolsListBytes > 12<<10 {
		t.Errorf("tools/list is %d bytes of JSON; the bound is 12 KB", x.ToolsListBytes)
	}
	if !strings.Contains(x.ContextDescription, "shown last") {
		t.Errorf("uc_context's description: %q", x.ContextDescription)
	}
	if !x.Wizard.IsError || !strings.Contains(x.Wizard.Text, `role "wizard"`) {
		t.Errorf("uc_store with role wizard: %+v", x.Wizard)
	}
	if x.IndexOverview.Later != 0 || x.IndexOverview.Today == 0 {
		t.Errorf("uc_index right after storing: %+v (what was just stored is not after now)", x.IndexOverview)
	}
	if x.ByName.IsError || x.ByName.ID == "" || x.ByName.ID != x.ByName.Want {
		t.Errorf("uc_get_document of a document without a session, by name: %+v", x.ByName)
	}
	if !x.Ambiguous.IsError || !strings.Contains(x.Ambiguous.Text, `2 items are named "notes.md"`) || !strings.Contains(x.Ambiguous.Text, x.ByName.Want) {
		t.Errorf("an ambiguous name: %+v", x.Ambiguous)
	}
	for _, id := range x.Period.Want {
		if id == "" || !has(x.Period.IDs, id) {
			t.Errorf("uc_period today misses %q (stored without a session): %v", id, x.Period.IDs)
		}
	}
	if x.QuerySession.IsError {
		t.Errorf("uc_query with session: %s", x.QuerySession.Text)
	}
	b := x.Bounded
	if b.BigBytes < 800<<10 || b.GetBytes > 80<<10 || b.SessionBytes > 80<<10 || b.QueryBytes > 80<<10 || !b.GetMarker || !b.ReadOn {
		t.Errorf("bounded results: %+v", b)
	}
}

// The official TypeScript SDK spawns the built `ucl mcp` over stdio; then
// the CLI, from a terminal, sees what the client wrote and forgot.
func TestMCPTypeScriptClientStdio(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	r, stderr := runTSClient(t, "ts-stdio", "stdio", uclBin, "mcp", "--dir", dir)
	q, a, f := checkTSRun(t, r, "ts-stdio")
	// Every call is logged on stderr (stdout is the protocol).
	if n := strings.Count(stderr, "tool=uc_"); n < 10 {
		t.Fatalf("stderr logged %d tool calls:\n%s", n, stderr)
	}
	out := must(t, dir, "", "query", "kafka brokers region", "--json")
	var ids []string
	for _, r := range jsonDoc(t, out)["results"].([]any) {
		ids = append(ids, r.(map[string]any)["id"].(string))
	}
	if !has(ids, q) || !has(ids, f) || has(ids, a) {
		t.Fatalf("ucl query after the MCP session: %v (want %s and %s, not the forgotten %s)", ids, q, f, a)
	}
}

// The same client over streamable HTTP (stateless), through the handler
// `ucl serve` mounts, with its bearer token.
func TestMCPTypeScriptClientHTTP(t *testing.T) {
	t.Parallel()
	st, err := engine.Init(filepath.Join(t.TempDir(), "store"), engine.InitOptions{Durability: log.None})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var logs strings.Builder
	h, err := mcpserver.HTTPHandler(mcpserver.New(st, mcpserver.Options{Log: &lockedWriter{w: &logs}}), "tok-123")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	r, _ := runTSClient(t, "ts-http", "http", srv.URL+"/mcp", "tok-123")
	checkTSRun(t, r, "ts-http")
	// A wrong token: the client cannot even initialize, and nothing is written.
	node, script := tsClient(t)
	if out, err := exec.Command(node, script, "http", srv.URL+"/mcp", "wrong").CombinedOutput(); err == nil {
		t.Fatalf("wrong token accepted: %s", out)
	} else if !strings.Contains(string(out), "401") {
		t.Logf("wrong token output: %s", out)
	}
	// 8: the conversation's 3 stores and tombstone, then checkTSFixes's 4
	// stores (the wizard's was refused).
	if s, err := st.Status(context.Background(), engine.StatusRequest{}); err != nil || s.Events != 8 {
		t.Fatalf("events after a refused client: %v %+v", err, s)
	}
}

// lockedWriter serialises writes from the server's goroutines (or a
// process's output copier) with reads of what was written.
type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// String returns what was written so far.
func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

// mcpProc is a `ucl mcp` process with a Go SDK client attached.
type mcpProc struct {
	cs     *mcp.ClientSession
	cmd    *exec.Cmd
	stderr *os.File
}

func startMCP(t testing.TB, dir string) *mcpProc {
	t.Helper()
	cmd := exec.Command(uclBin, "mcp", "--dir", dir)
	cmd.Env = append(os.Environ(), "UCL_VAULT_KEY=")
	errf, err := os.CreateTemp(t.TempDir(), "mcp-stderr-")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = errf
	c := mcp.NewClient(&mcp.Implementation{Name: "editor", Version: "v0"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &mcpProc{cs: cs, cmd: cmd, stderr: errf}
}

func (p *mcpProc) log(t testing.TB) string {
	b, err := os.ReadFile(p.stderr.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func callOK[T any](t testing.TB, p *mcpProc, name string, args any) T {
	t.Helper()
	res, err := p.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s: tool error: %v\nserver log: %s", name, res.Content[0].(*mcp.TextContent).Text, p.log(t))
	}
	var out T
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func hitIDs(hits []mcpserver.Hit) []string {
	var ids []string
	for _, h := range hits {
		ids = append(ids, h.ID)
	}
	return ids
}

// Two editors (two `ucl mcp` processes) and a terminal on one store: one
// owns it, the other and the CLI attach; all see each other's writes; when
// the owner exits, the other editor takes over and loses nothing.
func TestMCPTwoEditorsAndTerminal(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	a := startMCP(t, dir)
	b := startMCP(t, dir)
	defer b.cs.Close()
	sa := callOK[mcpserver.StoreOut](t, a, "uc_store", mcpserver.StoreIn{Content: "Editor A notes the flaky integration test in payments.", Session: "ed-a"})
	sb := callOK[mcpserver.StoreOut](t, b, "uc_store", mcpserver.StoreIn{Content: "Editor B notes the payments retry budget is three.", Session: "ed-b"})
	must(t, dir, "Terminal notes the payments dashboard moved.", "store", "--session", "term")
	for _, p := range []*mcpProc{a, b} {
		q := callOK[mcpserver.QueryOut](t, p, "uc_query", mcpserver.QueryIn{Query: "payments notes", K: 10})
		ids := hitIDs(q.Hits)
		if !has(ids, sa.IDs[0]) || !has(ids, sb.IDs[0]) || len(ids) != 3 {
			t.Fatalf("an editor does not see every write: %v", ids)
		}
	}
	out := must(t, dir, "", "query", "payments notes", "--json")
	if !strings.Contains(out, sa.IDs[0]) || !strings.Contains(out, sb.IDs[0]) {
		t.Fatalf("the terminal does not see the editors' writes: %s", out)
	}
	owners := 0
	for _, p := range []*mcpProc{a, b} {
		if strings.Contains(p.log(t), "owns the store") {
			owners++
		}
		// Bad arguments are tool errors whether the editor owns the store
		// or reaches it over the socket (the engine's errors keep their
		// identity across it).
		res, err := p.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "uc_get_session", Arguments: mcpserver.SessionIn{Session: "nope"}})
		if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `no session "nope"`) {
			t.Fatalf("unknown session: %v %+v", err, res)
		}
		res, err = p.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "uc_get", Arguments: mcpserver.GetIn{IDs: []string{sa.IDs[0], "nope"}}})
		if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `no item with id "nope"`) {
			t.Fatalf("unknown id: %v %+v", err, res)
		}
	}
	if owners != 1 {
		t.Fatalf("%d owners:\nA: %s\nB: %s", owners, a.log(t), b.log(t))
	}
	// The first editor quits; the second carries on (taking over if it was
	// attached) and everything acknowledged is there.
	if err := a.cs.Close(); err != nil {
		t.Logf("close A: %v", err)
	}
	s := callOK[mcpserver.SessionOut](t, b, "uc_get_session", mcpserver.SessionIn{Session: "ed-a"})
	if len(s.Items) != 1 || s.Items[0].ID != sa.IDs[0] {
		t.Fatalf("after A quit: %+v", s)
	}
	callOK[mcpserver.StoreOut](t, b, "uc_store", mcpserver.StoreIn{Content: "Editor B continues alone.", Session: "ed-b"})
	out = must(t, dir, "", "query", "continues alone", "--json")
	if !strings.Contains(out, "continues alone") {
		t.Fatalf("terminal after the takeover: %s", out)
	}
	// A third editor attaches to B; B is killed with -9 (its socket stays
	// behind); the third editor's next call takes over.
	c := startMCP(t, dir)
	defer c.cs.Close()
	callOK[mcpserver.StatusOut](t, c, "uc_status", mcpserver.StatusIn{})
	if !strings.Contains(b.log(t), "owns the store") || strings.Contains(c.log(t), "owns the store") {
		t.Fatalf("B should own and C attach:\nB: %s\nC: %s", b.log(t), c.log(t))
	}
	if err := b.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// The SDK's transport owns cmd.Wait (a second Wait races it); closing
	// the session waits for the killed process to be reaped.
	_ = b.cs.Close()
	got := callOK[mcpserver.QueryOut](t, c, "uc_query", mcpserver.QueryIn{Query: "payments continues alone notes", K: 10})
	if len(got.Hits) != 4 {
		t.Fatalf("after kill -9 of the owner: %d hits, want the 4 items stored: %v", len(got.Hits), hitIDs(got.Hits))
	}
	if !strings.Contains(c.log(t), "owns the store") {
		t.Fatalf("C did not take over: %s", c.log(t))
	}
}

func has(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// BenchmarkMCPRoundTrip measures, on one store of N chunks (Zipf-vocabulary
// text, like the query benchmarks): the wall time of a `ucl query` process
// (no owner running), and the round trip of uc_query and uc_store through a
// running `ucl mcp` over stdio. N is 10K, and 100K with UCL_BENCH_100K=1.
func BenchmarkMCPRoundTrip(b *testing.B) {
	sizes := []int{10_000}
	if os.Getenv("UCL_BENCH_100K") != "" {
		sizes = append(sizes, 100_000)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("chunks=%d", n), func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "store")
			must(b, dir, "", "init", "--durability", "none")
			var jsonl strings.Builder
			for _, ev := range projtest.Generate(projtest.Config{Seed: 7, N: n, StoresOnly: true, Vocab: 30000}) {
				s := ev.Store()
				line, err := json.Marshal(map[string]any{"session": s.Session, "role": s.Role, "kind": s.Kind.String(),
					"content": s.Content, "time": s.Time})
				if err != nil {
					b.Fatal(err)
				}
				jsonl.Write(line)
				jsonl.WriteByte('\n')
			}
			must(b, dir, jsonl.String(), "append")
			must(b, dir, "", "project") // build the projections once, outside the timings
			r := rand.New(rand.NewSource(99))
			queries := make([]string, 30)
			for i := range queries {
				queries[i] = projtest.QueryText(r)
			}
			var cli []time.Duration
			for _, q := range queries[:5] {
				start := time.Now()
				must(b, dir, "", "query", q, "--k", "10")
				cli = append(cli, time.Since(start))
			}
			p := startMCP(b, dir)
			defer p.cs.Close()
			callOK[mcpserver.QueryOut](b, p, "uc_query", mcpserver.QueryIn{Query: queries[0]}) // warm
			var mq, ms []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for _, q := range queries {
					start := time.Now()
					callOK[mcpserver.QueryOut](b, p, "uc_query", mcpserver.QueryIn{Query: q, K: 10})
					mq = append(mq, time.Since(start))
				}
				for j := 0; j < 20; j++ {
					start := time.Now()
					callOK[mcpserver.StoreOut](b, p, "uc_store", mcpserver.StoreIn{Content: projtest.TextZipf(r, 40, 30000), Session: "bench", Role: "user"})
					ms = append(ms, time.Since(start))
				}
			}
			b.StopTimer()
			cliP50, mqP50 := pct(cli, 0.5), pct(mq, 0.5)
			b.ReportMetric(cliP50, "cli-query-p50-ms")
			b.ReportMetric(mqP50, "mcp-query-p50-ms")
			b.ReportMetric(pct(mq, 0.99), "mcp-query-p99-ms")
			b.ReportMetric(pct(ms, 0.5), "mcp-store-p50-ms")
			b.ReportMetric(pct(ms, 0.99), "mcp-store-p99-ms")
			if mqP50 > 0 {
				b.ReportMetric(cliP50/mqP50, "cli/mcp-query")
			}
		})
	}
}

func pct(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[int(q*float64(len(s)-1))].Microseconds()) / 1000
}
