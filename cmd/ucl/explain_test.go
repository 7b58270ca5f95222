package main

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// `ucl query --explain`: the JSON breakdown's fields (scripts read them;
// ann_weight is the ANN gate's, query.Options.ANNGate), the text line
// showing the ANN weight, and the same output for the same store, query
// and --now.
func TestQueryExplainShape(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	if _, errs, code := runCLI(t, dir, "", "init"); code != 0 {
		t.Fatal(errs)
	}
	for _, text := range []string{"Remember the cello lesson on Tuesday.", "The cello teacher moved the lesson.", "Buy milk."} {
		if _, errs, code := runCLI(t, dir, "", "store", "--session", "s1", text); code != 0 {
			t.Fatal(errs)
		}
	}
	args := []string{"query", "cello lesson", "--explain", "--now", "2030-01-01T00:00:00Z"}
	out, errs, code := runCLI(t, dir, "", append(args, "--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var resp struct {
		Results []struct {
			Explain map[string]any `json:"explain"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil || len(resp.Results) == 0 {
		t.Fatalf("query output %q: %v", out, err)
	}
	// neighbour, session and mmr_rank are omitted when zero.
	want := []string{"affinity", "ann_rank", "ann_score", "ann_weight", "bm25_rank", "bm25_score", "final", "recency", "rrf", "temporal"}
	got := keys(resp.Results[0].Explain)
	for _, k := range []string{"neighbour", "session", "mmr_rank"} {
		if i := indexOf(got, k); i >= 0 {
			got = append(got[:i], got[i+1:]...)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("explain keys %v, want %v (and any of neighbour, session, mmr_rank)", got, want)
	}
	if w, ok := resp.Results[0].Explain["ann_weight"].(float64); !ok || w <= 0 || w > 1 {
		t.Errorf("hybrid ann_weight %v, want in (0, 1]", resp.Results[0].Explain["ann_weight"])
	}
	text, errs, code := runCLI(t, dir, "", args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(text, ") (weight 0.") || !strings.Contains(text, "relevance ") {
		t.Errorf("--explain text does not show the ANN weight:\n%s", text)
	}
	for _, a := range [][]string{args, append(args, "--json")} {
		x, _, _ := runCLI(t, dir, "", a...)
		y, _, _ := runCLI(t, dir, "", a...)
		if x != y {
			t.Errorf("ucl %v twice: different output\n%s\n%s", a, x, y)
		}
	}
}

func indexOf(xs []string, x string) int {
	for i, y := range xs {
		if y == x {
			return i
		}
	}
	return -1
}
