package test

import (
	"crypto/sha256"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeOllama speaks Ollama's /api/embed with deterministic 16-dim vectors
// derived from each text's hash. mode: 0 serve, 1 fail with 500, 2 hang.
type fakeOllama struct {
	mode  atomic.Int32
	calls atomic.Int32
}

func (f *fakeOllama) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	if r.URL.Path != "/api/embed" {
		http.NotFound(w, r)
		return
	}
	switch f.mode.Load() {
	case 1:
		http.Error(w, "model crashed", http.StatusInternalServerError)
		return
	case 2:
		select {
		case <-time.After(time.Minute): // the client gives up long before
		case <-r.Context().Done():
		}
		return
	}
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	out := make([][]float32, len(req.Input))
	for i, t := range req.Input {
		h := sha256.Sum256([]byte(strings.ToLower(t)))
		v := make([]float32, 16)
		var n float64
		for j := range v {
			v[j] = float32(int(h[j])-128) / 128
			n += float64(v[j] * v[j])
		}
		for j := range v {
			v[j] /= float32(math.Sqrt(n))
		}
		out[i] = v
	}
	json.NewEncoder(w).Encode(map[string]any{"model": req.Model, "embeddings": out})
}

// An HTTP embedding server that errors or hangs: the command fails with a
// clear error, the log is untouched, and the projection resumes (and reuses
// cached vectors) once the server is back.
func TestHTTPEmbedderCLI(t *testing.T) {
	t.Parallel()
	f := &fakeOllama{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	dir := newStore(t)
	// A generous timeout where the server answers (a busy machine must
	// not turn a slow answer into a failure); a short one where it hangs.
	emb := []string{"--embedder", "ollama", "--embed-url", srv.URL, "--embed-model", "fake", "--embed-timeout", "60s"}
	hang := []string{"--embedder", "ollama", "--embed-url", srv.URL, "--embed-model", "fake", "--embed-timeout", "2s"}
	must(t, dir, conversation, "append")
	out := must(t, dir, "", append([]string{"query", "cello teacher", "--json"}, emb...)...)
	if len(jsonDoc(t, out)["results"].([]any)) == 0 {
		t.Fatalf("no results with the HTTP embedder: %s", out)
	}
	before := must(t, dir, "", "replay")

	must(t, dir, "", "store", "--session", "s9", "A new note about bows and rosin.")
	for _, mode := range []int32{1, 2} {
		f.mode.Store(mode)
		r := ucl(t, dir, "", append([]string{"project"}, hang...)...)
		if r.code == 0 || !strings.Contains(r.err, "embed") || !strings.Contains(r.err, "log is untouched") {
			t.Fatalf("mode %d: want a clear embedder error, got %s", mode, r)
		}
		if mode == 2 && !strings.Contains(strings.ToLower(r.err), "timeout") && !strings.Contains(r.err, "deadline") && !strings.Contains(r.err, "timed out") {
			t.Fatalf("a hanging server is not reported as a timeout: %s", r.err)
		}
	}
	if after := must(t, dir, "", "replay"); !strings.HasPrefix(after, before[:len(before)-1]) || strings.Count(after, "\n") != 4 {
		t.Fatalf("log changed by a failed projection:\n%s", after)
	}
	f.mode.Store(0)
	st := jsonDoc(t, must(t, dir, "", append([]string{"project", "--json"}, emb...)...))
	for _, p := range st["projections"].([]any) {
		if m := p.(map[string]any); m["behind"].(float64) != 0 {
			t.Fatalf("projection did not resume: %v", m)
		}
	}
	// A rebuild reuses the cache: no new model calls for known contents.
	calls := f.calls.Load()
	must(t, dir, "", append([]string{"project", "rebuild", "--only", "vectors"}, emb...)...)
	if got := f.calls.Load(); got != calls {
		t.Fatalf("rebuild called the model %d more times", got-calls)
	}
}
