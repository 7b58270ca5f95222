package mcpserver

// uc_profile and uc_consolidate through the SDK's in-memory transport,
// against a real store whose model is a recording stand-in speaking the
// OpenAI chat-completions protocol.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/consolidate"
	"github.com/unlimitedcontext/ucl/log"
)

// chatModel is an OpenAI chat-completions server: it records each
// request's input and answers with the facts answer returns for it.
type chatModel struct {
	srv    *httptest.Server
	mu     sync.Mutex
	inputs []consolidate.Input
	auth   []string
	answer func(in consolidate.Input) consolidate.Output
	// failFrom > 0: the failFrom-th request and later answer 500.
	failFrom int
}

func newChatModel(t *testing.T, answer func(consolidate.Input) consolidate.Output) *chatModel {
	m := &chatModel{answer: answer}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		var in consolidate.Input
		if json.Unmarshal(body, &req) != nil || len(req.Messages) != 2 || json.Unmarshal([]byte(req.Messages[1].Content), &in) != nil {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		m.mu.Lock()
		m.inputs = append(m.inputs, in)
		m.auth = append(m.auth, r.Header.Get("Authorization"))
		fail := m.failFrom > 0 && len(m.inputs) >= m.failFrom
		m.mu.Unlock()
		if fail {
			http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusInternalServerError)
			return
		}
		out := m.answer(in)
		for i := range out.Facts {
			if out.Facts[i].Supersedes == nil {
				out.Facts[i].Supersedes = []string{}
			}
		}
		content, _ := json.Marshal(out)
		c, _ := json.Marshal(string(content))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"fake","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":%s}}]}`, c)
	}))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *chatModel) requests() []consolidate.Input {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]consolidate.Input(nil), m.inputs...)
}

// newEnvOpts is newEnv over a store opened with opts.
func newEnvOpts(t *testing.T, opts ucl.Options) *env {
	t.Helper()
	w, err := testWallet()
	if err != nil {
		t.Fatal(err)
	}
	st, err := ucl.Init(t.TempDir(), ucl.InitOptions{Durability: log.None, Wallet: w, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
	logs := &syncBuf{}
	srv := New(st, Options{Log: logs, Now: func() time.Time { return now }, Version: "test"})
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

// TestConsolidateNoModel: without a configured model uc_consolidate is a
// tool error saying so, and nothing is written.
func TestConsolidateNoModel(t *testing.T) {
	e := newEnv(t)
	e.storeIDs(obj{"content": "I always prefer aisle seats.", "session": "trip", "role": "user"})
	head := e.head()
	e.fails("uc_consolidate", obj{}, "no model configured: nothing was sent or stored")
	if e.head() != head {
		t.Fatal("a refused uc_consolidate wrote to the log")
	}
	out, text := ok[ProfileOut](e, "uc_profile", obj{})
	if len(out.Profiles) != 0 || !strings.Contains(text, "no profile yet") {
		t.Fatalf("profile on a store without one: %+v %q", out, text)
	}
}

// TestConsolidateThenProfile: uc_consolidate stores the fact its source
// supports, refuses the invented one, and uc_profile then shows the fact
// with the id of the turn it comes from; a second run sends nothing.
func TestConsolidateThenProfile(t *testing.T) {
	const key = "sk-test-mcp-consolidate"
	m := newChatModel(t, func(in consolidate.Input) consolidate.Output {
		var src string
		for _, tn := range in.Turns {
			if strings.Contains(tn.Content, "prefer aisle") {
				src = tn.ID
			}
		}
		return consolidate.Output{Facts: []consolidate.Fact{
			{Subject: "user", Text: "The user prefers aisle seats.", Sources: []string{src}},
			{Subject: "user", Text: "The user is allergic to peanuts.", Sources: []string{src}},
		}}
	})
	e := newEnvOpts(t, ucl.Options{Consolidate: ucl.ConsolidateOptions{Endpoint: m.srv.URL + "/v1", Model: "fake-model", APIKey: key}})
	turn := e.storeIDs(obj{"content": "Please book me an aisle seat, I always prefer aisle seats.", "session": "trip", "role": "user"})[0]
	e.storeIDs(obj{"content": "Noted: an aisle seat on the flight to Berlin.", "session": "trip", "role": "assistant"})

	e.fails("uc_consolidate", obj{"session": "nope"}, "no session")
	e.fails("uc_consolidate", obj{"since": "not a time"}, "since")
	if len(m.requests()) != 0 {
		t.Fatal("a refused call reached the model")
	}

	out, text := ok[ConsolidateOut](e, "uc_consolidate", obj{})
	if len(m.requests()) != 1 || m.auth[0] != "Bearer "+key {
		t.Fatalf("model requests %d, auth %v", len(m.requests()), m.auth)
	}
	if out.Model != "fake-model" || out.Turns != 2 || out.StoredCount != 1 || out.RefusedCount != 1 || len(out.Stored) != 1 || len(out.Refused) != 1 {
		t.Fatalf("report %+v", out)
	}
	fact := out.Stored[0]
	if fact.Text != "The user prefers aisle seats." || strings.Join(fact.Sources, ",") != turn || fact.ID == "" {
		t.Fatalf("stored %+v (source turn %s)", fact, turn)
	}
	if !strings.Contains(out.Refused[0].Text, "peanuts") || out.Refused[0].Reason == "" {
		t.Fatalf("refused %+v", out.Refused)
	}
	if strings.Join(out.Profiles, ",") != "user" {
		t.Fatalf("profiles %v", out.Profiles)
	}
	for _, want := range []string{"stored 1 fact(s), refused 1", "The user prefers aisle seats.", "sources " + turn, "refused (not stored)", "peanuts"} {
		if !strings.Contains(text, want) {
			t.Errorf("report text lacks %q:\n%s", want, text)
		}
	}

	prof, ptext := ok[ProfileOut](e, "uc_profile", obj{})
	if len(prof.Profiles) != 1 || prof.Profiles[0].Subject != "user" || len(prof.Profiles[0].Facts) != 1 {
		t.Fatalf("profile %+v", prof)
	}
	pf := prof.Profiles[0].Facts[0]
	if pf.ID != fact.ID || pf.Text != fact.Text || strings.Join(pf.Sources, ",") != turn {
		t.Fatalf("profile fact %+v, stored %+v", pf, fact)
	}
	if !strings.Contains(ptext, "## user") || !strings.Contains(ptext, "fact "+fact.ID+"; sources "+turn) || strings.Contains(ptext, "peanuts") {
		t.Fatalf("profile text:\n%s", ptext)
	}
	if p, _ := ok[ProfileOut](e, "uc_profile", obj{"subject": "someone else"}); len(p.Profiles) != 0 {
		t.Fatalf("subject filter: %+v", p)
	}

	// Every turn is consolidated: a second run sends nothing, stores nothing.
	head := e.head()
	again, text := ok[ConsolidateOut](e, "uc_consolidate", obj{})
	if len(m.requests()) != 1 || e.head() != head || again.StoredCount != 0 || !strings.Contains(text, "nothing to consolidate") {
		t.Fatalf("second run: %d requests, head %d→%d, %+v %q", len(m.requests()), head, e.head(), again, text)
	}
}

// TestDerivedResultsBounded: a run or a profile larger than the result
// bound is cut, what is left out counted, whole facts only.
func TestDerivedResultsBounded(t *testing.T) {
	long := strings.Repeat("the user likes long sentences about seats ", 11) // ~470 bytes
	res := &ucl.ConsolidateResult{Model: "m", Calls: []ucl.ConsolidateCall{{Turns: 40}}}
	for i := range 2500 {
		res.Stored = append(res.Stored, ucl.DerivedFact{ID: fmt.Sprintf("f%04d", i), Subject: "user", Text: long, Sources: []string{"t1", "t2"}})
	}
	out := consolidateOut(res)
	if out.StoredCount != 2500 || out.Omitted == 0 || len(out.Stored)+out.Omitted != 2500 {
		t.Fatalf("stored %d listed, %d omitted of %d", len(out.Stored), out.Omitted, out.StoredCount)
	}
	text := renderConsolidate(out)
	b, _ := json.Marshal(out)
	if len(text) > MaxResultBytes || len(b) > MaxResultBytes {
		t.Fatalf("consolidate result: text %d, structured %d bytes; bound %d", len(text), len(b), MaxResultBytes)
	}
	if !strings.Contains(text, fmt.Sprintf("[%d fact(s) not listed", out.Omitted)) {
		t.Fatalf("no omission marker in %q", text[len(text)-200:])
	}

	pr := &ucl.ProfileResult{}
	for s := range 300 {
		p := ucl.Profile{ID: fmt.Sprintf("p%03d", s), Subject: fmt.Sprintf("subject %03d", s)}
		for i := range 100 {
			p.Facts = append(p.Facts, ucl.ProfileFactItem{ID: fmt.Sprintf("f%03d-%03d", s, i), Text: long, Sources: []string{"t1"}})
		}
		pr.Profiles = append(pr.Profiles, p)
	}
	po := profileOut(pr)
	pb, _ := json.Marshal(po)
	if len(pb) > MaxResultBytes {
		t.Fatalf("profile structured content %d bytes; bound %d", len(pb), MaxResultBytes)
	}
	if len(po.Profiles) == 0 || po.Profiles[0].MoreFacts == 0 || po.MoreCount != 300-len(po.Profiles) || len(po.MoreSubjects) != maxMoreSubjects {
		t.Fatalf("profiles %d (first: %d facts, %d more), more subjects %d named %d", len(po.Profiles), len(po.Profiles[0].Facts), po.Profiles[0].MoreFacts, po.MoreCount, len(po.MoreSubjects))
	}
}

// TestConsolidateStopsMidRun: when a later request of a run fails, the
// facts of the earlier ones stay stored and the tool error reports both.
func TestConsolidateStopsMidRun(t *testing.T) {
	m := newChatModel(t, func(in consolidate.Input) consolidate.Output {
		var out consolidate.Output
		for _, tn := range in.Turns {
			if strings.Contains(tn.Content, "prefer aisle") {
				out.Facts = append(out.Facts, consolidate.Fact{Subject: "user", Text: "The user prefers aisle seats.", Sources: []string{tn.ID}})
			}
		}
		return out
	})
	m.failFrom = 2
	e := newEnvOpts(t, ucl.Options{Consolidate: ucl.ConsolidateOptions{Endpoint: m.srv.URL + "/v1", Model: "fake-model"}})
	ctx := context.Background()
	// One request carries ucl.DefaultConsolidateTurns turns: the second
	// request has the rest.
	for i := range ucl.DefaultConsolidateTurns + 5 {
		content := fmt.Sprintf("Turn %d about the weather in general.", i)
		if i == 0 {
			content = "I always prefer aisle seats."
		}
		if _, err := e.store.Remember(ctx, ucl.RememberRequest{Session: "trip", Role: "user", Content: content}); err != nil {
			t.Fatal(err)
		}
	}
	res := e.call("uc_consolidate", obj{})
	text := resultText(res)
	if !res.IsError || len(m.requests()) != 2 {
		t.Fatalf("%d model requests, tool error %v: %s", len(m.requests()), res.IsError, text)
	}
	for _, want := range []string{"stored 1 fact(s)", "The user prefers aisle seats.", "The run stopped", "500"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	prof, _ := ok[ProfileOut](e, "uc_profile", obj{})
	if len(prof.Profiles) != 1 || len(prof.Profiles[0].Facts) != 1 {
		t.Fatalf("the first request's fact is not stored: %+v", prof)
	}
}
