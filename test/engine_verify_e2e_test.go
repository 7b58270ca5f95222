package test

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// `ucl project verify` with an HTTP embedder rebuilds the vectors with the
// same embedder (and its cache) as the live ones, so an untouched store
// verifies; before the engine it dropped the embedder options, compared
// against hash-embedder vectors and reported "digests differ: vectors".
func TestProjectVerifyHTTPEmbedder(t *testing.T) {
	t.Parallel()
	f := &fakeOllama{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	dir := newStore(t)
	emb := []string{"--embedder", "ollama", "--embed-url", srv.URL, "--embed-model", "fake", "--embed-timeout", "10s"}
	must(t, dir, conversation, "append")
	out := must(t, dir, "", append([]string{"project", "verify", "--json"}, emb...)...)
	doc := jsonDoc(t, out)
	if doc["ok"] != true || len(doc["mismatches"].([]any)) != 0 {
		t.Fatalf("verify with the HTTP embedder: %s", out)
	}
	if f.calls.Load() == 0 {
		t.Fatal("the fake embedding server was never asked: verify did not use the HTTP embedder")
	}
	text := must(t, dir, "", append([]string{"project", "verify"}, emb...)...)
	if !strings.Contains(text, "ok: a fresh rebuild gives the same digests") {
		t.Fatalf("verify text: %s", text)
	}
	// The vectors really come from the HTTP embedder: with the built-in
	// hash embedder the vector projection (rebuilt on the embedder change)
	// has another digest.
	httpVec := doc["digests"].(map[string]any)["vectors"]
	hash := jsonDoc(t, must(t, dir, "", "project", "verify", "--json"))
	if hash["ok"] != true || hash["digests"].(map[string]any)["vectors"] == httpVec {
		t.Fatalf("hash-embedder verify: %v (http vectors digest %v)", hash, httpVec)
	}
}
