package consolidate

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestCheck(t *testing.T) {
	cases := []struct {
		fact    string
		sources []string
		ok      bool
	}{
		{"The user prefers aisle seats.", []string{"I always prefer aisle seats."}, true},
		{"The user moved from Lisbon to Berlin in March.", []string{"I moved from Lisbon to Berlin in March"}, true},
		{"The user is moving to Berlin.", []string{"I moved to Berlin."}, true}, // word endings
		{"Allergic to peanuts.", []string{"I have a peanut allergy."}, true},    // allerg-, peanut
		{"The user is allergic to shellfish.", []string{"I am allergic to peanuts."}, false},
		{"The user lives in Paris.", []string{"I live in Berlin."}, false}, // a name missing
		{"The user has 3 cats.", []string{"I have 2 cats."}, false},        // a number missing
		{"The user earns 1,000 euros.", []string{"I earn 1000 euros a month"}, true},
		{"Bob is the user's manager.", []string{"my manager is bob"}, true}, // the first word: not a name unless capitalised in the source
		{"Bob is the user's manager.", []string{"My manager Alice"}, false},
		{"The user.", []string{"I am here."}, false},                                         // no key term
		{"Prefers window seats and vegan meals.", []string{"I prefer window seats."}, false}, // 3 of 5 terms
	}
	for _, c := range cases {
		got := Check(c.fact, c.sources)
		if got.OK != c.ok {
			t.Errorf("Check(%q, %q) = %+v, want ok %v", c.fact, c.sources, got, c.ok)
		}
		if !got.OK && got.Reason == "" {
			t.Errorf("Check(%q): refused without a reason", c.fact)
		}
	}
}

func TestParseOutput(t *testing.T) {
	good := `{"facts":[{"subject":"user","text":"x y","sources":["a"],"supersedes":[]}]}`
	out, err := ParseOutput([]byte(good))
	if err != nil || len(out.Facts) != 1 || out.Facts[0].Sources[0] != "a" {
		t.Fatalf("%+v %v", out, err)
	}
	if out, err := ParseOutput([]byte(`{"facts":[]}`)); err != nil || len(out.Facts) != 0 {
		t.Fatalf("empty: %+v %v", out, err)
	}
	bad := []string{
		``, `[]`, `{}`, `{"facts":null}`, `{"facts":[]} {}`, `{"facts":[],"more":1}`,
		`{"facts":[{"subject":"user","text":"x","sources":["a"]}]}`,
		`{"facts":[{"subject":"user","text":"x","sources":[],"supersedes":[]}]}`,
		`{"facts":[{"subject":" ","text":"x","sources":["a"],"supersedes":[]}]}`,
		`{"facts":[{"subject":"user","text":"` + strings.Repeat("x", MaxFactRunes+1) + `","sources":["a"],"supersedes":[]}]}`,
		`{"facts":[{"subject":"user","text":"x","sources":"a","supersedes":[]}]}`,
	}
	for _, b := range bad {
		if _, err := ParseOutput([]byte(b)); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseOutput(%.60q) = %v, want ErrMalformed", b, err)
		}
	}
}

func TestParseResponse(t *testing.T) {
	cases := []struct {
		body string
		want error
	}{
		{`{"choices":[{"finish_reason":"stop","message":{"content":"{\"facts\":[]}"}}]}`, nil},
		{`{"choices":[{"finish_reason":"length","message":{"content":"{\"facts\":[]}"}}]}`, ErrPartial},
		{`{"choices":[{"finish_reason":"stop","message":{"content":null,"refusal":"no"}}]}`, ErrPartial},
		{`{"choices":[{"finish_reason":"stop","message":{}}]}`, ErrMalformed},
		{`{"choices":[]}`, ErrMalformed},
		{`not json`, ErrMalformed},
	}
	for _, c := range cases {
		_, err := ParseResponse([]byte(c.body))
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("ParseResponse(%q) = %v, want %v", c.body, err, c.want)
		}
	}
}

// FuzzParseResponse: the decoder of what a model sends never panics, and
// what it accepts keeps its bounds.
func FuzzParseResponse(f *testing.F) {
	f.Add([]byte(`{"choices":[{"finish_reason":"stop","message":{"content":"{\"facts\":[{\"subject\":\"user\",\"text\":\"x\",\"sources\":[\"a\"],\"supersedes\":[]}]}"}}]}`))
	f.Add([]byte(`{"choices":[{"finish_reason":"length","message":{"content":"{\"facts\":["}}]}`))
	f.Add([]byte(`{"choices":[{"finish_reason":"stop","message":{"content":"{\"facts\":[]}"}}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := ParseResponse(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrPartial) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		if len(out.Facts) > MaxFacts {
			t.Fatal("too many facts")
		}
		for _, f := range out.Facts {
			if f.Subject == "" || f.Text == "" || len(f.Sources) == 0 || f.Supersedes == nil {
				t.Fatalf("accepted %+v", f)
			}
		}
	})
}

// The request is frozen: a change to the prompt or the schema changes
// this file, and then PromptVersion must change too.
func TestRequestBodyGolden(t *testing.T) {
	b, err := RequestBody("m", Input{Turns: []Turn{{ID: "t1", Session: "s", Role: "user", Time: "2026-03-01T10:00:00.000Z", Content: "I prefer aisle seats."}},
		Known: []Known{{ID: "f1", Subject: "user", Text: "The user lives in Lisbon."}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "request.golden.json")
	if *update {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("request body changed (bump PromptVersion %q and run with -update):\n%s", PromptVersion, b)
	}
	if !bytes.Contains(want, []byte(`"strict":true`)) || !bytes.Contains(want, []byte(`"temperature":0`)) {
		t.Fatal("not a strict, deterministic request")
	}
}

func TestPlanCascade(t *testing.T) {
	items := []Item{
		{ID: "f1", Kind: KindKnowledge, Subject: "u", Content: "The user is allergic to peanuts.", Sources: []string{"t1"}, Seq: 1},
		{ID: "f2", Kind: KindKnowledge, Subject: "u", Content: "The user prefers aisle seats.", Sources: []string{"t1", "t2"}, Seq: 2},
		{ID: "f3", Kind: KindKnowledge, Subject: "u", Content: "The user moved to Berlin in March.", Sources: []string{"t2", "t3"}, Seq: 3},
		{ID: "f4", Kind: KindKnowledge, Subject: "v", Content: "Vera likes tea.", Sources: []string{"t4"}, Seq: 4},
		{ID: "p1", Kind: KindProfile, Subject: "u", Sources: []string{"f1", "f2", "f3"}, Seq: 5},
		{ID: "p2", Kind: KindProfile, Subject: "v", Sources: []string{"f4"}, Seq: 6},
	}
	text := map[string]string{"t1": "I am allergic to peanuts and I prefer aisle seats.", "t2": "I prefer aisle seats. Berlin is cold.", "t3": "I moved in March.", "t4": "Vera likes tea."}
	content := func(id string) (string, bool) { s, ok := text[id]; return s, ok }
	removed := map[string]bool{"t1": true, "t3": true}
	delete(text, "t1")
	delete(text, "t3")
	c := PlanCascade(items, removed, content)
	var gone []string
	for _, r := range c.Remove {
		gone = append(gone, r.ID+":"+r.Reason)
	}
	want := "f1:every source was forgotten,f3:its remaining sources do not support it,p1:a fact it lists was forgotten"
	if strings.Join(gone, ",") != want {
		t.Fatalf("removed %v", gone)
	}
	if len(c.Rewire) != 1 || c.Rewire[0].ID != "f2" || strings.Join(c.Rewire[0].Sources, ",") != "t2" || strings.Join(c.Rewire[0].Dropped, ",") != "t1" {
		t.Fatalf("rewire %+v", c.Rewire)
	}
	if strings.Join(c.Profiles, ",") != "u" {
		t.Fatalf("profiles %v", c.Profiles)
	}
	if facts := CurrentFacts(items, "u", removed); len(facts) != 1 || facts[0].ID != "f2" {
		t.Fatalf("current facts %+v", facts)
	}
}
