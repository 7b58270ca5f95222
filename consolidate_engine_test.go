package ucl

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/consolidate"
)

// fakeModel is an OpenAI chat-completions server: it records every request
// and answers each from the next scripted reply (the last one repeats).
type fakeModel struct {
	srv *httptest.Server
	mu  sync.Mutex
	log []modelRequest
	// replies answer in turn; a reply gets the request's input.
	replies []func(w http.ResponseWriter, in consolidate.Input)
}

type modelRequest struct {
	Auth string
	Body []byte
	Req  struct {
		Model          string `json:"model"`
		ResponseFormat struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Name   string          `json:"name"`
				Strict bool            `json:"strict"`
				Schema json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	Input consolidate.Input
}

func newFakeModel(t *testing.T) *fakeModel {
	m := &fakeModel{}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var mr modelRequest
		mr.Auth, mr.Body = r.Header.Get("Authorization"), body
		if err := json.Unmarshal(body, &mr.Req); err != nil || len(mr.Req.Messages) != 2 {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		json.Unmarshal([]byte(mr.Req.Messages[1].Content), &mr.Input)
		m.mu.Lock()
		m.log = append(m.log, mr)
		var reply func(http.ResponseWriter, consolidate.Input)
		if len(m.replies) > 0 {
			reply = m.replies[0]
			if len(m.replies) > 1 {
				m.replies = m.replies[1:]
			}
		}
		m.mu.Unlock()
		if reply == nil {
			answer(w, `{"facts":[]}`)
			return
		}
		reply(w, mr.Input)
	}))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *fakeModel) script(replies ...func(http.ResponseWriter, consolidate.Input)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.replies = replies
}

func (m *fakeModel) requests() []modelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]modelRequest(nil), m.log...)
}

func (m *fakeModel) url() string { return m.srv.URL + "/v1" }

// answer writes a chat completion whose message content is content.
func answer(w http.ResponseWriter, content string) {
	answerFinish(w, content, "stop")
}

func answerFinish(w http.ResponseWriter, content, finish string) {
	c, _ := json.Marshal(content)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"fake","choices":[{"index":0,"finish_reason":%q,"message":{"role":"assistant","content":%s}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":1}}`, finish, c)
}

// facts replies with these facts.
func facts(fs ...consolidate.Fact) func(http.ResponseWriter, consolidate.Input) {
	return func(w http.ResponseWriter, _ consolidate.Input) {
		for i := range fs {
			if fs[i].Supersedes == nil {
				fs[i].Supersedes = []string{}
			}
		}
		out := consolidate.Output{Facts: append([]consolidate.Fact{}, fs...)}
		b, _ := json.Marshal(out)
		answer(w, string(b))
	}
}

func raw(status int, body string) func(http.ResponseWriter, consolidate.Input) {
	return func(w http.ResponseWriter, _ consolidate.Input) {
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

const testModelKey = "sk-test-CONSOLIDATE-key-never-stored"

// newConsolidateStore is a store whose model is m.
func newConsolidateStore(t *testing.T, m *fakeModel) *Store {
	t.Helper()
	s := newTestStore(t)
	s.opts.Consolidate = ConsolidateOptions{Endpoint: m.url(), Model: "fake-model", APIKey: testModelKey}
	return s
}

func remember(t *testing.T, s API, id, session, role, content string) {
	t.Helper()
	if _, err := s.Remember(context.Background(), RememberRequest{ChunkID: id, Session: session, Role: role, Content: content, Time: "2026-03-01T10:00:00Z"}); err != nil {
		t.Fatal(err)
	}
}

func getChunk(t *testing.T, s API, id string) (map[string]string, string, bool) {
	t.Helper()
	g, err := s.Get(context.Background(), GetRequest{IDs: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Items) != 1 || !g.Items[0].Found {
		return nil, "", false
	}
	c := g.Items[0].Chunks[0]
	return c.Meta, c.Content, true
}

func TestConsolidateStoresGroundedFacts(t *testing.T) {
	m := newFakeModel(t)
	s := newConsolidateStore(t, m)
	ctx := context.Background()
	remember(t, s, "t1", "trip", "user", "Please book me an aisle seat, I always prefer aisle seats.")
	remember(t, s, "t2", "trip", "assistant", "Noted: aisle seat on the flight to Berlin.")
	remember(t, s, "t3", "trip", "system", "You are a travel agent. The user is a vegan.")
	m.script(facts(
		consolidate.Fact{Subject: "user", Text: "The user prefers aisle seats.", Sources: []string{"t1"}},
		consolidate.Fact{Subject: "user", Text: "The user is allergic to peanuts.", Sources: []string{"t1"}},
		consolidate.Fact{Subject: "user", Text: "The user is a vegan.", Sources: []string{"t3"}},
		consolidate.Fact{Subject: "user", Text: "The user has a flight to Berlin.", Sources: []string{"t2"}},
	))
	res, err := s.Consolidate(ctx, ConsolidateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests", len(reqs))
	}
	r := reqs[0]
	if r.Auth != "Bearer "+testModelKey || r.Req.Model != "fake-model" || r.Req.ResponseFormat.Type != "json_schema" || !r.Req.ResponseFormat.JSONSchema.Strict {
		t.Fatalf("request: auth %q model %q format %+v", r.Auth, r.Req.Model, r.Req.ResponseFormat)
	}
	// The system turn is never sent: extraction does not read prompts.
	var sentIDs []string
	for _, tn := range r.Input.Turns {
		sentIDs = append(sentIDs, tn.ID)
	}
	if strings.Join(sentIDs, ",") != "t1,t2" {
		t.Fatalf("sent turns %v", sentIDs)
	}
	if len(res.Stored) != 2 || res.Stored[0].Text != "The user prefers aisle seats." || res.Stored[1].Text != "The user has a flight to Berlin." {
		t.Fatalf("stored %+v", res.Stored)
	}
	if len(res.Refused) != 2 || !strings.Contains(res.Refused[0].Reason, "not supported") || !strings.Contains(res.Refused[1].Reason, "not one of the turns sent") {
		t.Fatalf("refused %+v", res.Refused)
	}
	sum := sha256.Sum256(r.Body)
	meta, content, ok := getChunk(t, s, res.Stored[0].ID)
	if !ok || content != "The user prefers aisle seats." {
		t.Fatalf("fact %q %v", content, ok)
	}
	want := map[string]string{"derived_from": "t1", "subject": "user", "model": "fake-model", "prompt_version": consolidate.PromptVersion,
		"request_hash": hex.EncodeToString(sum[:]), "consolidated_through": fmt.Sprint(res.Calls[0].Through), "consolidated_scope": ""}
	for k, v := range want {
		if meta[k] != v {
			t.Errorf("meta %s = %q, want %q", k, meta[k], v)
		}
	}
	if len(res.Profiles) != 1 {
		t.Fatalf("profiles %+v", res.Profiles)
	}
	_, prof, _ := getChunk(t, s, res.Profiles[0].ID)
	if !strings.Contains(prof, "The user prefers aisle seats. [fact "+res.Stored[0].ID+"; sources t1]") || strings.Contains(prof, "peanuts") {
		t.Fatalf("profile %q", prof)
	}
	// The key is nowhere in the store.
	if hits := walkBytes(t, s.Dir(), []byte(testModelKey)); len(hits) > 0 {
		t.Fatalf("API key in %v", hits)
	}
	for _, e := range replayAll(t, s) {
		if strings.Contains(fmt.Sprint(e), testModelKey) {
			t.Fatal("API key in the log")
		}
	}
}

func TestConsolidateBadOutputStoresNothing(t *testing.T) {
	good := `{"facts":[{"subject":"user","text":"The user prefers aisle seats.","sources":["t1"],"supersedes":[]}]}`
	cases := []struct {
		name  string
		reply func(http.ResponseWriter, consolidate.Input)
		want  error
	}{
		{"not json", func(w http.ResponseWriter, _ consolidate.Input) { answer(w, `the user likes aisle seats`) }, consolidate.ErrMalformed},
		{"truncated json", func(w http.ResponseWriter, _ consolidate.Input) { answer(w, good[:len(good)-20]) }, consolidate.ErrMalformed},
		{"unknown field", func(w http.ResponseWriter, _ consolidate.Input) {
			answer(w, strings.Replace(good, `"supersedes":[]`, `"supersedes":[],"confidence":0.9`, 1))
		}, consolidate.ErrMalformed},
		{"missing field", func(w http.ResponseWriter, _ consolidate.Input) {
			answer(w, strings.Replace(good, `,"supersedes":[]`, ``, 1))
		}, consolidate.ErrMalformed},
		{"one good one empty", func(w http.ResponseWriter, _ consolidate.Input) {
			answer(w, strings.Replace(good, `]}`, `,{"subject":"","text":"","sources":["t1"],"supersedes":[]}]}`, 1))
		}, consolidate.ErrMalformed},
		{"finish length", func(w http.ResponseWriter, _ consolidate.Input) { answerFinish(w, good, "length") }, consolidate.ErrPartial},
		{"refusal", func(w http.ResponseWriter, _ consolidate.Input) {
			io.WriteString(w, `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":null,"refusal":"I cannot"}}]}`)
		}, consolidate.ErrPartial},
		{"two choices", func(w http.ResponseWriter, _ consolidate.Input) {
			c, _ := json.Marshal(good)
			fmt.Fprintf(w, `{"choices":[{"finish_reason":"stop","message":{"content":%s}},{"finish_reason":"stop","message":{"content":%s}}]}`, c, c)
		}, consolidate.ErrMalformed},
		{"5xx", raw(http.StatusInternalServerError, `{"error":{"message":"upstream exploded"}}`), consolidate.ErrUpstream},
		{"429", raw(http.StatusTooManyRequests, `{"error":{"message":"slow down"}}`), consolidate.ErrUpstream},
		{"too large", func(w http.ResponseWriter, _ consolidate.Input) {
			answer(w, `{"facts":[]`+strings.Repeat(" ", consolidate.MaxResponseBytes)+`}`)
		}, consolidate.ErrMalformed},
		{"timeout", func(w http.ResponseWriter, _ consolidate.Input) {
			w.(http.Flusher).Flush()
			time.Sleep(2 * time.Second) // longer than the store's timeout below
		}, context.DeadlineExceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newFakeModel(t)
			s := newConsolidateStore(t, m)
			// Only the timeout case needs a short bound; the others get one a
			// loaded -race run cannot reach (a 300 ms bound once cut off the
			// too-large reply mid-read and turned ErrMalformed into a timeout).
			s.opts.Consolidate.Timeout = 30 * time.Second
			if tc.want == context.DeadlineExceeded {
				s.opts.Consolidate.Timeout = 300 * time.Millisecond
			}
			remember(t, s, "t1", "trip", "user", "I always prefer aisle seats.")
			head := headSeq(s)
			m.script(tc.reply)
			res, err := s.Consolidate(context.Background(), ConsolidateRequest{})
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if strings.Contains(err.Error(), testModelKey) {
				t.Fatal("the key is in the error")
			}
			if headSeq(s) != head || len(res.Stored) != 0 || len(res.Calls) != 1 || res.Calls[0].Error == "" {
				t.Fatalf("head %d -> %d, result %+v", head, headSeq(s), res)
			}
			// The turns are still pending: the next (good) answer stores.
			m.script(facts(consolidate.Fact{Subject: "user", Text: "The user prefers aisle seats.", Sources: []string{"t1"}}))
			res, err = s.Consolidate(context.Background(), ConsolidateRequest{})
			if err != nil || len(res.Stored) != 1 {
				t.Fatalf("after a good answer: %v %+v", err, res)
			}
		})
	}
}

func TestConsolidateNoModel(t *testing.T) {
	m := newFakeModel(t)
	s := newTestStore(t)
	remember(t, s, "t1", "trip", "user", "I always prefer aisle seats.")
	head := headSeq(s)
	_, err := s.Consolidate(context.Background(), ConsolidateRequest{})
	if !errors.Is(err, consolidate.ErrNoModel) {
		t.Fatalf("err %v", err)
	}
	if len(m.requests()) != 0 || headSeq(s) != head {
		t.Fatal("something was sent or stored")
	}
	// Through the socket the error keeps its identity.
	c := serve(t, s)
	if _, err := c.Consolidate(context.Background(), ConsolidateRequest{}); !errors.Is(err, consolidate.ErrNoModel) {
		t.Fatalf("attached: %v", err)
	}
}

func TestConsolidateRerunAddsNothing(t *testing.T) {
	m := newFakeModel(t)
	s := newConsolidateStore(t, m)
	ctx := context.Background()
	remember(t, s, "t1", "trip", "user", "I always prefer aisle seats.")
	aisle := consolidate.Fact{Subject: "user", Text: "The user prefers aisle seats.", Sources: []string{"t1"}}
	m.script(facts(aisle))
	if res, err := s.Consolidate(ctx, ConsolidateRequest{}); err != nil || len(res.Stored) != 1 {
		t.Fatalf("%v %+v", err, res)
	}
	head := headSeq(s)
	// Nothing new: no request, nothing stored.
	res, err := s.Consolidate(ctx, ConsolidateRequest{})
	if err != nil || len(res.Calls) != 0 || headSeq(s) != head || len(m.requests()) != 1 {
		t.Fatalf("rerun: %v %+v head %d->%d", err, res, head, headSeq(s))
	}
	// A new turn that says the same: the fact is a duplicate, not stored.
	remember(t, s, "t2", "trip", "user", "Remember: I prefer aisle seats.")
	head = headSeq(s)
	m.script(facts(consolidate.Fact{Subject: "user", Text: "The user prefers aisle seats.", Sources: []string{"t2"}}))
	res, err = s.Consolidate(ctx, ConsolidateRequest{})
	if err != nil || len(res.Stored) != 0 || len(res.Duplicates) != 1 || headSeq(s) != head {
		t.Fatalf("duplicate: %v %+v", err, res)
	}
	// ... and t2 is not offered again.
	res, err = s.Consolidate(ctx, ConsolidateRequest{})
	if err != nil || len(res.Calls) != 0 || len(m.requests()) != 2 {
		t.Fatalf("after a duplicate: %v %+v", err, res)
	}
}

func TestConsolidateSupersedesWithHistory(t *testing.T) {
	m := newFakeModel(t)
	s := newConsolidateStore(t, m)
	ctx := context.Background()
	remember(t, s, "t1", "life", "user", "I live in Lisbon.")
	m.script(facts(consolidate.Fact{Subject: "user", Text: "The user lives in Lisbon.", Sources: []string{"t1"}}))
	r1, err := s.Consolidate(ctx, ConsolidateRequest{})
	if err != nil || len(r1.Stored) != 1 {
		t.Fatalf("%v %+v", err, r1)
	}
	lisbon := r1.Stored[0].ID
	remember(t, s, "t2", "life", "user", "I moved to Berlin in March.")
	m.script(func(w http.ResponseWriter, in consolidate.Input) {
		if len(in.Known) != 1 || in.Known[0].ID != lisbon || len(in.Turns) != 1 || in.Turns[0].ID != "t2" {
			raw(http.StatusBadRequest, "unexpected input")(w, in)
			return
		}
		facts(consolidate.Fact{Subject: "user", Text: "The user moved to Berlin in March.", Sources: []string{"t2"}, Supersedes: []string{lisbon}})(w, in)
	})
	r2, err := s.Consolidate(ctx, ConsolidateRequest{})
	if err != nil || len(r2.Stored) != 1 || len(r2.Profiles) != 1 {
		t.Fatalf("%v %+v", err, r2)
	}
	// The old fact is kept (history) and marked superseded; the profile
	// shows the new one only, and supersedes the old profile.
	res, err := s.Search(ctx, SearchRequest{Text: "Lisbon Berlin", Kinds: []string{"knowledge"}, IncludeSuperseded: true})
	if err != nil {
		t.Fatal(err)
	}
	var sawOld bool
	for _, h := range res.Results {
		if h.ChunkID == lisbon {
			sawOld = len(h.SupersededBy) == 1 && h.SupersededBy[0] == r2.Stored[0].ID
		}
	}
	if !sawOld {
		t.Fatalf("old fact not marked superseded: %+v", res.Results)
	}
	_, prof, _ := getChunk(t, s, r2.Profiles[0].ID)
	if strings.Contains(prof, "Lisbon") || !strings.Contains(prof, "Berlin") {
		t.Fatalf("profile %q", prof)
	}
	if _, old, ok := getChunk(t, s, r1.Profiles[0].ID); !ok || !strings.Contains(old, "Lisbon") {
		t.Fatalf("old profile gone: %q", old)
	}
	// Superseding a fact the model was not shown is refused.
	remember(t, s, "t3", "life", "user", "I moved to Paris in May.")
	m.script(facts(consolidate.Fact{Subject: "user", Text: "The user moved to Paris in May.", Sources: []string{"t3"}, Supersedes: []string{"t1"}}))
	r3, err := s.Consolidate(ctx, ConsolidateRequest{})
	if err != nil || len(r3.Refused) != 1 || !strings.Contains(r3.Refused[0].Reason, "not a current fact") {
		t.Fatalf("%v %+v", err, r3)
	}
}

// seedDerived stores three turns and consolidates them into F1 (peanuts,
// from t1 alone) and F2 (aisle seats, from t2 and t3), with profile P1.
func seedDerived(t *testing.T, s *Store, m *fakeModel) (f1, f2, p1 string) {
	t.Helper()
	remember(t, s, "t1", "trip", "user", "I am allergic to peanuts.")
	remember(t, s, "t2", "trip", "user", "I prefer aisle seats.")
	remember(t, s, "t3", "trip2", "user", "Aisle seats please, I always prefer them.")
	m.script(facts(
		consolidate.Fact{Subject: "user", Text: "The user is allergic to peanuts.", Sources: []string{"t1"}},
		consolidate.Fact{Subject: "user", Text: "The user prefers aisle seats.", Sources: []string{"t2", "t3"}},
	))
	res, err := s.Consolidate(context.Background(), ConsolidateRequest{})
	if err != nil || len(res.Stored) != 2 || len(res.Profiles) != 1 {
		t.Fatalf("%v %+v", err, res)
	}
	return res.Stored[0].ID, res.Stored[1].ID, res.Profiles[0].ID
}

// noText fails when text is in a search, a context, a profile or the
// replay of s.
func noText(t *testing.T, s *Store, text string) {
	t.Helper()
	ctx := context.Background()
	r, err := s.Search(ctx, SearchRequest{Text: text, K: 50})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range r.Results {
		if strings.Contains(strings.ToLower(h.Content), text) {
			t.Fatalf("search finds %q in %s: %q", text, h.ChunkID, h.Content)
		}
	}
	c, err := s.Context(ctx, ContextRequest{SearchRequest: SearchRequest{Text: text}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToLower(c.Context), text) {
		t.Fatalf("context has %q: %s", text, c.Context)
	}
	err = s.Replay(ctx, ReplayRequest{}, func(b json.RawMessage) error {
		if strings.Contains(strings.ToLower(string(b)), text) {
			return fmt.Errorf("replay has %q: %s", text, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := s.Profile(ctx, ProfileRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range cs.Profiles {
		if strings.Contains(strings.ToLower(p.Content), text) {
			t.Fatalf("profile has %q: %s", text, p.Content)
		}
	}
}

func TestTombstoneCascadesToDerived(t *testing.T) {
	m := newFakeModel(t)
	s := newConsolidateStore(t, m)
	ctx := context.Background()
	f1, f2, p1 := seedDerived(t, s, m)
	f1Seq := headSeq(s) - 2

	// Forget t1: F1 (its only source) and P1 (lists F1) go in the same
	// batch; F2 stays; a new profile lists F2 alone.
	tr, err := s.Tombstone(ctx, TombstoneRequest{Chunks: []string{"t1"}, Reason: "user asked"})
	if err != nil {
		t.Fatal(err)
	}
	d := tr.Derived
	if d == nil || len(d.Remove) != 2 || d.Remove[0].ID != f1 || d.Remove[1].ID != p1 || len(d.Rewire) != 0 || len(d.Profiles) != 1 {
		t.Fatalf("cascade %+v", d)
	}
	if headSeq(s) != tr.Seq+3 { // tombstone, F1's tombstone, P1's tombstone, new profile
		t.Fatalf("head %d after tombstone %d", headSeq(s), tr.Seq)
	}
	if _, _, ok := getChunk(t, s, f1); ok {
		t.Fatal("F1 still live")
	}
	if _, _, ok := getChunk(t, s, f2); !ok {
		t.Fatal("F2 gone")
	}
	noText(t, s, "peanuts")
	profs, err := s.Profile(ctx, ProfileRequest{Subject: "user"})
	if err != nil || len(profs.Profiles) != 1 || !strings.Contains(profs.Profiles[0].Content, "aisle") {
		t.Fatalf("profiles %+v %v", profs, err)
	}
	// The audit trail says where F1 came from and why it went.
	show, err := s.AuditShow(ctx, AuditShowRequest{Seq: f1Seq})
	if err != nil || show.TombstonedBy != tr.Seq+1 {
		t.Fatalf("audit show F1: %+v %v", show, err)
	}
	why, err := s.AuditShow(ctx, AuditShowRequest{Seq: show.TombstonedBy})
	if err != nil || !strings.Contains(string(why.Event), "every source was forgotten (derived from t1; forgotten with tombstone "+tr.ID.String()) {
		t.Fatalf("audit show of the cascade: %s %v", why.Event, err)
	}

	// Forget t2: F2 keeps t3, which supports it: an edit drops the citation.
	tr2, err := s.Tombstone(ctx, TombstoneRequest{Chunks: []string{"t2"}})
	if err != nil {
		t.Fatal(err)
	}
	if d := tr2.Derived; d == nil || len(d.Remove) != 0 || len(d.Rewire) != 1 || d.Rewire[0].ID != f2 ||
		strings.Join(d.Rewire[0].Sources, ",") != "t3" || strings.Join(d.Rewire[0].Dropped, ",") != "t2" {
		t.Fatalf("cascade 2 %+v", tr2.Derived)
	}
	meta, _, _ := getChunk(t, s, f2)
	if meta["derived_from"] != "t3" || meta["dropped_sources"] != "t2" {
		t.Fatalf("F2 meta %v", meta)
	}

	// Forget session trip2 (t3): F2 and every profile listing it go, with
	// F2's edit; after a rotation no file of the store holds them.
	tr3, err := s.Tombstone(ctx, TombstoneRequest{Session: "trip2"})
	if err != nil {
		t.Fatal(err)
	}
	if d := tr3.Derived; d == nil || len(d.Remove) != 3 || len(d.Profiles) != 0 {
		t.Fatalf("cascade 3 %+v", tr3.Derived)
	}
	if profs, _ := s.Profile(ctx, ProfileRequest{}); len(profs.Profiles) != 0 {
		t.Fatalf("profiles left: %+v", profs)
	}
	noText(t, s, "aisle")
	if _, err := s.RotateKeys(ctx, RotateKeysRequest{}); err != nil {
		t.Fatal(err)
	}
	if hits := walkBytes(t, s.Dir(), []byte("peanuts"), []byte("aisle"), []byte("Aisle")); len(hits) > 0 {
		t.Fatalf("after rotation: %v", hits)
	}
	// Not even the owner's key reads them back: every version of a
	// derived item (F2's edit included) is shredded.
	for _, e := range replayAll(t, s) {
		if txt := strings.ToLower(fmt.Sprint(e)); strings.Contains(txt, "peanuts") || strings.Contains(txt, "aisle") {
			t.Fatalf("readable after rotation: %v", e)
		}
	}
}

// A fact whose remaining sources do not support it goes, even though a
// source is left.
func TestTombstoneCascadeRechecksSupport(t *testing.T) {
	m := newFakeModel(t)
	s := newConsolidateStore(t, m)
	ctx := context.Background()
	remember(t, s, "t1", "trip", "user", "I moved to Berlin in March.")
	remember(t, s, "t2", "trip", "user", "Berlin is cold.")
	m.script(facts(consolidate.Fact{Subject: "user", Text: "The user moved to Berlin in March.", Sources: []string{"t1", "t2"}}))
	res, err := s.Consolidate(ctx, ConsolidateRequest{})
	if err != nil || len(res.Stored) != 1 {
		t.Fatalf("%v %+v", err, res)
	}
	tr, err := s.Tombstone(ctx, TombstoneRequest{Chunks: []string{"t1"}})
	if err != nil {
		t.Fatal(err)
	}
	if d := tr.Derived; d == nil || len(d.Remove) != 2 || !strings.Contains(d.Remove[0].Reason, "do not support") {
		t.Fatalf("cascade %+v", tr.Derived)
	}
	noText(t, s, "march")
}

// Rebuilding the projections, or restoring a snapshot, replays the derived
// items: the model is never asked, the digests are the same.
func TestDerivedRebuildNeverCallsModel(t *testing.T) {
	m := newFakeModel(t)
	s := newConsolidateStore(t, m)
	ctx := context.Background()
	seedDerived(t, s, m)
	if _, err := s.Tombstone(ctx, TombstoneRequest{Chunks: []string{"t2"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SnapshotCreate(ctx, SnapshotCreateRequest{}); err != nil {
		t.Fatal(err)
	}
	before, err := s.VerifyProjections(ctx, VerifyProjectionsRequest{})
	if err != nil || !before.OK {
		t.Fatalf("verify: %+v %v", before, err)
	}
	calls := len(m.requests())
	m.srv.Close() // the model is gone
	if _, err := s.RebuildProjections(ctx, RebuildProjectionsRequest{}); err != nil {
		t.Fatal(err)
	}
	after, err := s.VerifyProjections(ctx, VerifyProjectionsRequest{})
	if err != nil || !after.OK || fmt.Sprint(after.Digests) != fmt.Sprint(before.Digests) {
		t.Fatalf("after rebuild: %+v %v (before %v)", after, err, before.Digests)
	}
	if _, err := s.SnapshotRestore(ctx, SnapshotRestoreRequest{NoFallback: true}); err != nil {
		t.Fatal(err)
	}
	restored, err := s.VerifyProjections(ctx, VerifyProjectionsRequest{})
	if err != nil || fmt.Sprint(restored.Digests) != fmt.Sprint(before.Digests) {
		t.Fatalf("after restore: %+v %v", restored, err)
	}
	profs, err := s.Profile(ctx, ProfileRequest{})
	if err != nil || len(profs.Profiles) != 1 || !strings.Contains(profs.Profiles[0].Content, "peanuts") {
		t.Fatalf("profile after restore: %+v %v", profs, err)
	}
	if len(m.requests()) != calls {
		t.Fatal("the model was asked during rebuild")
	}
}

// Rotation shreds every version of a tombstoned item, its edits included
// (before, an edit event was rekeyed and read back after the rotation).
func TestRotateShredsEditsOfTombstoned(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	remember(t, s, "e1", "s", "user", "first version quokka")
	if _, err := s.Edit(ctx, EditRequest{ID: "e1", Content: "second version wombat"}); err != nil {
		t.Fatal(err)
	}
	remember(t, s, "e2", "s", "user", "stays readable")
	if _, err := s.Tombstone(ctx, TombstoneRequest{Chunks: []string{"e1"}}); err != nil {
		t.Fatal(err)
	}
	res, err := s.RotateKeys(ctx, RotateKeysRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Shredded) != 2 {
		t.Fatalf("shredded %v", res.Shredded)
	}
	var readable int
	for _, e := range replayAll(t, s) {
		txt := fmt.Sprint(e)
		if strings.Contains(txt, "quokka") || strings.Contains(txt, "wombat") {
			t.Fatalf("readable after rotation: %v", e)
		}
		if strings.Contains(txt, "stays readable") {
			readable++
		}
	}
	if readable != 1 {
		t.Fatal("the live item is not readable")
	}
}

// A tombstone given as an Append line cascades like Tombstone does, in the
// same input's batch.
func TestAppendTombstoneCascades(t *testing.T) {
	m := newFakeModel(t)
	s := newConsolidateStore(t, m)
	ctx := context.Background()
	f1, f2, _ := seedDerived(t, s, m)
	head := headSeq(s)
	res, err := s.Append(ctx, AppendRequest{JSONL: `{"type":"tombstone","chunks":["t1"],"reason":"jsonl"}` + "\n"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 1 {
		t.Fatalf("results %+v", res.Results)
	}
	if headSeq(s) != head+4 { // the tombstone, F1's, P1's, the new profile
		t.Fatalf("head %d -> %d", head, headSeq(s))
	}
	if _, _, ok := getChunk(t, s, f1); ok {
		t.Fatal("F1 outlived its source")
	}
	if _, _, ok := getChunk(t, s, f2); !ok {
		t.Fatal("F2 gone")
	}
	noText(t, s, "peanuts")
}

// The current profile opens a context, in every format, under the budget.
func TestContextOpensWithProfile(t *testing.T) {
	m := newFakeModel(t)
	s := newConsolidateStore(t, m)
	ctx := context.Background()
	f1, _, p1 := seedDerived(t, s, m)
	for _, format := range []string{"xml", "json", "text"} {
		for _, budget := range []int{60, 400} {
			c, err := s.Context(ctx, ContextRequest{SearchRequest: SearchRequest{Text: "which seat"}, Budget: budget, Format: format})
			if err != nil {
				t.Fatalf("%s %d: %v", format, budget, err)
			}
			if c.Tokens > budget {
				t.Fatalf("%s: %d tokens over the budget %d", format, c.Tokens, budget)
			}
			has := strings.Contains(c.Context, "The user is allergic to peanuts. [fact "+f1+"; sources t1]")
			if budget == 60 {
				if has {
					t.Fatalf("%s: a profile over half the budget was packed: %s", format, c.Context)
				}
				continue
			}
			switch format {
			case "xml":
				has = has && strings.HasPrefix(c.Context, "<unlimited_context>\n<profile subject=\"user\" id=\""+p1+"\">Profile of user:")
			case "json":
				var doc struct {
					Profiles []struct{ ID, Subject, Content string }
				}
				if err := json.Unmarshal([]byte(c.Context), &doc); err != nil || len(doc.Profiles) != 1 || doc.Profiles[0].ID != p1 {
					t.Fatalf("json context %v: %s", err, c.Context)
				}
				has = strings.Contains(doc.Profiles[0].Content, "The user is allergic to peanuts. [fact "+f1+"; sources t1]")
			case "text":
				has = has && strings.HasPrefix(c.Context, "Profile of user:")
			}
			if !has {
				t.Fatalf("%s context: %s", format, c.Context)
			}
		}
	}
}

// BenchmarkDerivedTombstone measures a tombstone of one turn in a store
// with 1000 derived facts (each derived from its own turn) and a profile
// listing them: the cascade reads every derived item, tombstones the fact
// and the profile and renders the profile again.
func BenchmarkDerivedTombstone(b *testing.B) {
	w, err := testWallet()
	if err != nil {
		b.Fatal(err)
	}
	s, err := Init(b.TempDir()+"/store", InitOptions{Wallet: w})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	const n = 1000
	var in strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&in, `{"type":"store","session":"s%d","role":"user","chunk_id":"t%d","content":"I visited city%04d in May."}`+"\n", i%20, i, i)
	}
	var ids []string
	for i := 0; i < n; i++ {
		fmt.Fprintf(&in, `{"type":"store","session":%q,"role":%q,"kind":"knowledge","chunk_id":"f%d","content":"The user visited city%04d in May.","meta":{"derived_from":"t%d","subject":"user"}}`+"\n",
			consolidate.Session, consolidate.Role, i, i, i)
		ids = append(ids, fmt.Sprintf("f%d", i))
	}
	fmt.Fprintf(&in, `{"type":"store","session":%q,"role":%q,"kind":"profile","chunk_id":"p","content":"Profile of user: ...","meta":{"derived_from":%q,"subject":"user"}}`+"\n",
		consolidate.Session, consolidate.Role, strings.Join(ids, ","))
	if _, err := s.Append(ctx, AppendRequest{JSONL: in.String()}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := s.Tombstone(ctx, TombstoneRequest{Chunks: []string{fmt.Sprintf("t%d", n-1-i%(n-consolidate.MaxProfileFacts))}}) // one the profile lists
		if err != nil {
			b.Fatal(err)
		}
		if res.Derived == nil || len(res.Derived.Remove) != 2 || len(res.Derived.Profiles) != 1 {
			b.Fatalf("cascade %+v", res.Derived)
		}
	}
}

// BenchmarkProfile measures Profile (read by every proxied chat) with
// 1000 derived facts.
func BenchmarkProfile(b *testing.B) {
	w, err := testWallet()
	if err != nil {
		b.Fatal(err)
	}
	s, err := Init(b.TempDir()+"/store", InitOptions{Wallet: w})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var in strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&in, `{"type":"store","session":%q,"role":%q,"kind":"knowledge","chunk_id":"f%d","content":"The user visited city%04d in May.","meta":{"derived_from":"t%d","subject":"user"}}`+"\n",
			consolidate.Session, consolidate.Role, i, i, i)
	}
	fmt.Fprintf(&in, `{"type":"store","session":%q,"role":%q,"kind":"profile","chunk_id":"p","content":"Profile of user: ...","meta":{"derived_from":"f1,f2","subject":"user"}}`+"\n", consolidate.Session, consolidate.Role)
	if _, err := s.Append(ctx, AppendRequest{JSONL: in.String()}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p, err := s.Profile(ctx, ProfileRequest{})
		if err != nil || len(p.Profiles) != 1 {
			b.Fatal(p, err)
		}
	}
}

// A run limited to a session marks only that session's turns; a run over
// every session then sends the others alone.
func TestConsolidateSessionScope(t *testing.T) {
	m := newFakeModel(t)
	s := newConsolidateStore(t, m)
	ctx := context.Background()
	remember(t, s, "a1", "s1", "user", "I prefer aisle seats.")
	remember(t, s, "b1", "s2", "user", "I am allergic to peanuts.")
	m.script(facts(consolidate.Fact{Subject: "user", Text: "The user prefers aisle seats.", Sources: []string{"a1"}}),
		facts(consolidate.Fact{Subject: "user", Text: "The user is allergic to peanuts.", Sources: []string{"b1"}}))
	if res, err := s.Consolidate(ctx, ConsolidateRequest{Session: "s1"}); err != nil || len(res.Stored) != 1 {
		t.Fatalf("%v %+v", err, res)
	}
	if res, err := s.Consolidate(ctx, ConsolidateRequest{}); err != nil || len(res.Stored) != 1 {
		t.Fatalf("%v %+v", err, res)
	}
	reqs := m.requests()
	if len(reqs) != 2 || len(reqs[0].Input.Turns) != 1 || reqs[0].Input.Turns[0].ID != "a1" ||
		len(reqs[1].Input.Turns) != 1 || reqs[1].Input.Turns[0].ID != "b1" {
		t.Fatalf("requests %+v", reqs)
	}
	// An edited turn is offered again (its new version may say more).
	if _, err := s.Edit(ctx, EditRequest{ID: "a1", Content: "I prefer aisle seats and vegan meals."}); err != nil {
		t.Fatal(err)
	}
	m.script(facts())
	if res, err := s.Consolidate(ctx, ConsolidateRequest{}); err != nil || len(res.Calls) != 1 {
		t.Fatalf("%v %+v", err, res)
	}
	if reqs := m.requests(); len(reqs[2].Input.Turns) != 1 || reqs[2].Input.Turns[0].Content != "I prefer aisle seats and vegan meals." {
		t.Fatalf("after the edit: %+v", reqs[2].Input)
	}
}

// A source forgotten while the model is answering is not cited: the fact
// is refused when its batch is checked, under the tombstone's lock.
func TestConsolidateSourceForgottenMeanwhile(t *testing.T) {
	m := newFakeModel(t)
	s := newConsolidateStore(t, m)
	ctx := context.Background()
	remember(t, s, "t1", "trip", "user", "I am allergic to peanuts.")
	asked, forgotten := make(chan struct{}), make(chan struct{})
	m.script(func(w http.ResponseWriter, in consolidate.Input) {
		close(asked)
		<-forgotten
		facts(consolidate.Fact{Subject: "user", Text: "The user is allergic to peanuts.", Sources: []string{"t1"}})(w, in)
	})
	type out struct {
		res *ConsolidateResult
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := s.Consolidate(ctx, ConsolidateRequest{})
		done <- out{res, err}
	}()
	<-asked
	if _, err := s.Tombstone(ctx, TombstoneRequest{Chunks: []string{"t1"}}); err != nil {
		t.Fatal(err)
	}
	close(forgotten)
	o := <-done
	if o.err != nil || len(o.res.Stored) != 0 || len(o.res.Refused) != 1 || !strings.Contains(o.res.Refused[0].Reason, "forgotten meanwhile") {
		t.Fatalf("%v %+v", o.err, o.res)
	}
	noText(t, s, "peanuts")
}
