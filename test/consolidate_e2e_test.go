package test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/arweave/arlocaltest"
)

const e2eModelKey = "sk-e2e-CONSOLIDATE-KEY-must-not-leak"

// factModel is an OpenAI-compatible fake LLM that both chats (as the
// proxy's upstream) and extracts facts: a request asking for the
// ucl_facts JSON schema gets facts for the user turns it carries (one per
// known phrase, plus one invented fact the support check must refuse);
// any other request gets "Answer to: <last message>". It records every
// request.
type factModel struct {
	mu   sync.Mutex
	reqs []factReq
	srv  *httptest.Server
}

type factReq struct {
	Auth     string
	Body     string
	Facts    bool // a consolidation request
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
}

func newFactModel(t *testing.T) *factModel {
	m := &factModel{}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
			ResponseFormat struct {
				JSONSchema struct {
					Name   string `json:"name"`
					Strict bool   `json:"strict"`
				} `json:"json_schema"`
			} `json:"response_format"`
		}
		json.Unmarshal(b, &req)
		fr := factReq{Auth: r.Header.Get("Authorization"), Body: string(b), Messages: req.Messages,
			Facts: req.ResponseFormat.JSONSchema.Name == "ucl_facts" && req.ResponseFormat.JSONSchema.Strict}
		m.mu.Lock()
		m.reqs = append(m.reqs, fr)
		m.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		content := ""
		if fr.Facts {
			var in struct {
				Turns []struct {
					ID, Role, Content string
				} `json:"turns"`
			}
			json.Unmarshal([]byte(req.Messages[1].Content), &in)
			type fact struct {
				Subject    string   `json:"subject"`
				Text       string   `json:"text"`
				Sources    []string `json:"sources"`
				Supersedes []string `json:"supersedes"`
			}
			facts := []fact{}
			for _, tn := range in.Turns {
				if tn.Role != "user" {
					continue
				}
				if strings.Contains(tn.Content, "peanuts") {
					facts = append(facts, fact{"user", "The user is allergic to peanuts.", []string{tn.ID}, []string{}})
					facts = append(facts, fact{"user", "The user lives in Paris.", []string{tn.ID}, []string{}}) // invented
				}
				if strings.Contains(tn.Content, "aisle") {
					facts = append(facts, fact{"user", "The user prefers aisle seats.", []string{tn.ID}, []string{}})
				}
			}
			out, _ := json.Marshal(map[string]any{"facts": facts})
			content = string(out)
		} else if n := len(req.Messages); n > 0 {
			content = "Answer to: " + req.Messages[n-1].Content
		}
		json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-f", "object": "chat.completion", "created": 1, "model": "fake-model",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}}})
	}))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *factModel) requests() []factReq {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]factReq(nil), m.reqs...)
}

func (m *factModel) consolidations() int {
	n := 0
	for _, r := range m.requests() {
		if r.Facts {
			n++
		}
	}
	return n
}

// Chats through the proxy, consolidation through the built binary
// (attached to the serving owner), the next chat's injected memory opens
// with the profile; forgetting the source takes the fact with it,
// everywhere, and a key rotation leaves it in no file.
func TestConsolidateThroughProxyE2E(t *testing.T) {
	t.Parallel()
	openaiClient(t)
	m := newFactModel(t)
	dir := newStore(t)
	env := []string{"OPENAI_API_KEY=" + e2eModelKey, "UCL_CONSOLIDATE_MODEL=fake-facts"}
	srv := startServe(t, dir, env, "--upstream", m.srv.URL+"/v1")
	base := "http://" + srv.addr + "/v1"
	tokenBytes, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tokenBytes))

	runOpenAI(t, base, token, "trip", "plain", "I am allergic to peanuts, and I prefer aisle seats.")

	// Consolidate, attached to the owner (which holds the model settings).
	res := jsonDoc(t, must(t, dir, "", "consolidate", "--json"))
	stored, _ := res["stored"].([]any)
	refused, _ := res["refused"].([]any)
	profiles, _ := res["profiles"].([]any)
	if len(stored) != 2 || len(refused) != 1 || len(profiles) != 1 {
		t.Fatalf("consolidate: %v", res)
	}
	if r := refused[0].(map[string]any); r["text"] != "The user lives in Paris." || !strings.Contains(r["reason"].(string), "not supported") {
		t.Fatalf("refused %v", r)
	}
	peanutFact := stored[0].(map[string]any)
	source := peanutFact["derived_from"].([]any)[0].(string)
	if m.consolidations() != 1 {
		t.Fatalf("%d consolidation requests", m.consolidations())
	}
	for _, r := range m.requests() {
		if r.Auth != "Bearer "+e2eModelKey {
			t.Fatalf("request without the key: %q", r.Auth)
		}
	}
	prof := must(t, dir, "", "profile")
	if !strings.Contains(prof, "The user is allergic to peanuts. [fact "+peanutFact["id"].(string)+"; sources "+source+"]") {
		t.Fatalf("profile: %s", prof)
	}

	// The next chat's injected memory opens with the profile.
	runOpenAI(t, base, token, "trip2", "plain", "Which seat should I book?")
	reqs := m.requests()
	last := reqs[len(reqs)-1]
	if last.Facts || len(last.Messages) < 3 {
		t.Fatalf("last request %+v", last)
	}
	mem := last.Messages[1].Content
	// The proxy packs memory with the engine's context assembly: the
	// profile block opens it, before any session's turns.
	if last.Messages[1].Role != "system" || !strings.Contains(mem, "<profile") || !strings.Contains(mem, "allergic to peanuts") ||
		strings.Index(mem, "<profile") > strings.Index(mem+"<session", "<session") {
		t.Fatalf("injected memory: %s", mem)
	}

	// A re-run sends the new turns (no facts in them), the one after
	// sends nothing.
	r2 := jsonDoc(t, must(t, dir, "", "consolidate", "--json"))
	if s, _ := r2["stored"].([]any); len(s) != 0 {
		t.Fatalf("second run stored %v", r2)
	}
	n := m.consolidations()
	r3 := jsonDoc(t, must(t, dir, "", "consolidate", "--json"))
	if calls, _ := r3["requests"].([]any); len(calls) != 0 || m.consolidations() != n {
		t.Fatalf("third run: %v", r3)
	}

	// Forget the session (the source and the echoing reply): the facts
	// and the profile go in its batch.
	tomb := jsonDoc(t, must(t, dir, "", "tombstone", "--session", "trip", "--json"))
	derived, _ := tomb["derived"].(map[string]any)
	if removed, _ := derived["removed"].([]any); len(removed) != 3 { // both facts (one source) and the profile
		t.Fatalf("tombstone: %v", tomb)
	}
	if prof := must(t, dir, "", "profile"); !strings.Contains(prof, "no profile") {
		t.Fatalf("profile after forgetting: %s", prof)
	}
	q := jsonDoc(t, must(t, dir, "", "query", "peanuts", "--json"))
	for _, r := range q["results"].([]any) {
		if c := r.(map[string]any)["content"].(string); strings.Contains(c, "peanuts") {
			t.Fatalf("query after forgetting: %v", r)
		}
	}
	if c := must(t, dir, "", "context", "peanuts allergy"); strings.Contains(c, "allergic") {
		t.Fatalf("context after forgetting: %s", c)
	}
	// The audit trail: where the fact came from and why it went.
	show := jsonDoc(t, must(t, dir, "", "audit", "show", fmt.Sprint(peanutFact["seq"]), "--json"))
	by := show["tombstoned_by"]
	why := must(t, dir, "", "audit", "show", fmt.Sprint(by), "--json")
	if by == nil || !strings.Contains(why, "derived from "+source) || !strings.Contains(why, "every source was forgotten") {
		t.Fatalf("audit: %v\n%s", show, why)
	}

	// Stop the owner, rotate, and the forgotten text is in no file; the
	// projections rebuild without the model.
	srv.cmd.Process.Signal(syscall.SIGTERM)
	srv.done <- <-srv.done // the cleanup waits on it too
	m.srv.Close()
	must(t, dir, "", "keys", "rotate", "--yes")
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, _ := os.ReadFile(p)
		for _, needle := range []string{"peanuts", "aisle", e2eModelKey} {
			if strings.Contains(string(b), needle) {
				t.Errorf("%q in %s after rotation", needle, p)
			}
		}
		return nil
	})
	// The audit log says why each derived item went, and that it is shredded.
	derivedTombs := 0
	for _, e := range jsonLines(t, must(t, dir, "", "audit", "log", "--json")) {
		if r, _ := e["reason"].(string); strings.HasPrefix(r, "derived memory: ") {
			derivedTombs++
			if e["erasure"] != "shredded" {
				t.Errorf("derived tombstone not shredded: %v", e)
			}
		}
	}
	if derivedTombs != 3 {
		t.Fatalf("%d derived tombstones in the audit log", derivedTombs)
	}
	if strings.Contains(srv.stderr.String(), e2eModelKey) {
		t.Fatal("the key is in the server's log")
	}
	before := jsonDoc(t, must(t, dir, "", "project", "verify", "--json"))
	must(t, dir, "", "project", "rebuild")
	after := jsonDoc(t, must(t, dir, "", "project", "verify", "--json"))
	if fmt.Sprint(before["digests"]) != fmt.Sprint(after["digests"]) || after["ok"] != true {
		t.Fatalf("digests %v vs %v", before, after)
	}
}

// Without a model the command says so, sends nothing and stores nothing.
func TestConsolidateNoModelE2E(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	must(t, dir, "I prefer aisle seats.", "store", "--session", "s1")
	head := must(t, dir, "", "replay", "--json")
	r := ucl(t, dir, "", "consolidate")
	if r.code == 0 || !strings.Contains(r.err, "no model is configured") || !strings.Contains(r.err, "UCL_CONSOLIDATE_MODEL") {
		t.Fatalf("%s", r)
	}
	if after := must(t, dir, "", "replay", "--json"); after != head {
		t.Fatal("something was stored")
	}
}

// Derived memory reaches a device rebuilt from Arweave as events: the
// profile and facts come back without any model, and what a tombstone
// and a rotation shredded on the first device is unreadable on the new
// one too.
func TestDerivedRebuildFromArweave(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("skipping arlocal end-to-end tests in -short mode")
	}
	gw := arlocaltest.Start(t)
	m := newFactModel(t)
	a, _ := newDevice(t, gw, 0, "dv")
	cfg := "[consolidate]\nmodel = \"fake-facts\"\nendpoint = \"" + m.srv.URL + "/v1\"\n"
	if err := os.WriteFile(filepath.Join(a.dir, "ucl.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	must(t, a.dir, `{"type":"store","session":"s1","role":"user","id":"p1","content":"I am allergic to peanuts."}`+"\n"+
		`{"type":"store","session":"s2","role":"user","id":"p2","content":"I prefer aisle seats."}`+"\n", "append", "-")
	res := jsonDoc(t, must(t, a.dir, "", "consolidate", "--json"))
	if s, _ := res["stored"].([]any); len(s) != 2 {
		t.Fatalf("consolidate: %v", res)
	}
	must(t, a.dir, "", "tombstone", "--session", "s1")
	// Not blind: before the rotation the owner's key still reads it.
	if r := must(t, a.dir, "", "replay", "--include-tombstoned"); !strings.Contains(r, "The user is allergic to peanuts.") {
		t.Fatal("the fact is not in the log before the rotation")
	}
	must(t, a.dir, "", "sync", "push", "--gateway", gw.URL())
	must(t, a.dir, "", "keys", "rotate", "--yes")
	must(t, a.dir, "", "sync", "push", "--gateway", gw.URL())
	if err := gw.Mine(1); err != nil {
		t.Fatal(err)
	}
	m.srv.Close() // no model from here on
	calls := len(m.requests())
	profA := must(t, a.dir, "", "profile", "--json")
	if !strings.Contains(profA, "aisle") || strings.Contains(profA, "peanuts") {
		t.Fatalf("profile on A: %s", profA)
	}

	b, rr := rebuild(t, gw.URL(), a, "--json")
	if rr.code != 0 {
		t.Fatalf("rebuild: %s", rr)
	}
	if profB := must(t, b, "", "profile", "--json"); profB != profA {
		t.Fatalf("profile on B differs:\n%s\nA:\n%s", profB, profA)
	}
	if da, db := digests(t, a.dir), digests(t, b); fmt.Sprint(da) != fmt.Sprint(db) {
		t.Fatalf("digests differ:\nA %v\nB %v", da, db)
	}
	if r := must(t, b, "", "replay", "--include-tombstoned"); strings.Contains(r, "peanuts") {
		t.Fatal("the forgotten fact is readable on the rebuilt device")
	}
	if hits := filesHolding(t, b, [][]byte{[]byte("peanuts")}); len(hits) > 0 {
		t.Fatalf("rebuilt device: %v", hits)
	}
	if len(m.requests()) != calls {
		t.Fatal("the model was asked during the rebuild")
	}
}

// The owner consolidates on its own when [consolidate] every is set.
func TestConsolidateScheduleE2E(t *testing.T) {
	t.Parallel()
	m := newFactModel(t)
	dir := newStore(t)
	must(t, dir, "I prefer aisle seats.", "store", "--session", "s1")
	srv := startServe(t, dir, []string{"UCL_CONSOLIDATE_MODEL=fake-facts", "UCL_CONSOLIDATE_EVERY=100ms"}, "--upstream", m.srv.URL+"/v1")
	// Wait for the owner's first run (no time is asserted: a slow
	// machine only waits longer, up to the test's own deadline).
	for m.consolidations() == 0 {
		select {
		case err := <-srv.done:
			t.Fatalf("serve exited: %v\n%s", err, srv.stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	for !strings.Contains(must(t, dir, "", "profile"), "The user prefers aisle seats.") {
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(srv.stderr.String(), "consolidating every 100ms") {
		t.Fatalf("serve log: %s", srv.stderr.String())
	}
}
