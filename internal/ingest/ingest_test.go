package ingest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
)

func TestParseLine(t *testing.T) {
	good := `{"type":"store","session":"s1","role":"user","kind":"conversation","content":"hi","meta":{"k":"v"},"time":"2023-05-08T13:56:00Z"}`
	es, err := ParseLine([]byte(good), 1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := es[0].Body.(*log.Store)
	if s.Session != "s1" || s.Meta["k"] != "v" || s.Time != 1683554160000 || s.Kind != log.KindConversation {
		t.Fatalf("%+v", s)
	}
	for _, tc := range []struct{ in, field string }{
		{`{"content":""}`, "content"},
		{`{"session":"s"}`, "content"},
		{`{"content":"x","kind":"poem"}`, "kind"},
		{`{"content":"x","time":"yesterday-ish"}`, "time"},
		{`{"content":"x","sesion":"typo"}`, "sesion"},
		{`{"content":"x","meta":{"a":1}}`, "meta"},
		{`{"type":"frobnicate","content":"x"}`, "type"},
		{`{"type":"rekey"}`, "type"},
		{`{"type":"tombstone"}`, "chunks"},
		{`{"type":"tombstone","from":"2023-01-02","to":"2023-01-01"}`, "to"},
		{`not json`, ""},
		{`{"content":"x"} {"content":"y"}`, ""},
		{`{"content":"x","chunk_index":-1}`, "chunk_index"},
	} {
		_, err := ParseLine([]byte(tc.in), 7, Options{})
		var le *LineError
		if !errors.As(err, &le) || le.Line != 7 || le.Field != tc.field || !errors.Is(err, ErrBadInput) {
			t.Errorf("%s: err = %v (field %q)", tc.in, err, fieldOf(le))
		}
	}
}

func fieldOf(le *LineError) string {
	if le == nil {
		return "<nil>"
	}
	return le.Field
}

func TestEventIDStable(t *testing.T) {
	if EventID("turn-42") != EventID("turn-42") || EventID("a") == EventID("b") {
		t.Fatal("derived ids not stable/distinct")
	}
	hexID := "000102030405060708090a0b0c0d0e0f"
	if EventID(hexID).String() != hexID {
		t.Fatal("hex id not used as is")
	}
}

func TestReadAllStopsAtBadLine(t *testing.T) {
	in := "{\"content\":\"a\"}\n\n# comment\n{\"content\":\"b\",\"kind\":\"bad\"}\n{\"content\":\"c\"}\n"
	_, err := ReadAll(strings.NewReader(in), Options{})
	var le *LineError
	if !errors.As(err, &le) || le.Line != 4 {
		t.Fatalf("err = %v", err)
	}
}

func TestChunkedDocumentIDs(t *testing.T) {
	doc := `{"id":"doc-1","kind":"document","content":"` + strings.Repeat("A sentence about logs. ", 400) + `"}`
	a, err := ParseLine([]byte(doc), 1, Options{ChunkTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ParseLine([]byte(doc), 1, Options{ChunkTokens: 100})
	if len(a) < 5 || len(a) != len(b) {
		t.Fatalf("%d chunks", len(a))
	}
	for i := range a {
		if a[i].ID != b[i].ID || a[i].ID.IsZero() {
			t.Fatal("chunk ids not derived deterministically")
		}
		if s := a[i].Body.(*log.Store); s.ChunkParent != EventID("doc-1").String() || s.ChunkIndex != i {
			t.Fatalf("chunk %d: %+v", i, s)
		}
	}
}

// Invalid UTF-8 used to be replaced with U+FFFD silently, duplicate keys
// resolved to the last one, and the all-zero id turned idempotency off.
func TestParseLineRefusesWhatItWouldAlter(t *testing.T) {
	for _, tc := range []struct{ name, in, field, msg string }{
		{"invalid UTF-8", "{\"content\":\"caf\xe9 au lait\"}", "", "invalid UTF-8 at byte 15"},
		{"lone surrogate escape", `{"content":"x \ud800 y"}`, "", "lone UTF-16 surrogate"},
		{"duplicate key", `{"content":"a","session":"s1","content":"b"}`, "content", "given twice"},
		{"duplicate meta key", `{"content":"a","meta":{"k":"1","k":"2"}}`, "meta.k", "given twice"},
		{"all-zero id", `{"content":"a","id":"00000000000000000000000000000000"}`, "id", "reserved"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseLine([]byte(tc.in), 3, Options{})
			var le *LineError
			if !errors.As(err, &le) || le.Line != 3 || le.Field != tc.field || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v", err)
			}
		})
	}
	// What the line spells is kept: a literal or escaped U+FFFD is text.
	for _, in := range []string{`{"content":"a \ufffd b"}`, "{\"content\":\"a \uFFFD b\"}"} {
		es, err := ParseLine([]byte(in), 1, Options{})
		if err != nil || !strings.Contains(es[0].Body.(*log.Store).Content, "\uFFFD") {
			t.Fatalf("%s: %v", in, err)
		}
	}
	// ReadAll names the line.
	_, err := ReadAll(strings.NewReader("{\"content\":\"ok\"}\n{\"content\":\"\xff\"}\n"), Options{})
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 {
		t.Fatalf("ReadAll: %v", err)
	}
	// The log refuses invalid UTF-8 from any front end, not only JSONL.
	if err := (&log.Store{Kind: log.KindConversation, Content: "ok", Session: "s\xff"}).Validate(); !errors.Is(err, log.ErrMalformed) || !strings.Contains(err.Error(), "session") {
		t.Fatalf("validate: %v", err)
	}
}

// A document or a tool call over log.MaxDocumentSize is refused before it
// is split (splitting costs time with the text: 2 MiB of one-letter words
// took 48 s to split only to be refused), as bad input and as too large;
// a smaller one is split.
func TestDocumentOverBoundRefusedBeforeSplit(t *testing.T) {
	over := strings.Repeat("z ", log.MaxDocumentSize/2+1)
	for _, line := range []string{
		`{"type":"store","session":"s","kind":"document","content":"` + over + `"}`,
		`{"type":"tool_call","session":"s","name":"read","result":"` + over + `"}`,
	} {
		_, err := ParseLine([]byte(line), 1, Options{})
		if !errors.Is(err, ErrBadInput) || !errors.Is(err, log.ErrDocumentTooLarge) || !errors.Is(err, log.ErrTooLarge) ||
			!strings.Contains(err.Error(), "several documents") {
			t.Fatalf("%.60s…: %v", line, err)
		}
	}
	under := strings.Repeat("abcdefg ", 8<<10)
	es, err := ParseLine([]byte(`{"type":"store","session":"s","kind":"document","content":"`+under+`"}`), 1, Options{})
	if err != nil || len(es) < 2 {
		t.Fatalf("a document under the bound: %d chunks, %v", len(es), err)
	}
}

// The one-pass duplicate-key scan of valid JSON finds what the token walk
// finds (the first key given twice, "meta.k" for nested objects).
func FuzzDuplicateKey(f *testing.F) {
	for _, s := range []string{
		`{"type":"store","session":"s1","content":"hi","meta":{"k":"v"}}`,
		`{"type":"store","content":"a","content":"b"}`,
		`{"meta":{"k":"v","k":"w"},"meta":{}}`,
		`{"a":[{"b":1,"b":2}],"c":{"d":[1,2,{"e":null,"e":true}]}}`,
		` { "a" : "x\"y" , "b":-1.5e3, "a\u0062":false } `,
		`{"a":1,"\u0061":2}`,
		`[{"x":1},{"x":1,"x":2}]`,
		`"just a string"`, `17`, `{}`, `{"k":{}}`, `{"a":"}","a":"]"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		want, err := duplicateKeyTokens(b)
		if err != nil {
			t.Fatalf("token walk of valid JSON %q: %v", b, err)
		}
		got, ok := duplicateKeyValid(b)
		if ok && got != want {
			t.Fatalf("%q: scan %q, token walk %q", b, got, want)
		}
		if d, err := duplicateKey(b); err != nil || d != want {
			t.Fatalf("%q: duplicateKey %q %v, want %q", b, d, err, want)
		}
	})
}
