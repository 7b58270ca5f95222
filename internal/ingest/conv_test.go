package ingest

import (
	"errors"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
)

func TestToolCallLine(t *testing.T) {
	es, err := ParseLine([]byte(`{"type":"tool_call","name":"f","args":{"a": [1, 2]},"result":"r","status":"ok","parent":"m1","session":"s"}`), 1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := es[0].Body.(*log.Store)
	if st.Kind != log.KindToolCall || st.Role != "tool" || st.Content != "r" || st.Parent != "m1" ||
		st.Tool == nil || *st.Tool != (log.ToolCall{Name: "f", Args: `{"a": [1, 2]}`, Status: "ok"}) {
		t.Fatalf("%+v %+v", st, st.Tool)
	}
	// No result yet: a pending call.
	es, err = ParseLine([]byte(`{"type":"tool_call","name":"f","status":"pending"}`), 1, Options{})
	if err != nil || es[0].Body.(*log.Store).Content != "" {
		t.Fatalf("pending call: %v", err)
	}
	// A long result is chunked; only the first chunk carries the call.
	long := strings.Repeat("word ", 2000)
	es, err = ParseLine([]byte(`{"type":"tool_call","name":"f","args":{},"result":"`+long+`","supersedes":["x"]}`), 1, Options{ChunkTokens: 200})
	if err != nil || len(es) < 3 {
		t.Fatalf("chunked: %d entries, %v", len(es), err)
	}
	for i, e := range es {
		st := e.Body.(*log.Store)
		if (st.Tool != nil) != (i == 0) || (len(st.Supersedes) > 0) != (i == 0) {
			t.Fatalf("chunk %d: tool %v supersedes %v", i, st.Tool, st.Supersedes)
		}
	}
}

func TestConvLinesRefused(t *testing.T) {
	for _, tc := range []struct{ line, field string }{
		{`{"type":"tool_call","result":"r"}`, "name"},
		{`{"type":"tool_call","name":"  "}`, "name"},
		{`{"type":"tool_call","name":"f","content":"x"}`, "content"},
		{`{"type":"tool_call","name":"f","kind":"document"}`, "kind"},
		{`{"type":"tool_call","name":"f","chunk_parent":"d"}`, "chunk_parent"},
		{`{"content":"x","name":"f"}`, "name"},
		{`{"content":"x","status":"ok"}`, "status"},
		{`{"content":"x","supersedes":[""]}`, ""},
		{`{"content":"x","chunk_id":"a","supersedes":["a"]}`, ""},
	} {
		_, err := ParseLine([]byte(tc.line), 3, Options{})
		var le *LineError
		if !errors.As(err, &le) || le.Field != tc.field || le.Line != 3 || !errors.Is(err, ErrBadInput) {
			t.Errorf("%s: %v (field %q)", tc.line, err, fieldOf(le))
		}
	}
}
