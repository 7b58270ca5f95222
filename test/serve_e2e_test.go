package test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const e2eUpstreamKey = "sk-e2e-UPSTREAM-KEY-must-not-leak"

// openaiClient is test/openai/client.mjs, driving the official `openai`
// npm package; installed by `make openai-client` (npm ci from the
// committed lockfile).
func openaiClient(t testing.TB) (node, script string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("skipping: node not found (install Node.js to run the OpenAI client tests)")
	}
	dir, err := filepath.Abs("openai")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err != nil {
		t.Fatalf("the openai npm package is not installed: run `make openai-client` (%v)", err)
	}
	return node, filepath.Join(dir, "client.mjs")
}

// recordingUpstream is an OpenAI-compatible fake LLM: it records every
// request and answers plainly or as an SSE stream (as asked), or with a
// 500 when the question contains FAIL.
type recordingUpstream struct {
	mu   sync.Mutex
	reqs []upReq
	srv  *httptest.Server
}

type upReq struct {
	Path   string
	Auth   string
	Body   []byte
	Parsed struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
}

var e2eParts = []string{"Momo ", "sleeps ", "on the ", "red sofa."}

func newRecordingUpstream(t *testing.T) *recordingUpstream {
	u := &recordingUpstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rq := upReq{Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Body: b}
		json.Unmarshal(b, &rq.Parsed)
		u.mu.Lock()
		u.reqs = append(u.reqs, rq)
		u.mu.Unlock()
		if r.URL.Path == "/v1/models" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"object":"list","data":[{"id":"fake-model","object":"model","created":1,"owned_by":"test"}]}`)
			return
		}
		last := ""
		if n := len(rq.Parsed.Messages); n > 0 {
			last = rq.Parsed.Messages[n-1].Content
		}
		if strings.Contains(last, "FAIL") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(500)
			io.WriteString(w, `{"error":{"message":"upstream exploded","type":"server_error","code":null}}`)
			return
		}
		reply := "Answer to: " + last
		if !rq.Parsed.Stream {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-e2e", "object": "chat.completion", "created": 1, "model": "fake-model",
				"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": reply}, "finish_reason": "stop"}}})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for i, p := range e2eParts {
			delta := map[string]any{"content": p}
			if i == 0 {
				delta["role"] = "assistant"
			}
			c, _ := json.Marshal(map[string]any{"id": "chatcmpl-e2e-s", "object": "chat.completion.chunk", "created": 1, "model": "fake-model",
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": nil}}})
			fmt.Fprintf(w, "data: %s\n\n", c)
			fl.Flush()
		}
		io.WriteString(w, "data: [DONE]\n\n")
		fl.Flush()
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *recordingUpstream) requests() []upReq {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]upReq(nil), u.reqs...)
}

type served struct {
	cmd    *exec.Cmd
	addr   string
	stderr *syncBuffer
	done   chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var servingLine = regexp.MustCompile(`and http://(127\.0\.0\.1:\d+)`)

// startServe runs `ucl serve` on dir and returns once it has printed the
// address it listens on.
func startServe(t *testing.T, dir string, env []string, args ...string) *served {
	t.Helper()
	cmd := exec.Command(uclBin, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(append(os.Environ(), "UCL_DIR="+dir, "UCL_VAULT_KEY="), env...)
	pr, pw := io.Pipe()
	s := &served{cmd: cmd, stderr: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = io.MultiWriter(s.stderr, pw)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- cmd.Wait(); pw.Close() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-s.done
	})
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
			s.addr = m[1]
			break
		}
	}
	if s.addr == "" {
		t.Fatalf("ucl serve did not come up: %s", s.stderr.String())
	}
	go io.Copy(io.Discard, pr)
	return s
}

func runOpenAI(t *testing.T, base, token, session, mode, question string) map[string]any {
	t.Helper()
	node, script := openaiClient(t)
	out, err := exec.Command(node, script, base, token, session, mode, question).CombinedOutput()
	if err != nil {
		t.Fatalf("openai client: %v\n%s", err, out)
	}
	return jsonDoc(t, strings.TrimSpace(string(out)))
}

func restGet(t *testing.T, base, token, path string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, jsonDoc(t, string(b))
}

// The official OpenAI Node client talks to `ucl serve` as to any
// OpenAI-compatible server; ucl injects memory, forwards to the fake
// upstream, streams chunk by chunk and remembers each exchange.
func TestServeOpenAIClient(t *testing.T) {
	t.Parallel()
	openaiClient(t) // skip early without node
	up := newRecordingUpstream(t)
	dir := newStore(t)
	must(t, dir, `{"kind":"knowledge","content":"The family cat Momo is grey and likes the red sofa."}`+"\n", "append")
	srv := startServe(t, dir, []string{"OPENAI_API_KEY=" + e2eUpstreamKey}, "--upstream", up.srv.URL+"/v1")
	base := "http://" + srv.addr + "/v1"
	tokenBytes, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "token")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("token mode %v", fi.Mode())
	}
	token := strings.TrimSpace(string(tokenBytes))

	// 1. A plain completion.
	r1 := runOpenAI(t, base, token, "e2e", "plain", "Where does Momo sleep?")
	if r1["content"] != "Answer to: Where does Momo sleep?" {
		t.Fatalf("plain: %v", r1)
	}
	reqs := up.requests()
	if len(reqs) != 1 || reqs[0].Auth != "Bearer "+e2eUpstreamKey || reqs[0].Parsed.Model != "fake-model" {
		t.Fatalf("upstream request %+v", reqs)
	}
	msgs := reqs[0].Parsed.Messages
	if len(msgs) != 3 || msgs[0].Content != "You are a helpful assistant." || msgs[1].Role != "system" ||
		!strings.Contains(msgs[1].Content, "likes the red sofa") || msgs[2].Content != "Where does Momo sleep?" {
		t.Fatalf("first request's messages: %+v", msgs)
	}
	if !strings.Contains(string(reqs[0].Body), `"temperature":0.2`) {
		t.Fatalf("temperature not forwarded: %s", reqs[0].Body)
	}
	code, sess := restGet(t, base, token, "/sessions/e2e")
	if code != 200 || sess["total"].(float64) != 2 {
		t.Fatalf("session after the plain call: %d %v", code, sess)
	}

	// 2. A streaming completion in the same session: the first exchange is
	// in its injected memory, and the deltas arrive one by one.
	r2 := runOpenAI(t, base, token, "e2e", "stream", "What colour is the sofa?")
	deltas, _ := r2["deltas"].([]any)
	if len(deltas) != len(e2eParts) || r2["content"] != strings.Join(e2eParts, "") {
		t.Fatalf("stream: %v", r2)
	}
	reqs = up.requests()
	if len(reqs) != 2 || !reqs[1].Parsed.Stream {
		t.Fatalf("upstream requests %d", len(reqs))
	}
	mem := reqs[1].Parsed.Messages[1]
	if mem.Role != "system" || !strings.Contains(mem.Content, "Where does Momo sleep?") || !strings.Contains(mem.Content, "Answer to: Where does Momo sleep?") {
		t.Fatalf("second call's memory lacks the first exchange: %+v", mem)
	}
	code, sess = restGet(t, base, token, "/sessions/e2e")
	chunks, _ := sess["chunks"].([]any)
	if code != 200 || len(chunks) != 4 || chunks[3].(map[string]any)["content"] != strings.Join(e2eParts, "") {
		t.Fatalf("session after the stream: %d %v", code, sess)
	}
	seq2, seq3 := chunks[2].(map[string]any)["seq"].(float64), chunks[3].(map[string]any)["seq"].(float64)
	if seq3 != seq2+1 {
		t.Fatalf("the exchange is not one batch: seqs %v %v", seq2, seq3)
	}

	// 3. An upstream error reaches the client as it is and stores nothing.
	r3 := runOpenAI(t, base, token, "e2e", "plain", "Please FAIL now")
	if r3["status"] != float64(500) || !strings.Contains(fmt.Sprint(r3["error"]), "upstream exploded") {
		t.Fatalf("error call: %v", r3)
	}
	if _, sess = restGet(t, base, token, "/sessions/e2e"); sess["total"].(float64) != 4 {
		t.Fatalf("stored after an upstream error: %v", sess)
	}

	// 4. /v1/models passes through; no token means 401; a wrong token, 401.
	if r4 := runOpenAI(t, base, token, "e2e", "models", ""); fmt.Sprint(r4["models"]) != "[fake-model]" {
		t.Fatalf("models: %v", r4)
	}
	if r5 := runOpenAI(t, base, "wrong-token", "e2e", "plain", "hi"); r5["status"] != float64(401) {
		t.Fatalf("wrong token: %v", r5)
	}
	for _, p := range []string{"/health", "/status", "/sessions"} {
		if code, _ := restGet(t, base, "", p); code != 401 {
			t.Fatalf("%s without a token: %d", p, code)
		}
	}

	// 5. The socket needs no token: the CLI attaches to the server.
	out := must(t, dir, "", "session", "show", "e2e", "--json")
	if !strings.Contains(out, "What colour is the sofa?") {
		t.Fatalf("attached CLI: %s", out)
	}
	// A second serve is refused, naming the owner.
	if r := ucl(t, dir, "", "serve", "--listen", "127.0.0.1:0"); r.code == 0 || !strings.Contains(r.err, fmt.Sprintf("pid %d", srv.cmd.Process.Pid)) {
		t.Fatalf("second serve: %s", r)
	}

	// 6. SIGTERM: clean exit, socket removed; the key never appeared.
	srv.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-srv.done:
		if err != nil {
			t.Fatalf("serve exit: %v\n%s", err, srv.stderr.String())
		}
		srv.done <- err
	case <-time.After(2 * time.Minute):
		t.Fatal("serve did not stop on SIGTERM")
	}
	if _, err := os.Stat(filepath.Join(dir, "ucl.sock")); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
	if strings.Contains(srv.stderr.String(), e2eUpstreamKey) {
		t.Fatal("the upstream key is in the server's log")
	}
	replay := must(t, dir, "", "replay")
	if strings.Contains(replay, e2eUpstreamKey) || !strings.Contains(replay, "Answer to: Where does Momo sleep?") {
		t.Fatal("replay: the key is stored, or the exchange is not")
	}
}

// `ucl config show` reports each value and where it came from.
func TestConfigShow(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	if err := os.WriteFile(filepath.Join(dir, "ucl.toml"), []byte("[proxy]\nupstream = \"http://file.example/v1\"\n[retrieval]\nrecency_window = 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(uclBin, "config", "show", "--json", "--listen", "127.0.0.1:9999")
	cmd.Env = append(os.Environ(), "UCL_DIR="+dir, "UCL_RECENCY_WINDOW=5", "OPENAI_API_KEY="+e2eUpstreamKey)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("config show: %v %s", err, out)
	}
	if strings.Contains(string(out), e2eUpstreamKey) {
		t.Fatal("config show prints the key")
	}
	var doc struct {
		File     string `json:"file"`
		Settings []struct{ Key, Value, Source string }
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range doc.Settings {
		got[s.Key] = s.Value + " from " + s.Source
	}
	for k, want := range map[string]string{
		"proxy.listen": "127.0.0.1:9999 from flag", "proxy.upstream": "http://file.example/v1 from file",
		"retrieval.recency_window": "5 from env", "retrieval.similarity_top_k": "8 from default",
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	if !strings.HasSuffix(doc.File, "ucl.toml") || !strings.HasPrefix(got["proxy.upstream_api_key"], "********") {
		t.Errorf("file %q key %q", doc.File, got["proxy.upstream_api_key"])
	}
	// A bad file is an error naming the key, for serve too.
	os.WriteFile(filepath.Join(dir, "ucl.toml"), []byte("[retrieval]\nrecency_windw = 3\n"), 0o600)
	for _, args := range [][]string{{"config", "show"}, {"serve", "--listen", "127.0.0.1:0"}} {
		if r := ucl(t, dir, "", args...); r.code == 0 || !strings.Contains(r.err, "retrieval.recency_windw") {
			t.Fatalf("%v with a bad key: %s", args, r)
		}
	}
}

// SIGTERM lets an in-flight proxied request finish, and its exchange is
// stored before the log closes.
func TestServeGracefulShutdown(t *testing.T) {
	t.Parallel()
	got, release := make(chan struct{}, 1), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		got <- struct{}{}
		<-release
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"late but complete"},"finish_reason":"stop"}]}`)
	}))
	defer up.Close()
	dir := newStore(t)
	srv := startServe(t, dir, nil, "--upstream", up.URL+"/v1")
	token, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		code int
		body string
		err  error
	}
	ans := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest("POST", "http://"+srv.addr+"/v1/chat/completions",
			strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"slow question"}]}`))
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
		req.Header.Set("X-UCL-Session", "g")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			ans <- answer{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ans <- answer{code: resp.StatusCode, body: string(b)}
	}()
	<-got
	srv.cmd.Process.Signal(syscall.SIGTERM)
	// The signal is handled while the request is held upstream; new
	// connections are refused once the listener closes.
	for i := 0; ; i++ {
		if _, err := http.Get("http://" + srv.addr + "/v1/health"); err != nil {
			break
		}
		if i > 3000 {
			t.Fatal("ucl serve kept accepting after SIGTERM")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	a := <-ans
	if a.err != nil || a.code != 200 || !strings.Contains(a.body, "late but complete") {
		t.Fatalf("in-flight request: %+v", a)
	}
	if err := <-srv.done; err != nil {
		t.Fatalf("serve exit: %v\n%s", err, srv.stderr.String())
	}
	srv.done <- nil
	replay := must(t, dir, "", "replay")
	if !strings.Contains(replay, "slow question") || !strings.Contains(replay, "late but complete") {
		t.Fatalf("the in-flight exchange was not stored:\n%s", replay)
	}
}

// ucl init creates the serve token, readable by the owner only.
func TestInitCreatesServeToken(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	fi, err := os.Stat(filepath.Join(dir, "token"))
	if err != nil {
		t.Fatalf("no token after init: %v", err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Size() < 16 {
		t.Fatalf("token mode %v size %d", fi.Mode().Perm(), fi.Size())
	}
}

// ucl.toml applies to every command, not only serve: a bad key is an
// error naming it, and [index]/[arweave] settings are used unless a flag
// or the environment overrides them.
func TestConfigFileAppliesToEveryCommand(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	must(t, dir, "", "store", "the file decides the embedder", "--session", "c")
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(dir, "ucl.toml"), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("[index]\nembedder = \"bogus\"\n")
	if r := ucl(t, dir, "", "status"); r.code == 0 || !strings.Contains(r.err, "index.embedder") {
		t.Fatalf("status with a bad setting: %s", r)
	}
	write("[index]\nembedder = \"static\"\nembed_model = \"/nonexistent/model\"\n")
	if r := ucl(t, dir, "", "query", "embedder"); r.code == 0 || !strings.Contains(r.err, "static") {
		t.Fatalf("query with the file's static embedder: %s", r)
	}
	// A flag overrides the file.
	if r := ucl(t, dir, "", "query", "embedder", "--embedder", "hash"); r.code != 0 {
		t.Fatalf("query with --embedder over the file: %s", r)
	}
}
