package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/arweave/arlocaltest"
)

// The conversation model through the built binary: store-tool (a long
// result chunked, found by name), edit and get --history, supersede
// ranking, get --thread both ways with --depth, and every refusal exits
// non-zero with a clear message and writes nothing.
func TestConversationModelCLI(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	must(t, dir, "", "store", "book me a flight to Berlin", "--chunk-id", "q", "-s", "s1", "--time", "2024-01-01T10:00:00Z")
	must(t, dir, "", "store", "which day?", "--chunk-id", "a", "--parent", "q", "-s", "s1", "--role", "assistant", "--time", "2024-01-01T10:00:01Z")
	must(t, dir, "", "store", "friday", "--chunk-id", "u", "--parent", "a", "-s", "s1", "--time", "2024-01-01T10:00:02Z")
	long := strings.Repeat("LH123 departs 09:00 from gate B12, seats available in economy.\n", 200)
	rf := filepath.Join(t.TempDir(), "result.txt")
	if err := os.WriteFile(rf, []byte(long), 0o600); err != nil {
		t.Fatal(err)
	}
	out := must(t, dir, "", "store-tool", "search_flights", "--args", `{"to":"BER","day":"fri"}`, "--result-file", rf,
		"--parent", "u", "-s", "s1", "--chunk-id", "t", "--time", "2024-01-01T10:00:03Z", "--chunk-tokens", "200")
	if n := len(jsonLines(t, out)); n < 3 {
		t.Fatalf("long result not chunked: %d events", n)
	}
	must(t, dir, "", "store", "booked LH123", "--chunk-id", "r", "--parent", "t", "-s", "s1", "--role", "assistant", "--time", "2024-01-01T10:00:04Z")
	if got := must(t, dir, "", "get", "t"); got != long {
		t.Fatalf("tool result does not come back whole (%d bytes)", len(got))
	}
	hits := jsonDoc(t, must(t, dir, "", "query", "search_flights", "--mode", "bm25", "--json"))["results"].([]any)
	if len(hits) == 0 {
		t.Fatal("tool call not found by its name")
	}
	if tool := hits[0].(map[string]any)["tool"].(map[string]any); tool["name"] != "search_flights" || tool["args"] != `{"to":"BER","day":"fri"}` {
		t.Fatalf("hit: %v", hits[0])
	}

	// Thread both ways across the tool call.
	th := jsonDoc(t, must(t, dir, "", "get", "u", "--thread", "--json"))
	var ids []string
	for _, it := range th["items"].([]any) {
		m := it.(map[string]any)
		ids = append(ids, fmt.Sprintf("%s%+d", m["id"], int(m["depth"].(float64))))
	}
	if got := strings.Join(ids, " "); !strings.HasPrefix(got, "q-2 a-1 u+0 t#0+1") || !strings.HasSuffix(got, "r+2") {
		t.Fatalf("thread: %s", got)
	}
	th = jsonDoc(t, must(t, dir, "", "get", "u", "--thread", "--depth", "1", "--json"))
	for _, it := range th["items"].([]any) {
		if d := it.(map[string]any)["depth"].(float64); d < -1 || d > 1 {
			t.Fatalf("--depth 1 went %v steps", d)
		}
	}
	if text := must(t, dir, "", "session", "show", "s1"); !strings.Contains(text, `search_flights {"to":"BER","day":"fri"} [ok]`) {
		t.Fatalf("session show: %s", text)
	}
	if text := must(t, dir, "", "get", "q", "--thread"); !strings.Contains(text, "tool search_flights") || !strings.Contains(text, "booked LH123") {
		t.Fatalf("thread text: %s", text)
	}

	// Edit and history.
	must(t, dir, "", "edit", "a", "which day do you want to fly?", "--by", "tester")
	if got := must(t, dir, "", "get", "a"); got != "which day do you want to fly?" {
		t.Fatalf("get after edit: %q", got)
	}
	hist := must(t, dir, "", "get", "a", "--history")
	if !strings.Contains(hist, "v1") || !strings.Contains(hist, "which day?") || !strings.Contains(hist, "edited by tester") || !strings.Contains(hist, "(current)") {
		t.Fatalf("history: %s", hist)
	}
	found := false
	for _, h := range jsonDoc(t, must(t, dir, "", "query", "which day", "--mode", "bm25", "--json"))["results"].([]any) {
		m := h.(map[string]any)
		if m["id"] == "a" {
			found = m["content"] == "which day do you want to fly?"
		}
		if m["content"] == "which day?" {
			t.Fatal("search serves the old version")
		}
	}
	if !found {
		t.Fatal("search does not serve the new version")
	}

	// Supersede ranking.
	must(t, dir, "", "store", "Anna lives in Lisbon. Lisbon, Lisbon.", "--kind", "knowledge", "--chunk-id", "old")
	must(t, dir, "", "store", "Anna moved to Berlin", "--kind", "knowledge", "--chunk-id", "new", "--supersedes", "old")
	rank := func(extra ...string) []string {
		res := jsonDoc(t, must(t, dir, "", append([]string{"query", "Anna lives Lisbon", "--mode", "bm25", "--json"}, extra...)...))["results"].([]any)
		var out []string
		for _, r := range res {
			m := r.(map[string]any)
			s := m["id"].(string)
			if by, ok := m["superseded_by"].([]any); ok {
				s += fmt.Sprintf("<%v", by[0])
			}
			out = append(out, s)
		}
		return out
	}
	if got := strings.Join(rank(), " "); got != "new old<new" {
		t.Fatalf("default ranking: %s", got)
	}
	if got := strings.Join(rank("--include-superseded"), " "); got != "old<new new" {
		t.Fatalf("--include-superseded: %s", got)
	}

	// Refusals: clear message, non-zero exit, nothing written.
	head := headOf(t, dir)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"edit", "t#1", "x"}, "as a whole"},
		{[]string{"edit", "nope", "x"}, "no such item"},
		{[]string{"store-tool", "", "--result", "x"}, "needs a name"},
		{[]string{"store-tool", "f", "--args", "{oops"}, "not JSON"},
		{[]string{"store", "x", "--supersedes", "missing"}, "no live item"},
		{[]string{"get", "nope", "--thread"}, "no such item"},
	} {
		r := ucl(t, dir, "", tc.args...)
		if r.code == 0 || !strings.Contains(r.err, tc.want) {
			t.Fatalf("ucl %v: want an error with %q, got %s", tc.args, tc.want, r)
		}
	}
	must(t, dir, "", "tombstone", "--chunk", "a")
	if r := ucl(t, dir, "", "edit", "a", "again"); r.code == 0 || !strings.Contains(r.err, "tombstoned") {
		t.Fatalf("edit of a tombstoned item: %s", r)
	}
	if got := headOf(t, dir); got != head+1 { // the tombstone only
		t.Fatalf("refusals wrote: head %d → %d", head, got)
	}
	if strings.Contains(must(t, dir, "", "replay"), "which day") {
		t.Fatal("replay shows a version of a tombstoned item")
	}
	must(t, dir, "", "project", "verify")
}

// convEvents is a JSONL stream with tool calls, supersedes and a long
// document, which testConvRebuild then edits.
func convEvents(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"session":"s%d","content":"message %d about the cello","chunk_id":"m%d","time":"2024-01-01T00:%02d:%02dZ"}`+"\n", i%5, i, i, i/60, i%60)
		if i%3 == 0 {
			fmt.Fprintf(&b, `{"type":"tool_call","name":"lookup","args":{"n":%d},"result":"result %d","parent":"m%d","session":"s%d"}`+"\n", i, i, i, i%5)
		}
		if i%7 == 6 {
			fmt.Fprintf(&b, `{"kind":"knowledge","content":"fact %d replaces %d","chunk_id":"f%d","supersedes":["m%d"]}`+"\n", i, i-1, i, i-1)
		}
	}
	fmt.Fprintf(&b, `{"kind":"document","content":%q,"chunk_id":"doc"}`+"\n", strings.Repeat("A paragraph of the long manual.\n\n", 300))
	return b.String()
}

// Edits (a re-chunked document among them), tool calls and supersedes
// pushed to Arweave come back from a rebuild with the same replay and
// the same projection digests.
func testConvRebuild(t *testing.T, gw *arlocaltest.Gateway) {
	a, _ := newDevice(t, gw, 0, "conv")
	must(t, a.dir, convEvents(60), "append", "-")
	must(t, a.dir, "", "edit", "m3", "message 3, corrected")
	must(t, a.dir, "", "edit", "doc", "The manual, now short.")
	must(t, a.dir, "", "edit", "m10", "message 10, corrected twice")
	must(t, a.dir, "", "edit", "m10", "message 10, corrected three times")
	must(t, a.dir, "", "tombstone", "--chunk", "m3")
	must(t, a.dir, "", "sync", "push", "--gateway", gw.URL())
	b, r := rebuild(t, gw.URL(), a)
	if r.code != 0 {
		t.Fatalf("rebuild: %s", r)
	}
	must(t, a.dir, "", "project")
	if got, want := must(t, b, "", "replay"), must(t, a.dir, "", "replay"); got != want {
		t.Fatal("replay differs after rebuild")
	}
	da, db := digests(t, a.dir), digests(t, b)
	if len(da) < 4 || fmt.Sprint(da) != fmt.Sprint(db) {
		t.Fatalf("digests differ:\nA %v\nB %v", da, db)
	}
	if h := must(t, b, "", "get", "m10", "--history"); !strings.Contains(h, "v3") || !strings.Contains(h, "message 10 about the cello") {
		t.Fatalf("history after rebuild: %s", h)
	}
}
