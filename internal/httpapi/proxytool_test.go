package httpapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/internal/ingest"
	"github.com/unlimitedcontext/ucl/log"
)

// Every tool call the proxy sees becomes a valid tool_call line, even a
// nameless one or one whose streamed arguments were cut off.
func TestToolCallLineIsAlwaysIngestible(t *testing.T) {
	for _, tc := range []struct{ name, args, wantName, wantArgs string }{
		{"get_weather", `{"city":"Paris"}`, "get_weather", `{"city":"Paris"}`},
		{"", `{"city":"Par`, unnamedTool, `"{\"city\":\"Par"`},
		{"f", "", "f", ""},
	} {
		call := &toolCall{ID: "call_1"}
		call.Function.Name, call.Function.Arguments = tc.name, tc.args
		l, err := toolCallLine("s", "t-1", "u-1", call, map[string]string{"source": "ucl-proxy"})
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		es, err := ingest.ReadAll(strings.NewReader(string(b)), ingest.Options{})
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		st := es[0].Body.(*log.Store)
		if st.Kind != log.KindToolCall || st.Tool == nil || st.Tool.Name != tc.wantName || st.Tool.Args != tc.wantArgs ||
			st.Tool.Status != "pending" || st.Parent != "u-1" || st.Meta["tool_call_id"] != "call_1" {
			t.Fatalf("%+v: stored %+v tool %+v", tc, st, st.Tool)
		}
	}
}
