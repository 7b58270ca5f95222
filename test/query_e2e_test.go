package test

import (
	"os"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/internal/textutil"
)

// Query and context through the binary, on the hand-made eval turns.
func TestQueryAndContextCLI(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	turns, err := os.ReadFile("../query/testdata/eval/turns.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	must(t, dir, string(turns), "append")
	now := "--now=2023-08-01T00:00:00Z"

	// --json: one document with results carrying meta as stored; flags
	// before or after the text; byte-identical on a second run.
	a := must(t, dir, "", "query", "leasing or buying a car", "--k", "3", "--json", now)
	b := must(t, dir, "", "query", "--k", "3", "--json", now, "leasing or buying a car")
	if a != b {
		t.Fatalf("query output not deterministic or flag order matters:\n%s\n%s", a, b)
	}
	res := jsonDoc(t, a)["results"].([]any)
	if len(res) != 3 {
		t.Fatalf("%d results", len(res))
	}
	top := res[0].(map[string]any)
	if top["session"] != "car" || top["meta"].(map[string]any)["eid"] == nil {
		t.Fatalf("top result: %v", top)
	}
	// Filters.
	for _, r := range jsonDoc(t, must(t, dir, "", "query", "garden soil", "--session", "garden-2023", "--role", "assistant", "--json", now))["results"].([]any) {
		m := r.(map[string]any)
		if m["session"] != "garden-2023" || m["role"] != "assistant" {
			t.Fatalf("filter leaked: %v", m)
		}
	}
	// Tombstoned content is never returned.
	must(t, dir, "", "tombstone", "--session", "car", "--reason", "test")
	for _, r := range jsonDoc(t, must(t, dir, "", "query", "leasing or buying a car", "--k", "20", "--json", now))["results"].([]any) {
		if r.(map[string]any)["session"] == "car" {
			t.Fatalf("tombstoned chunk returned: %v", r)
		}
	}
	// Context stays under the budget, in every format.
	for _, f := range []string{"xml", "json", "text"} {
		for _, budget := range []string{"60", "400"} {
			out := must(t, dir, "", "context", "what did we decide about the database", "--budget", budget, "--format", f, now)
			if n := textutil.EstimateTokens(strings.TrimSuffix(out, "\n")); n > atoi(budget) {
				t.Fatalf("%s context of %d tokens over a budget of %s:\n%s", f, n, budget, out)
			}
		}
	}
	xml := must(t, dir, "", "context", "what did we decide about the database", "--budget", "400", now)
	if !strings.HasPrefix(xml, "<unlimited_context>") || !strings.Contains(xml, "<session id=") {
		t.Fatalf("xml context: %s", xml)
	}
	// Bad input: a clear error, never a panic.
	for _, args := range [][]string{
		{"query", ""}, {"query", "x", "--k", "0"}, {"query", "x", "--since", "someday"},
		{"context", "x", "--budget", "0"}, {"context", "x", "--budget", "-5"}, {"context", "x", "--format", "yaml"},
	} {
		r := ucl(t, dir, "", args...)
		if r.code == 0 || !strings.HasPrefix(r.err, "ucl: ") || strings.Contains(r.err, "panic") {
			t.Errorf("%v: %s", args, r)
		}
	}
	if r := ucl(t, dir, "", "query", "x", "--session", "no-such-session", "--json"); r.code != 0 || len(jsonDoc(t, r.out)["results"].([]any)) != 0 {
		t.Errorf("unknown session: %s", r)
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}
