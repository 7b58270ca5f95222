package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// genJSONL makes n store lines across a few sessions.
func genJSONL(n, offset int) string {
	var b strings.Builder
	topics := []string{"cello practice and bowing technique", "the Lisbon trip budget and hotels", "rotating the deploy keys in production", "a sourdough starter that will not rise"}
	for i := 0; i < n; i++ {
		k := i + offset
		fmt.Fprintf(&b, `{"session":"s%d","role":"user","content":"Note %d about %s, detail %d.","meta":{"eid":"e%d"},"time":"2023-05-%02dT10:%02d:00Z"}`+"\n",
			k%5, k, topics[k%len(topics)], k*7, k, 1+k%28, k%60)
	}
	return b.String()
}

func TestSnapshotCLI(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	must(t, dir, genJSONL(300, 0), "append")
	cr := jsonDoc(t, must(t, dir, "", "snapshot", "create", "--json"))
	name, _ := cr["manifest"].(map[string]any)["name"].(string)
	if name == "" {
		t.Fatalf("create: %v", cr)
	}
	list := must(t, dir, "", "snapshot", "list", "--json")
	if !strings.Contains(list, name) {
		t.Fatalf("list: %s", list)
	}
	must(t, dir, "", "snapshot", "verify", name)
	must(t, dir, genJSONL(50, 300), "append")
	want := jsonDoc(t, must(t, dir, "", "project", "--json", "--digests")) // catches up to 350

	// Restore + replay of the delta equals the live (incremental) state.
	os.RemoveAll(filepath.Join(dir, "projections"))
	out := must(t, dir, "", "snapshot", "restore", "--json")
	if !strings.Contains(out, name) {
		t.Fatalf("restore did not use the snapshot: %s", out)
	}
	got := jsonDoc(t, must(t, dir, "", "project", "status", "--json", "--digests"))
	for i, p := range want["projections"].([]any) {
		if d := p.(map[string]any)["digest"]; d == nil || d != got["projections"].([]any)[i].(map[string]any)["digest"] {
			t.Fatalf("digest after restore differs: %v", got["projections"].([]any)[i])
		}
	}

	// The manifest names the embedder; a store configured with another one
	// is refused before anything is extracted, with a hint.
	if e, _ := cr["manifest"].(map[string]any)["embedder"].(map[string]any); e["name"] != "hash-v1/384" {
		t.Fatalf("manifest embedder: %v", cr["manifest"])
	}
	re := ucl(t, dir, "", "--embedder", "ollama", "--embed-url", "http://127.0.0.1:1", "--embed-model", "m", "--embed-dim", "8", "snapshot", "restore", name, "--no-fallback")
	for _, w := range []string{"made with another embedder", `"hash-v1/384"`, `"ollama/m/8"`, "--no-fallback"} {
		if re.code == 0 || !strings.Contains(re.err, w) {
			t.Fatalf("restore with another embedder: %q not said: %s", w, re)
		}
	}
	t.Logf("another embedder: %s", strings.TrimSpace(re.err))

	// A flipped byte in the archive is refused; without fallback the command
	// fails and the live state is untouched, with fallback it rebuilds.
	arch := filepath.Join(dir, "snapshots", name, "archive.bin")
	b, err := os.ReadFile(arch)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x01
	os.WriteFile(arch, b, 0o600)
	if r := ucl(t, dir, "", "snapshot", "verify", name); r.code == 0 {
		t.Fatalf("verify of a damaged snapshot: %s", r)
	}
	if r := ucl(t, dir, "", "snapshot", "restore", name, "--no-fallback"); r.code == 0 {
		t.Fatalf("restore of a damaged snapshot: %s", r)
	}
	r := ucl(t, dir, "", "snapshot", "restore", name)
	if r.code != 0 || !strings.Contains(r.out+r.err, "refused") {
		t.Fatalf("fallback restore: %s", r)
	}
	if out := must(t, dir, "", "project", "verify"); !strings.Contains(out, "ok") {
		t.Fatalf("verify after fallback: %s", out)
	}
}
