package httpapi

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl"
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

// The tool loop: the reply's call is stored pending; the client's next
// request carries the result, which completes the call (an edit, so the
// pending version stays in the history); resending it changes nothing.
func TestProxyToolResultCompletesTheCall(t *testing.T) {
	up := newUpstream(t, "tools")
	e := newEnv(t, Options{Upstream: up.srv.URL + "/v1"})
	if resp, b := e.do("POST", "/v1/chat/completions", "application/json", chatBody(t, false, "user", "Weather in Paris?"), SessionHeader, "t1"); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	id := toolItemID("t1", "call_1")
	loop := []byte(`{"model":"fake-model","messages":[{"role":"user","content":"Weather in Paris?"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},` +
		`{"role":"tool","tool_call_id":"call_1","content":"18C and cloudy"}]}`)
	for round := 0; round < 2; round++ {
		if resp, b := e.do("POST", "/v1/chat/completions", "application/json", loop, SessionHeader, "t1"); resp.StatusCode != 200 {
			t.Fatalf("round %d: %d %s", round, resp.StatusCode, b)
		}
		g, err := e.store.Get(context.Background(), ucl.GetRequest{IDs: []string{id}, History: true})
		if err != nil {
			t.Fatal(err)
		}
		it := g.Items[0]
		if !it.Found || it.Content != "18C and cloudy" || it.Chunks[0].Tool.Status != "ok" || it.Chunks[0].Tool.Name != "get_weather" ||
			len(it.History) != 2 || it.History[0].Content != "" || it.History[1].By != "ucl-proxy" {
			t.Fatalf("round %d: %+v (history %+v)", round, it, it.History)
		}
	}
}
