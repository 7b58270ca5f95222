package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/internal/textutil"
	"github.com/unlimitedcontext/ucl/log"
)

const (
	testToken = "test-token-0123456789abcdef"
	upKey     = "sk-upstream-SECRET-never-shown-42"
	// wait bounds a step that would otherwise hang forever on a bug; it
	// is a failure guard, not a speed assertion.
	wait = 2 * time.Minute
)

var (
	walletOnce sync.Once
	wallet     *arweave.Wallet
)

// countingAPI records the appends going through the engine.
type countingAPI struct {
	ucl.API
	mu      sync.Mutex
	appends []ucl.AppendRequest
}

func (c *countingAPI) Append(ctx context.Context, req ucl.AppendRequest) (*ucl.AppendResult, error) {
	c.mu.Lock()
	c.appends = append(c.appends, req)
	c.mu.Unlock()
	return c.API.Append(ctx, req)
}

func (c *countingAPI) appendCalls() []ucl.AppendRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]ucl.AppendRequest(nil), c.appends...)
}

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
	api   *countingAPI
	srv   *httptest.Server
	logs  *syncBuf
}

func newStore(t *testing.T) *ucl.Store {
	t.Helper()
	walletOnce.Do(func() {
		var err error
		if wallet, _, err = arweave.GenerateWallet(); err != nil {
			panic(err)
		}
	})
	st, err := ucl.Init(t.TempDir(), ucl.InitOptions{Durability: log.None, Wallet: wallet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
	return st
}

func newEnv(t *testing.T, o Options) *env {
	t.Helper()
	st := newStore(t)
	e := &env{t: t, store: st, api: &countingAPI{API: st}, logs: &syncBuf{}}
	o.Token = testToken
	o.Log = e.logs
	if o.UpstreamKey == "" {
		o.UpstreamKey = upKey
	}
	s, err := New(e.api, o)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(s.Handler())
	t.Cleanup(e.srv.Close)
	return e
}

func (e *env) do(method, path, ctype string, body []byte, hdr ...string) (*http.Response, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp, b
}

func (e *env) post(path string, v any, hdr ...string) (*http.Response, []byte) {
	e.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.do(http.MethodPost, path, "application/json", b, hdr...)
}

// wantError checks an error answer's status and code.
func wantError(t *testing.T, resp *http.Response, body []byte, status int, code string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d; body %s", resp.StatusCode, status, body)
	}
	var e apiError
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Code != code || e.Error.Message == "" {
		t.Fatalf("body %s: want error code %q with a message (%v)", body, code, err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type %q", ct)
	}
}

func decode[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v
}

func TestEveryRouteNeedsTheToken(t *testing.T) {
	mcpReached := false
	e := newEnv(t, Options{MCP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { mcpReached = true })})
	routes := [][2]string{
		{"GET", "/v1/health"}, {"GET", "/v1/status"}, {"POST", "/v1/store"}, {"POST", "/v1/append"},
		{"POST", "/v1/query"}, {"POST", "/v1/context"}, {"GET", "/v1/sessions"}, {"GET", "/v1/sessions/s1"},
		{"GET", "/v1/documents/d1"}, {"POST", "/v1/tombstone"}, {"POST", "/v1/chat/completions"},
		{"POST", "/v1/items/m1/edit"}, {"GET", "/v1/items/m1/thread"},
		{"GET", "/v1/models"}, {"POST", "/mcp"}, {"GET", "/nope"},
	}
	for _, rt := range routes {
		for _, auth := range []string{"", "Bearer wrong", "Bearer " + testToken + "x", "Basic " + testToken, testToken} {
			req, _ := http.NewRequest(rt[0], e.srv.URL+rt[1], strings.NewReader(`{}`))
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			wantError(t, resp, b, http.StatusUnauthorized, "unauthorized")
			if resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s %s: no WWW-Authenticate", rt[0], rt[1])
			}
		}
	}
	if mcpReached {
		t.Fatal("an unauthenticated request reached /mcp")
	}
	if n := len(e.api.appendCalls()); n != 0 {
		t.Fatalf("%d appends without a token", n)
	}
	resp, _ := e.do("POST", "/mcp", "application/json", []byte(`{}`))
	if resp.StatusCode != 200 || !mcpReached {
		t.Fatalf("/mcp with the token: %d, reached %v", resp.StatusCode, mcpReached)
	}
	if _, err := New(e.api, Options{}); err != ErrNoToken {
		t.Fatalf("New without a token: %v", err)
	}
}

func TestREST(t *testing.T) {
	e := newEnv(t, Options{MaxBodyBytes: 64 << 10})

	resp, b := e.do("GET", "/v1/health", "", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"ok":true`) {
		t.Fatalf("health: %d %s", resp.StatusCode, b)
	}

	// store (JSON) and append (JSONL and JSON)
	resp, b = e.post("/v1/store", ucl.RememberRequest{Content: "Momo the cat sleeps on the red sofa", Session: "s1", ID: "k1"})
	if resp.StatusCode != 200 || len(decode[ucl.AppendResult](t, b).Results) != 1 {
		t.Fatalf("store: %d %s", resp.StatusCode, b)
	}
	jsonl := `{"session":"s1","role":"assistant","content":"Noted: the sofa is red."}
{"kind":"document","content":"Quarterly report: revenue grew by 12 percent","chunk_id":"doc1-0","meta":{"name":"report"}}
`
	resp, b = e.do("POST", "/v1/append", "application/x-ndjson", []byte(jsonl))
	if resp.StatusCode != 200 || len(decode[ucl.AppendResult](t, b).Results) != 2 {
		t.Fatalf("append JSONL: %d %s", resp.StatusCode, b)
	}
	resp, b = e.post("/v1/append", ucl.AppendRequest{JSONL: `{"session":"s2","content":"second session turn"}`})
	if resp.StatusCode != 200 || len(decode[ucl.AppendResult](t, b).Results) != 1 {
		t.Fatalf("append JSON: %d %s", resp.StatusCode, b)
	}

	// reads: the CLI's --json shapes
	resp, b = e.post("/v1/query", ucl.SearchRequest{Text: "where does the cat sleep"})
	q := decode[ucl.SearchResult](t, b)
	if resp.StatusCode != 200 || len(q.Results) == 0 || !strings.Contains(q.Results[0].Content, "Momo") {
		t.Fatalf("query: %d %s", resp.StatusCode, b)
	}
	resp, b = e.post("/v1/context", ucl.ContextRequest{SearchRequest: ucl.SearchRequest{Text: "revenue"}, Budget: 300})
	c := decode[ucl.ContextResult](t, b)
	if resp.StatusCode != 200 || !strings.Contains(c.Context, "12 percent") || c.Tokens > 300 {
		t.Fatalf("context: %d %s", resp.StatusCode, b)
	}
	resp, b = e.post("/v1/index", ucl.IndexRequest{Query: "cat", Budget: 300, Now: "2024-01-01"})
	ix := decode[ucl.IndexResult](t, b)
	if resp.StatusCode != 200 || ix.Matches == 0 || ix.Tokens > 300 || !strings.Contains(ix.Text, "Momo") {
		t.Fatalf("index: %d %s", resp.StatusCode, b)
	}
	resp, b = e.do("GET", "/v1/sessions?limit=1", "", nil)
	if ss := decode[ucl.SessionsResult](t, b); resp.StatusCode != 200 || len(ss.Sessions) != 1 {
		t.Fatalf("sessions: %d %s", resp.StatusCode, b)
	}
	resp, b = e.do("GET", "/v1/sessions/s1?offset=1", "", nil)
	if s := decode[ucl.SessionResult](t, b); resp.StatusCode != 200 || s.Total != 2 || len(s.Chunks) != 1 || s.Chunks[0].Role != "assistant" {
		t.Fatalf("session: %d %s", resp.StatusCode, b)
	}
	resp, b = e.do("GET", "/v1/sessions/s1?last=1", "", nil)
	if s := decode[ucl.SessionResult](t, b); resp.StatusCode != 200 || s.Total != 2 || len(s.Chunks) != 1 || s.Chunks[0].Role != "assistant" {
		t.Fatalf("session last=1: %d %s", resp.StatusCode, b)
	}
	resp, b = e.do("GET", "/v1/documents/doc1-0", "", nil)
	if d := decode[ucl.GetItem](t, b); resp.StatusCode != 200 || !d.Found || len(d.Chunks) != 1 {
		t.Fatalf("document: %d %s", resp.StatusCode, b)
	}
	resp, b = e.do("GET", "/v1/status", "", nil)
	if s := decode[ucl.StatusResult](t, b); resp.StatusCode != 200 || s.HeadSeq != 4 {
		t.Fatalf("status: %d %s", resp.StatusCode, b)
	}
	resp, b = e.post("/v1/tombstone", ucl.TombstoneRequest{Chunks: []string{"doc1-0"}, Reason: "test"})
	if tr := decode[ucl.TombstoneResult](t, b); resp.StatusCode != 200 || len(tr.Removed) != 1 {
		t.Fatalf("tombstone: %d %s", resp.StatusCode, b)
	}

	// errors
	cases := []struct {
		name         string
		method, path string
		ctype        string
		body         string
		status       int
		code         string
	}{
		{"bad JSON", "POST", "/v1/store", "application/json", `{"content":`, 400, "bad_request"},
		{"unknown field", "POST", "/v1/store", "application/json", `{"content":"x","sesion":"s"}`, 400, "bad_request"},
		{"empty content", "POST", "/v1/store", "application/json", `{"content":"  "}`, 400, "bad_request"},
		{"bad kind", "POST", "/v1/store", "application/json", `{"content":"x","kind":"poem"}`, 400, "bad_request"},
		{"bad JSONL", "POST", "/v1/append", "text/plain", "{\"content\":\"ok\"}\n{\"content\":1}\n", 400, "bad_request"},
		{"empty JSONL", "POST", "/v1/append", "text/plain", "\n\n", 400, "bad_request"},
		{"empty query", "POST", "/v1/query", "application/json", `{"text":""}`, 400, "bad_request"},
		{"bad mode", "POST", "/v1/query", "application/json", `{"text":"x","mode":"psychic"}`, 400, "bad_request"},
		{"negative budget", "POST", "/v1/context", "application/json", `{"text":"x","budget":-1}`, 400, "bad_request"},
		{"index budget too small", "POST", "/v1/index", "application/json", `{"budget":10}`, 400, "bad_request"},
		{"no targets", "POST", "/v1/tombstone", "application/json", `{}`, 400, "bad_request"},
		{"bad limit", "GET", "/v1/sessions?limit=-2", "", ``, 400, "bad_request"},
		{"last with offset", "GET", "/v1/sessions/s1?last=1&offset=1", "", ``, 400, "bad_request"},
		{"id conflict", "POST", "/v1/store", "application/json", `{"content":"other content","session":"s1","id":"k1"}`, 409, "conflict"},
		{"no session", "GET", "/v1/sessions/nope", "", ``, 404, "not_found"},
		{"no document", "GET", "/v1/documents/nope", "", ``, 404, "not_found"},
		{"tombstoned document", "GET", "/v1/documents/doc1-0", "", ``, 404, "not_found"},
		{"forget a missing document", "POST", "/v1/tombstone", "application/json", `{"documents":["nope"]}`, 404, "not_found"},
		{"forget a missing chunk", "POST", "/v1/tombstone", "application/json", `{"chunks":["deadbeef"]}`, 404, "not_found"},
		{"forget a missing session", "POST", "/v1/tombstone", "application/json", `{"session":"nosuch"}`, 404, "not_found"},
		{"unknown route", "GET", "/v2/whatever", "", ``, 404, "not_found"},
		{"wrong method", "GET", "/v1/store", "", ``, 405, "method_not_allowed"},
		{"wrong method on a path with an id", "DELETE", "/v1/sessions/s1", "", ``, 405, "method_not_allowed"},
		{"no upstream", "POST", "/v1/chat/completions", "application/json", `{"messages":[{"role":"user","content":"hi"}]}`, 503, "no_upstream"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := e.do(tc.method, tc.path, tc.ctype, []byte(tc.body))
			wantError(t, resp, b, tc.status, tc.code)
		})
	}
	// Nothing of the refused requests was written.
	resp, b = e.do("GET", "/v1/status", "", nil)
	if s := decode[ucl.StatusResult](t, b); s.HeadSeq != 5 {
		t.Fatalf("head %d after the refused requests, want 5", s.HeadSeq)
	}
}

// hugeReply is the length of the "huge-stream" reply.
const hugeReply = 16 << 20

// TestProxyHugeReplyStoredTruncated: a reply far over the store's event
// bound reaches the client whole, and is stored as its first bytes and a
// marker saying how much it had (it was stored whole, as one 16 MB event).
func TestProxyHugeReplyStoredTruncated(t *testing.T) {
	up := newUpstream(t, "huge-stream")
	e := newEnv(t, Options{Upstream: up.srv.URL + "/v1"})
	resp, b := e.do("POST", "/v1/chat/completions", "application/json", chatBody(t, true, "user", "Write a lot."), SessionHeader, "huge")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %.200s", resp.StatusCode, b)
	}
	got := 0
	for _, ev := range strings.Split(string(b), "\n\n") {
		var c struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		if d, ok := strings.CutPrefix(ev, "data: "); ok && json.Unmarshal([]byte(d), &c) == nil && len(c.Choices) > 0 {
			got += len(c.Choices[0].Delta.Content)
		}
	}
	if got != hugeReply {
		t.Fatalf("the client got %d bytes of content, want %d", got, hugeReply)
	}
	res, err := e.store.Session(context.Background(), ucl.SessionRequest{ID: "huge"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Chunks) != 3 {
		t.Fatalf("%d chunks stored, want user, assistant, tool call", len(res.Chunks))
	}
	reply := res.Chunks[1].Content
	marker := fmt.Sprintf(truncatedMarker, maxStoredText, hugeReply)
	if len(reply) > log.MaxEventSize || !strings.HasSuffix(reply, marker) || !strings.HasPrefix(reply, "word word ") {
		t.Fatalf("stored reply: %d bytes, ends %q; want at most %d ending %q", len(reply), reply[max(0, len(reply)-80):], log.MaxEventSize, marker)
	}
	call := res.Chunks[2].Tool
	if call == nil || len(call.Args) > log.MaxEventSize || !strings.Contains(call.Args, "[ucl: truncated: the first") {
		t.Fatalf("stored tool call %+v", call)
	}
}

// TestRESTStoreTooLarge: one conversation turn over the event bound is
// refused with 413 and a message that says what to do; nothing is stored.
func TestRESTStoreTooLarge(t *testing.T) {
	e := newEnv(t, Options{})
	resp, b := e.post("/v1/store", ucl.RememberRequest{Content: strings.Repeat("x ", log.MaxEventSize/2+1), Session: "s"})
	wantError(t, resp, b, 413, "too_large")
	if !strings.Contains(string(b), "document") {
		t.Fatalf("no hint: %s", b)
	}
	jsonl, _ := json.Marshal(map[string]string{"session": "s", "content": strings.Repeat("y ", log.MaxEventSize/2+1)})
	resp, b = e.do("POST", "/v1/append", "application/x-ndjson", jsonl)
	wantError(t, resp, b, 413, "too_large")
	// As a document it is chunked and stored.
	resp, b = e.post("/v1/store", ucl.RememberRequest{Content: strings.Repeat("x ", log.MaxEventSize/2+1), Session: "s", Kind: "document"})
	if resp.StatusCode != 200 {
		t.Fatalf("document: %d %.300s", resp.StatusCode, b)
	}
	// A document over the document bound is refused whole, by store and
	// by append, saying to split it.
	over := strings.Repeat("z ", log.MaxDocumentSize/2+1)
	resp, b = e.post("/v1/store", ucl.RememberRequest{Content: over, Session: "s", Kind: "document"})
	wantError(t, resp, b, 413, "too_large")
	if !strings.Contains(string(b), "several documents") {
		t.Fatalf("no hint for a document too large: %.300s", b)
	}
	jsonl, _ = json.Marshal(map[string]string{"session": "s", "kind": "document", "content": over})
	resp, b = e.do("POST", "/v1/append", "application/x-ndjson", jsonl)
	wantError(t, resp, b, 413, "too_large")
	if !strings.Contains(string(b), "several documents") {
		t.Fatalf("no hint for a document too large (append): %.300s", b)
	}
}

func TestTooLarge(t *testing.T) {
	e := newEnv(t, Options{MaxBodyBytes: 4096, Upstream: "http://127.0.0.1:1/v1"})
	big := `{"content":"` + strings.Repeat("a", 8000) + `"}`
	// Declared length over the cap: refused before reading.
	resp, b := e.do("POST", "/v1/store", "application/json", []byte(big))
	wantError(t, resp, b, 413, "too_large")
	// Chunked body with no declared length: cut at the cap.
	req, _ := http.NewRequest("POST", e.srv.URL+"/v1/append", io.MultiReader(strings.NewReader(big), strings.NewReader("\n")))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.ContentLength = -1
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := io.ReadAll(r2.Body)
	r2.Body.Close()
	wantError(t, r2, b2, 413, "too_large")
	resp, b = e.post("/v1/chat/completions", map[string]any{"messages": []any{map[string]string{"role": "user", "content": strings.Repeat("b", 8000)}}})
	wantError(t, resp, b, 413, "too_large")
	if n := len(e.api.appendCalls()); n != 0 {
		t.Fatalf("%d appends", n)
	}
}

func TestToken(t *testing.T) {
	dir := t.TempDir()
	tok, err := LoadToken(dir)
	if err != nil || len(tok) != 64 {
		t.Fatalf("LoadToken: %q %v", tok, err)
	}
	fi, err := os.Stat(TokenPath(dir))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode: %v %v", fi.Mode(), err)
	}
	again, err := LoadToken(dir)
	if err != nil || again != tok {
		t.Fatalf("second LoadToken: %q %v", again, err)
	}
	rot, err := RotateToken(dir)
	if err != nil || rot == tok {
		t.Fatalf("rotate: %q %v", rot, err)
	}
	if got, _ := LoadToken(dir); got != rot {
		t.Fatal("rotated token not loaded")
	}
	if err := os.WriteFile(TokenPath(dir), []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadToken(dir); err == nil || !strings.Contains(err.Error(), "token") {
		t.Fatalf("short token file: %v", err)
	}
}

// --- the proxy ---

type recorded struct {
	path   string
	header http.Header
	body   []byte
}

// fakeUpstream is an OpenAI-compatible server that records what it gets.
type fakeUpstream struct {
	mu   sync.Mutex
	reqs []recorded
	mode string // plain, stream, tools, error, hang
	// gate, when set, makes a stream wait for a value before each chunk
	// after the first.
	gate    chan struct{}
	srv     *httptest.Server
	handled chan struct{}
}

const (
	plainReply = "The sofa is red, and Momo sleeps there."
	errorBody  = `{"error":{"message":"The server had an error","type":"server_error"}}`
)

var streamParts = []string{"The sofa ", "is red", ", and Momo sleeps there."}

func newUpstream(t *testing.T, mode string) *fakeUpstream {
	u := &fakeUpstream{mode: mode, handled: make(chan struct{}, 100)}
	u.srv = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *fakeUpstream) requests() []recorded {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]recorded(nil), u.reqs...)
}

func (u *fakeUpstream) serve(w http.ResponseWriter, r *http.Request) {
	defer func() { u.handled <- struct{}{} }()
	b, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.reqs = append(u.reqs, recorded{r.URL.Path, r.Header.Clone(), b})
	mode := u.mode
	u.mu.Unlock()
	if r.URL.Path == "/v1/models" {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"fake-model","object":"model"}]}`)
		return
	}
	switch mode {
	case "error":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req-500")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, errorBody)
	case "hang":
		<-r.Context().Done()
	case "plain":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"fake-model","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, plainReply)
	case "tools":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-2","object":"chat.completion","created":1,"model":"fake-model","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}]}`)
	case "truncated":
		// A stream that breaks off: chunks, then no [DONE].
		w.Header().Set("Content-Type", "text/event-stream")
		for _, p := range streamParts[:2] {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", p)
		}
		io.WriteString(w, "data: {\"choices\":[{\"ind")
	case "stall":
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", streamParts[0])
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	case "huge-event":
		// One event of 3·maxSSEEvent: the last third only after the gate.
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"")
		chunk := strings.Repeat("x", 64<<10)
		for n := 0; n < 3*maxSSEEvent; n += len(chunk) {
			if n == 2*maxSSEEvent+len(chunk) {
				w.(http.Flusher).Flush()
				select {
				case <-u.gate:
				case <-r.Context().Done():
					return
				}
			}
			io.WriteString(w, chunk)
		}
		io.WriteString(w, "\"}}]}\n\ndata: [DONE]\n\n")
	case "huge-stream":
		// A 16 MiB reply in 64 KiB deltas, and a tool call whose
		// arguments are 2 MiB.
		w.Header().Set("Content-Type", "text/event-stream")
		part := strings.Repeat("word ", 64<<10/5)
		for n := 0; n < hugeReply; n += len(part) {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", part[:min(len(part), hugeReply-n)])
		}
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":\\\"\"}}]}}]}\n\n")
		for i := 0; i < 32; i++ {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":%q}}]}}]}\n\n", part)
		}
		io.WriteString(w, "data: [DONE]\n\n")
	case "stream", "stream-tools":
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		send := func(i int, delta string) bool {
			if i > 0 && u.gate != nil {
				select {
				case <-u.gate:
				case <-r.Context().Done():
					return false
				}
			}
			fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-3\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"fake-model\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", delta)
			fl.Flush()
			return true
		}
		deltas := []string{}
		for _, p := range streamParts {
			deltas = append(deltas, fmt.Sprintf(`{"content":%q}`, p))
		}
		if mode == "stream-tools" {
			deltas = append(deltas,
				`{"tool_calls":[{"index":0,"id":"call_9","type":"function","function":{"name":"lookup","arguments":""}}]}`,
				`{"tool_calls":[{"index":0,"function":{"arguments":"{\"q\":"}}]}`,
				`{"tool_calls":[{"index":0,"function":{"arguments":"\"sofa\"}"}}]}`)
		}
		for i, d := range deltas {
			if !send(i, d) {
				return
			}
		}
		if u.gate != nil {
			select {
			case <-u.gate:
			case <-r.Context().Done():
				return
			}
		}
		io.WriteString(w, "data: [DONE]\n\n")
		fl.Flush()
	}
}

func chatBody(t *testing.T, stream bool, msgs ...string) []byte {
	t.Helper()
	// Spacing and key order as a client might send them: the proxy must
	// keep every byte of it.
	var b strings.Builder
	b.WriteString("{\n  \"model\": \"fake-model\",\n  \"temperature\": 0.25,\n  \"messages\": [")
	for i := 0; i+1 < len(msgs); i += 2 {
		if i > 0 {
			b.WriteString(", ")
		}
		m, _ := json.Marshal(map[string]string{"role": msgs[i], "content": msgs[i+1]})
		b.Write(m)
	}
	b.WriteString("],\n  \"tools\": [{\"type\":\"function\",\"function\":{\"name\":\"lookup\",\"parameters\":{\"type\":\"object\"}}}]")
	if stream {
		b.WriteString(",\n  \"stream\": true")
	}
	b.WriteString("\n}")
	return []byte(b.String())
}

// injected splits a forwarded body into the injected system message and
// the body without it.
func injected(t *testing.T, sent, forwarded []byte) (memory string, rest []byte) {
	t.Helper()
	var fw struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(forwarded, &fw); err != nil {
		t.Fatalf("forwarded body is not JSON: %v\n%s", err, forwarded)
	}
	for _, m := range fw.Messages {
		var msg struct{ Role, Content string }
		json.Unmarshal(m, &msg)
		if msg.Role == "system" && strings.HasPrefix(msg.Content, memoryPreamble) {
			i := bytes.Index(forwarded, m)
			cut := append([]byte(nil), forwarded[:i]...)
			tail := forwarded[i+len(m):]
			if len(tail) > 0 && tail[0] == ',' {
				tail = tail[1:]
			} else if cut[len(cut)-1] == ',' {
				cut = cut[:len(cut)-1]
			}
			return msg.Content, append(cut, tail...)
		}
	}
	return "", forwarded
}

func seedSession(t *testing.T, e *env, session string, turns ...string) {
	t.Helper()
	var b strings.Builder
	for i := 0; i+1 < len(turns); i += 2 {
		l, _ := json.Marshal(map[string]any{"session": session, "role": turns[i], "content": turns[i+1], "time": fmt.Sprint(1_700_000_000_000 + i*1000)})
		b.Write(l)
		b.WriteByte('\n')
	}
	if _, err := e.store.Append(context.Background(), ucl.AppendRequest{JSONL: b.String()}); err != nil {
		t.Fatal(err)
	}
}

func sessionTurns(t *testing.T, e *env, session string) []string {
	t.Helper()
	res, err := e.store.Session(context.Background(), ucl.SessionRequest{ID: session})
	if err != nil {
		return nil
	}
	var out []string
	for _, c := range res.Chunks {
		content := c.Content
		if c.Tool != nil { // a tool call: its name, arguments and status, then its result
			content = fmt.Sprintf("%s %s [%s] %s", c.Tool.Name, c.Tool.Args, c.Tool.Status, c.Content)
		}
		out = append(out, c.Kind.String()+"/"+c.Role+": "+content)
	}
	return out
}

func TestProxyInjectsMemoryAndStoresTheExchange(t *testing.T) {
	up := newUpstream(t, "plain")
	e := newEnv(t, Options{Upstream: up.srv.URL + "/v1", MaxContextTokens: 400})
	seedSession(t, e, "chat-1",
		"user", "My cat is called Momo and she is grey.",
		"assistant", "Momo sounds lovely.",
		"user", "We bought a red sofa last week.",
		"assistant", "Red sofas are cheerful.")
	if _, err := e.store.Remember(context.Background(), ucl.RememberRequest{Content: "Momo sleeps on the sofa every afternoon.", Kind: "knowledge"}); err != nil {
		t.Fatal(err)
	}
	appendsBefore := len(e.api.appendCalls())

	// The client carries the last exchange itself: it must not come back
	// as memory.
	sent := chatBody(t, false,
		"system", "You are terse.",
		"user", "We bought a red sofa last week.",
		"assistant", "Red sofas are cheerful.",
		"user", "Where does Momo sleep?")
	resp, b := e.do("POST", "/v1/chat/completions", "application/json", sent, SessionHeader, "chat-1", "OpenAI-Organization", "org-1")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if !strings.Contains(string(b), plainReply) || resp.Header.Get(SessionHeader) != "chat-1" {
		t.Fatalf("reply %s / headers %v", b, resp.Header)
	}
	reqs := up.requests()
	if len(reqs) != 1 || reqs[0].path != "/v1/chat/completions" {
		t.Fatalf("upstream got %+v", reqs)
	}
	got := reqs[0]
	mem, rest := injected(t, sent, got.body)
	if !bytes.Equal(rest, sent) {
		t.Fatalf("forwarded body minus the memory differs from what the client sent:\nsent %s\nrest %s", sent, rest)
	}
	for _, want := range []string{"My cat is called Momo", "Momo sounds lovely", "sleeps on the sofa every afternoon"} {
		if !strings.Contains(mem, want) {
			t.Errorf("memory lacks %q:\n%s", want, mem)
		}
	}
	for _, carried := range []string{"We bought a red sofa", "Red sofas are cheerful"} {
		if strings.Contains(mem, carried) {
			t.Errorf("memory repeats the carried turn %q:\n%s", carried, mem)
		}
	}
	if n := textutil.EstimateTokens(mem); n > 400 || fmt.Sprint(n) != resp.Header.Get("X-UCL-Context-Tokens") {
		t.Errorf("memory of %d tokens (header %s), budget 400", n, resp.Header.Get("X-UCL-Context-Tokens"))
	}
	// The system message comes after the client's own system prompt.
	var fw struct {
		Messages []struct{ Role, Content string }
	}
	json.Unmarshal(got.body, &fw)
	if fw.Messages[0].Content != "You are terse." || fw.Messages[1].Role != "system" || fw.Messages[2].Role != "user" {
		t.Errorf("message order: %+v", fw.Messages)
	}
	// Headers: the upstream key replaces the client's token; others pass.
	if a := got.header.Get("Authorization"); a != "Bearer "+upKey {
		t.Errorf("upstream Authorization %q", a)
	}
	if got.header.Get(SessionHeader) != "" || got.header.Get("OpenAI-Organization") != "org-1" {
		t.Errorf("upstream headers %v", got.header)
	}

	// Stored: the user turn and the reply, in one append.
	calls := e.api.appendCalls()[appendsBefore:]
	if len(calls) != 1 || strings.Count(calls[0].JSONL, "\n") != 2 {
		t.Fatalf("appends %+v, want one batch of 2 lines", calls)
	}
	turns := sessionTurns(t, e, "chat-1")
	want := []string{"conversation/user: Where does Momo sleep?", "conversation/assistant: " + plainReply}
	if len(turns) != 6 || turns[4] != want[0] || turns[5] != want[1] {
		t.Fatalf("session turns %q", turns)
	}
	res, _ := e.store.Session(context.Background(), ucl.SessionRequest{ID: "chat-1", Offset: 4})
	if res.Chunks[1].Parent != res.Chunks[0].ID || res.Chunks[0].Meta["model"] != "fake-model" {
		t.Errorf("stored reply %+v", res.Chunks)
	}

	// The next call of the session sees the first exchange as memory.
	sent2 := chatBody(t, false, "user", "And what colour is she?")
	e.do("POST", "/v1/chat/completions", "application/json", sent2, SessionHeader, "chat-1")
	mem2, _ := injected(t, sent2, up.requests()[1].body)
	if !strings.Contains(mem2, "Where does Momo sleep?") || !strings.Contains(mem2, plainReply) {
		t.Fatalf("second call's memory lacks the first exchange:\n%s", mem2)
	}
	if strings.Contains(e.logs.String(), upKey) {
		t.Fatal("the upstream key is in the log")
	}
}

func TestProxySessionChoice(t *testing.T) {
	up := newUpstream(t, "plain")
	e := newEnv(t, Options{Upstream: up.srv.URL + "/v1", DefaultSession: "fallback"})
	body := func(user string) []byte {
		m := map[string]any{"model": "m", "messages": []any{map[string]string{"role": "user", "content": "hello " + user}}}
		if user != "" {
			m["user"] = user
		}
		b, _ := json.Marshal(m)
		return b
	}
	for _, tc := range []struct{ header, user, want string }{
		{"from-header", "from-user", "from-header"}, {"", "from-user", "from-user"}, {"", "", "fallback"},
	} {
		var hdr []string
		if tc.header != "" {
			hdr = []string{SessionHeader, tc.header}
		}
		resp, b := e.do("POST", "/v1/chat/completions", "application/json", body(tc.user), hdr...)
		if resp.StatusCode != 200 || resp.Header.Get(SessionHeader) != tc.want {
			t.Fatalf("%+v: %d %s session %q", tc, resp.StatusCode, b, resp.Header.Get(SessionHeader))
		}
		if turns := sessionTurns(t, e, tc.want); len(turns) != 2 {
			t.Fatalf("%+v: session %q has %q", tc, tc.want, turns)
		}
	}
}

func TestProxyToolCallsStored(t *testing.T) {
	up := newUpstream(t, "tools")
	e := newEnv(t, Options{Upstream: up.srv.URL + "/v1"})
	resp, b := e.do("POST", "/v1/chat/completions", "application/json", chatBody(t, false, "user", "Weather in Paris?"), SessionHeader, "t1")
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	turns := sessionTurns(t, e, "t1")
	if len(turns) != 2 || turns[0] != "conversation/user: Weather in Paris?" || !strings.HasPrefix(turns[1], "tool_call/assistant: ") ||
		!strings.Contains(turns[1], `get_weather`) || !strings.Contains(turns[1], `Paris`) {
		t.Fatalf("turns %q", turns)
	}
	// The tool loop resends the same user message: it is stored once. The
	// fake upstream answers with the same call id again: a call is known
	// by its id (its result finds it that way), so it is stored once too.
	again := chatBody(t, false, "user", "Weather in Paris?")
	e.do("POST", "/v1/chat/completions", "application/json", again, SessionHeader, "t1")
	if turns := sessionTurns(t, e, "t1"); len(turns) != 2 || strings.Count(strings.Join(turns, "\n"), "user: Weather in Paris?") != 1 {
		t.Fatalf("turns after the resend %q", turns)
	}
}

// readEvent reads one SSE event (up to its blank line).
func readEvent(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	var b strings.Builder
	for {
		ln, err := r.ReadString('\n')
		b.WriteString(ln)
		if err != nil {
			return b.String()
		}
		if ln == "\n" {
			return b.String()
		}
	}
}

func TestProxyStreamsChunkByChunk(t *testing.T) {
	up := newUpstream(t, "stream-tools")
	up.gate = make(chan struct{})
	e := newEnv(t, Options{Upstream: up.srv.URL + "/v1"})
	seedSession(t, e, "st", "user", "Momo is my grey cat.")
	before := len(e.api.appendCalls())
	req, _ := http.NewRequest("POST", e.srv.URL+"/v1/chat/completions", bytes.NewReader(chatBody(t, true, "user", "Where does Momo sleep?")))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set(SessionHeader, "st")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("%d %s", resp.StatusCode, ct)
	}
	br := bufio.NewReader(resp.Body)
	var events []string
	// Each event reaches the client while the upstream still holds the
	// next one back: nothing is buffered to the end.
	for i := 0; i < 6; i++ {
		ev := readEvent(t, br)
		if !strings.HasPrefix(ev, "data: {") {
			t.Fatalf("event %d: %q", i, ev)
		}
		events = append(events, ev)
		if len(e.api.appendCalls()) != before {
			t.Fatal("stored before the stream ended")
		}
		up.gate <- struct{}{}
	}
	done := readEvent(t, br)
	if done != "data: [DONE]\n\n" {
		t.Fatalf("last event %q", done)
	}
	if rest, _ := io.ReadAll(br); len(rest) != 0 {
		t.Fatalf("after [DONE]: %q", rest)
	}
	// Stored before [DONE] reached the client: readable right away.
	calls := e.api.appendCalls()[before:]
	if len(calls) != 1 {
		t.Fatalf("%d appends", len(calls))
	}
	turns := sessionTurns(t, e, "st")
	if len(turns) != 4 || turns[2] != "conversation/assistant: "+strings.Join(streamParts, "") ||
		!strings.Contains(turns[3], `{"q":"sofa"} [pending]`) || !strings.HasPrefix(turns[3], "tool_call/") {
		t.Fatalf("turns %q", turns)
	}
	// The bytes are the upstream's.
	if !strings.Contains(events[0], `"content":"The sofa "`) {
		t.Fatalf("first event %q", events[0])
	}
	mem, _ := injected(t, nil, up.requests()[0].body)
	if !strings.Contains(mem, "Momo is my grey cat.") {
		t.Fatalf("stream request memory %q", mem)
	}
}

func TestProxyClientDisconnectStoresNothing(t *testing.T) {
	up := newUpstream(t, "stream")
	up.gate = make(chan struct{}, 10)
	e := newEnv(t, Options{Upstream: up.srv.URL + "/v1"})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", e.srv.URL+"/v1/chat/completions", bytes.NewReader(chatBody(t, true, "user", "hello there")))
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ev := readEvent(t, bufio.NewReader(resp.Body)); !strings.HasPrefix(ev, "data: {") {
		t.Fatalf("first event %q", ev)
	}
	cancel()
	resp.Body.Close()
	// Let the upstream finish its stream (it may or may not get to).
	for i := 0; i < 10; i++ {
		up.gate <- struct{}{}
	}
	select {
	case <-up.handled:
	case <-time.After(wait):
		t.Fatal("upstream handler never ended")
	}
	e.srv.Close() // waits for the proxy's handler to return
	if n := len(e.api.appendCalls()); n != 0 {
		t.Fatalf("%d appends after the client left", n)
	}
	if turns := sessionTurns(t, e, DefaultSession); len(turns) != 0 {
		t.Fatalf("stored %q", turns)
	}
}

func TestProxyUpstreamErrorsPassThroughAndStoreNothing(t *testing.T) {
	up := newUpstream(t, "error")
	e := newEnv(t, Options{Upstream: up.srv.URL + "/v1", UpstreamTimeout: 2 * time.Second})
	for _, stream := range []bool{false, true} {
		resp, b := e.do("POST", "/v1/chat/completions", "application/json", chatBody(t, stream, "user", "hi"))
		if resp.StatusCode != 500 || string(b) != errorBody || resp.Header.Get("X-Request-Id") != "req-500" {
			t.Fatalf("stream=%v: %d %s %v", stream, resp.StatusCode, b, resp.Header)
		}
	}
	// A hanging upstream: 504, nothing stored.
	up.mu.Lock()
	up.mode = "hang"
	up.mu.Unlock()
	resp, b := e.do("POST", "/v1/chat/completions", "application/json", chatBody(t, false, "user", "hi"))
	wantError(t, resp, b, http.StatusGatewayTimeout, "upstream_timeout")
	// An unreachable upstream: 502, and the key is nowhere.
	dead := newEnv(t, Options{Upstream: "http://127.0.0.1:1/v1"})
	resp, b = dead.do("POST", "/v1/chat/completions", "application/json", chatBody(t, false, "user", "hi"))
	wantError(t, resp, b, http.StatusBadGateway, "upstream_unavailable")
	if strings.Contains(string(b), upKey) || strings.Contains(dead.logs.String(), upKey) || strings.Contains(e.logs.String(), upKey) {
		t.Fatal("the upstream key leaked into a response or a log")
	}
	if n := len(e.api.appendCalls()) + len(dead.api.appendCalls()); n != 0 {
		t.Fatalf("%d appends after upstream errors", n)
	}
	// Nor is it in the store after a successful exchange.
	up.mu.Lock()
	up.mode = "plain"
	up.mu.Unlock()
	e.do("POST", "/v1/chat/completions", "application/json", chatBody(t, false, "user", "hi"))
	var all strings.Builder
	if err := e.store.Replay(context.Background(), ucl.ReplayRequest{}, func(l json.RawMessage) error { all.Write(l); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(all.String(), upKey) || !strings.Contains(all.String(), plainReply) {
		t.Fatalf("replay: key present or reply missing: %s", all.String())
	}
}

func TestModelsPassThrough(t *testing.T) {
	up := newUpstream(t, "plain")
	e := newEnv(t, Options{Upstream: up.srv.URL + "/v1/"})
	resp, b := e.do("GET", "/v1/models", "", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "fake-model") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if r := up.requests(); len(r) != 1 || r[0].path != "/v1/models" || r[0].header.Get("Authorization") != "Bearer "+upKey {
		t.Fatalf("upstream got %+v", r)
	}
}

func TestInjectSystem(t *testing.T) {
	sys := `{"content":"MEM","role":"system"}`
	cases := []struct{ in, want string }{
		{`{"messages":[{"role":"user","content":"q"}]}`, `{"messages":[` + sys + `,{"role":"user","content":"q"}]}`},
		{`{"model":"m", "messages" : [ {"role":"system","content":"s"} , {"role":"user","content":"q"} ], "n":1}`,
			`{"model":"m", "messages" : [ {"role":"system","content":"s"} , ` + sys + `,{"role":"user","content":"q"} ], "n":1}`},
		{`{"messages":[{"role":"developer","content":"d"}]}`, `{"messages":[{"role":"developer","content":"d"},` + sys + `]}`},
		{`{"messages":[]}`, `{"messages":[` + sys + `]}`},
		{`{"nested":{"messages":1},"messages":[{"role":"user","content":"q"}]}`, `{"nested":{"messages":1},"messages":[` + sys + `,{"role":"user","content":"q"}]}`},
	}
	for _, tc := range cases {
		got, err := injectSystem([]byte(tc.in), "MEM")
		if err != nil || string(got) != tc.want {
			t.Errorf("injectSystem(%s) =\n%s, %v\nwant %s", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{`[]`, `{"messages":{}}`, `{"model":"m"}`, `{"messages":[1,`} {
		if _, err := injectSystem([]byte(bad), "MEM"); err == nil {
			t.Errorf("injectSystem(%s): no error", bad)
		}
	}
}

func FuzzInjectSystem(f *testing.F) {
	f.Add([]byte(`{"messages":[{"role":"system","content":"s"},{"role":"user","content":"q"}]}`), "m")
	f.Add([]byte(`{"messages":[]}`), "")
	f.Add([]byte(` { "messages" : [ 1 , "x" ] } `), "<&>")
	f.Fuzz(func(t *testing.T, body []byte, content string) {
		out, err := injectSystem(body, content)
		if err != nil {
			return
		}
		var before, after struct {
			Messages []json.RawMessage `json:"messages"`
		}
		if json.Unmarshal(body, &before) != nil {
			return // the splice only promises to keep valid JSON valid
		}
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("output is not JSON: %v\n%s", err, out)
		}
		if len(after.Messages) != len(before.Messages)+1 {
			t.Fatalf("%d messages after, %d before", len(after.Messages), len(before.Messages))
		}
	})
}

func TestInjectUser(t *testing.T) {
	cases := []struct {
		in   string
		idx  int
		want string
	}{
		{`{"messages":[{"role":"user","content":"q"}]}`, 0, `{"messages":[{"role":"user","content":"<m>\n\nq"}]}`},
		{`{"messages":[{"role":"system","content":"s"}, {"content" : "a", "role":"user"},{"role":"user","content":"q2"}]}`, 2,
			`{"messages":[{"role":"system","content":"s"}, {"content" : "a", "role":"user"},{"role":"user","content":"<m>\n\nq2"}]}`},
		{`{"messages":[{"role":"user","content":[{"type":"text","text":"q"}]}]}`, 0,
			`{"messages":[{"role":"user","content":[{"text":"<m>","type":"text"},{"type":"text","text":"q"}]}]}`},
		{`{"messages":[{"role":"user","content":[ ]}]}`, 0, `{"messages":[{"role":"user","content":[{"text":"<m>","type":"text"} ]}]}`},
	}
	for _, tc := range cases {
		got, err := injectUser([]byte(tc.in), tc.idx, "<m>")
		if err != nil || string(got) != tc.want {
			t.Errorf("injectUser(%s, %d) =\n%s, %v\nwant %s", tc.in, tc.idx, got, err, tc.want)
		}
	}
	for _, bad := range []struct {
		in  string
		idx int
	}{{`{"messages":[{"role":"user"}]}`, 0}, {`{"messages":[{"role":"user","content":1}]}`, 0}, {`{"messages":[]}`, 0}} {
		if _, err := injectUser([]byte(bad.in), bad.idx, "m"); err == nil {
			t.Errorf("injectUser(%s): no error", bad.in)
		}
	}
}

func TestProxyInjectAsUser(t *testing.T) {
	up := newUpstream(t, "plain")
	e := newEnv(t, Options{Upstream: up.srv.URL + "/v1", InjectAs: InjectUser})
	seedSession(t, e, "u1", "user", "My cat is called Momo.")
	sent := chatBody(t, false, "system", "Be brief.", "user", "What is my cat called?")
	if resp, b := e.do("POST", "/v1/chat/completions", "application/json", sent, SessionHeader, "u1"); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var fw struct {
		Messages []struct{ Role, Content string }
	}
	if err := json.Unmarshal(up.requests()[0].body, &fw); err != nil {
		t.Fatal(err)
	}
	if len(fw.Messages) != 2 || !strings.HasPrefix(fw.Messages[1].Content, memoryPreamble) ||
		!strings.Contains(fw.Messages[1].Content, "My cat is called Momo.") || !strings.HasSuffix(fw.Messages[1].Content, "\n\nWhat is my cat called?") {
		t.Fatalf("forwarded messages %+v", fw.Messages)
	}
	// Stored: the user's own words, not the memory.
	if turns := sessionTurns(t, e, "u1"); len(turns) != 3 || turns[1] != "conversation/user: What is my cat called?" {
		t.Fatalf("turns %q", turns)
	}
	if _, err := New(e.api, Options{Token: "x", InjectAs: "header"}); !errors.Is(err, ErrBadOption) {
		t.Fatalf("bad InjectAs: %v", err)
	}
}

func TestProxyBrokenStreamStoresNothing(t *testing.T) {
	up := newUpstream(t, "truncated")
	e := newEnv(t, Options{Upstream: up.srv.URL + "/v1"})
	resp, b := e.do("POST", "/v1/chat/completions", "application/json", chatBody(t, true, "user", "hello"))
	if resp.StatusCode != 200 || !strings.Contains(string(b), streamParts[1]) || !strings.HasSuffix(string(b), `{"choices":[{"ind`) {
		t.Fatalf("%d %q", resp.StatusCode, b)
	}
	if n := len(e.api.appendCalls()); n != 0 {
		t.Fatalf("%d appends after a broken stream", n)
	}
}

// A transcript keeps a turn said twice: the proxy records every exchange,
// duplicates allowed (a store through /v1/store would return duplicate_of).
func TestProxyRecordsRepeatedTurns(t *testing.T) {
	up := newUpstream(t, "plain")
	e := newEnv(t, Options{Upstream: up.srv.URL + "/v1", DefaultSession: "chat"})
	// The second request carries the history: its "ok" is a new turn (the
	// proxy's turn ids are by position), with the same text as the first.
	msgs := []any{map[string]string{"role": "user", "content": "ok"}}
	for i := 1; i <= 2; i++ {
		if i == 2 {
			msgs = append(msgs, map[string]string{"role": "assistant", "content": "The sofa is red, and Momo sleeps there."},
				map[string]string{"role": "user", "content": "ok"})
		}
		b, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs})
		if resp, body := e.do("POST", "/v1/chat/completions", "application/json", b); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		if turns := sessionTurns(t, e, "chat"); len(turns) != 2*i {
			t.Fatalf("after exchange %d: %q", i, turns)
		}
	}
	resp, body := e.post("/v1/store", ucl.RememberRequest{Content: "OK", Session: "chat"})
	if r := decode[ucl.AppendResult](t, body); resp.StatusCode != 200 || r.Results[0].DuplicateOf == "" {
		t.Fatalf("store of a said turn: %d %s", resp.StatusCode, body)
	}
}

// TestBodyReadTimeout: a client with a valid token that sends headers and
// part of a body, then nothing, gets 408 instead of holding a handler
// forever.
func TestBodyReadTimeout(t *testing.T) {
	e := newEnv(t, Options{BodyReadTimeout: 200 * time.Millisecond})
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/store HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"content\":", testToken)
	conn.SetReadDeadline(time.Now().Add(time.Minute)) // a guard, not an assertion
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	wantError(t, resp, b, http.StatusRequestTimeout, "body_timeout")
}

// TestProxyUpstreamStallsAfterHeaders: an upstream that sends headers and
// one event, then nothing, is cut off after UpstreamTimeout; the client's
// response ends and nothing is stored.
func TestProxyUpstreamStallsAfterHeaders(t *testing.T) {
	up := newUpstream(t, "stall")
	e := newEnv(t, Options{Upstream: up.srv.URL + "/v1", UpstreamTimeout: 200 * time.Millisecond})
	before := len(e.api.appendCalls())
	done := make(chan []byte, 1)
	go func() {
		_, b := e.do("POST", "/v1/chat/completions", "application/json", chatBody(t, true, "user", "hello?"))
		done <- b
	}()
	select {
	case b := <-done:
		if !strings.Contains(string(b), "The sofa") {
			t.Fatalf("the first event was not passed on: %q", b)
		}
	case <-time.After(time.Minute): // a guard: without the cut this never ends
		t.Fatal("the proxy still waits on a stalled upstream")
	}
	if n := len(e.api.appendCalls()); n != before {
		t.Fatalf("%d appends for a broken stream", n-before)
	}
}

// TestProxyHugeSSEEventPassedThrough: one SSE event far over maxSSEEvent
// reaches the client while the upstream is still sending it (it used to
// be buffered whole: 120 MB held 396 MB), and the exchange is not stored.
func TestProxyHugeSSEEventPassedThrough(t *testing.T) {
	up := newUpstream(t, "huge-event")
	up.gate = make(chan struct{})
	e := newEnv(t, Options{Upstream: up.srv.URL + "/v1"})
	before := len(e.api.appendCalls())
	req, _ := http.NewRequest("POST", e.srv.URL+"/v1/chat/completions", bytes.NewReader(chatBody(t, true, "user", "big")))
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := make(chan int64, 1)
	go func() {
		n, _ := io.CopyN(io.Discard, resp.Body, 2*maxSSEEvent)
		got <- n
	}()
	select {
	case n := <-got:
		if n != 2*maxSSEEvent {
			t.Fatalf("got %d bytes", n)
		}
	case <-time.After(time.Minute): // a guard: a buffering proxy never sends them
		t.Fatal("the proxy holds the event back until its end")
	}
	close(up.gate) // now the upstream ends the event and the stream
	rest, _ := io.ReadAll(resp.Body)
	if !bytes.HasSuffix(rest, []byte("data: [DONE]\n\n")) {
		t.Fatalf("stream end %q", rest[max(0, len(rest)-40):])
	}
	if n := len(e.api.appendCalls()); n != before {
		t.Fatalf("%d appends of an unparsed reply", n-before)
	}
}
