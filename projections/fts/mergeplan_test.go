package fts

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
)

// TestMergePlanKept: the index is created with indexConfig's merge plan,
// and it stays in index_meta.json (what bleve reads at every open for
// writing) across a reopen and a purge, which swaps in a copy of the
// index.
func TestMergePlanKept(t *testing.T) {
	dir := t.TempDir()
	x := openT(t, dir, Options{})
	var e evs
	applyAll(t, x, []*log.Event{
		e.store("a1", "s", "user", log.KindConversation, 1, "alpha"),
		e.store("b1", "s", "user", log.KindConversation, 2, "beta"),
	}, 0)
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	x = openT(t, dir, Options{})
	applyAll(t, x, []*log.Event{e.add(&log.Tombstone{Chunks: []string{"a1"}})}, 0) // purges
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "index", "index_meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Config struct {
			Plan map[string]int `json:"scorchMergePlanOptions"`
		} `json:"config"`
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	want := indexConfig()["scorchMergePlanOptions"].(map[string]interface{})
	if len(meta.Config.Plan) != len(want) {
		t.Fatalf("index_meta.json %s: merge plan %v, want %v", b, meta.Config.Plan, want)
	}
	for k, v := range want {
		if meta.Config.Plan[k] != v.(int) {
			t.Fatalf("index_meta.json %s: %s = %d, want %d", b, k, meta.Config.Plan[k], v)
		}
	}
}
