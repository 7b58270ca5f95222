package index

import (
	"strings"
	"testing"
)

// Rewrite replaces each group's link at the end of its line, also when a
// link's arguments hold the arrow that separates it from the line, and
// leaves every other line alone.
func TestRewrite(t *testing.T) {
	month := Link{Method: "index", Args: map[string]any{"query": "a → b", "since": "2023-01-01", "until": "2023-02-01"}}
	sess := Link{Method: "session", Args: map[string]any{"id": "s → 1"}}
	l1, _ := linked("- 2023-01: 3 matches in 1 sessions", month)
	l2, _ := linked("- session s → 1: 3 matches, 2023-01-02..2023-01-03", sess)
	res := &Result{Months: []Group{{Key: "2023-01", Open: month}}, Sessions: []Group{{Key: "s → 1", Open: sess}},
		Text: "INDEX of \"a → b\"\n" + l1 + "\n" + l2 + "\n"}
	Rewrite(res, func(l Link) string { return "open(" + l.Method + ")" })
	want := "INDEX of \"a → b\"\n- 2023-01: 3 matches in 1 sessions → open(index)\n- session s → 1: 3 matches, 2023-01-02..2023-01-03 → open(session)\n"
	if res.Text != want {
		t.Fatalf("rewritten:\n%s\nwant:\n%s", res.Text, want)
	}
	if res.Tokens == 0 {
		t.Fatal("tokens not recounted")
	}
}

// A link counts for at least what its bounds allow a face to add: more
// for more values and for single quotes a shell must escape.
func TestLinkReserve(t *testing.T) {
	one := Link{Method: "session", Args: map[string]any{"id": "s1"}}
	four := Link{Method: "index", Args: map[string]any{"query": "q", "sessions": []string{"a", "b"}, "since": "2023-01-01"}}
	quoted := Link{Method: "index", Args: map[string]any{"query": strings.Repeat("'", 20)}}
	if r1, r4 := one.reserve(), four.reserve(); r1 < 4 || r4 <= r1 {
		t.Fatalf("reserve of 1 value %d, of 4 values %d", r1, r4)
	}
	if quoted.reserve() <= (Link{Method: "index", Args: map[string]any{"query": "q"}}).reserve() {
		t.Fatal("single quotes add nothing to the reserve")
	}
}
