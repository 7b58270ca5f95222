package vector

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeModel is a real HTTP server speaking one protocol. Its vectors are the
// HashEmbedder's (dimension dim), so results are checkable.
type fakeModel struct {
	proto    Protocol
	dim      int
	calls    atomic.Int64
	texts    atomic.Int64
	status   int  // non-zero: reply with this status
	hang     bool // block until the client gives up
	drop     int  // reply with this many fewer vectors
	badJSON  bool
	wrongDim bool
	wantKey  string
	release  chan struct{} // closed at cleanup to free hanging handlers
}

func (f *fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	wantPath := "/api/embed"
	if f.proto == ProtocolOpenAI {
		wantPath = "/v1/embeddings"
	}
	if r.Method != http.MethodPost || r.URL.Path != wantPath {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if f.wantKey != "" && r.Header.Get("Authorization") != "Bearer "+f.wantKey {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if f.hang {
		io.Copy(io.Discard, r.Body) // lets the server notice the client leaving
		select {
		case <-r.Context().Done():
		case <-f.release:
		}
		return
	}
	if f.status != 0 {
		http.Error(w, "model exploded", f.status)
		return
	}
	if f.badJSON {
		w.Write([]byte(`{"embeddings": [[0.1, 0.2`))
		return
	}
	var req embedRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.texts.Add(int64(len(req.Input)))
	he, _ := NewHashEmbedder(f.dim)
	vs, _ := he.Embed(r.Context(), req.Input)
	if f.wrongDim && len(vs) > 0 {
		vs[len(vs)-1] = vs[len(vs)-1][:f.dim-1]
	}
	vs = vs[:max(0, len(vs)-f.drop)]
	w.Header().Set("Content-Type", "application/json")
	if f.proto == ProtocolOllama {
		json.NewEncoder(w).Encode(map[string]any{"model": req.Model, "embeddings": vs})
		return
	}
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	var data []item
	for i := len(vs) - 1; i >= 0; i-- { // out of order on purpose
		data = append(data, item{"embedding", i, vs[i]})
	}
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
}

func startModel(t *testing.T, f *fakeModel) string {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	if f.release == nil {
		f.release = make(chan struct{})
		t.Cleanup(func() { close(f.release) }) // runs before srv.Close
	}
	return srv.URL
}

func TestHTTPEmbedder(t *testing.T) {
	const dim = 64
	texts := []string{"alpha beta", "gamma delta", "reset my password", "", "tomato garden", "one more"}
	he, _ := NewHashEmbedder(dim)
	want, _ := he.Embed(context.Background(), texts)
	for _, proto := range []Protocol{ProtocolOllama, ProtocolOpenAI} {
		t.Run(string(proto), func(t *testing.T) {
			f := &fakeModel{proto: proto, dim: dim, wantKey: "sekret"}
			e, err := NewHTTPEmbedder(HTTPOptions{Protocol: proto, BaseURL: startModel(t, f) + "/", Model: "m1", Dim: dim, APIKey: "sekret", BatchSize: 4})
			if err != nil {
				t.Fatal(err)
			}
			if e.Name() != string(proto)+"/m1/64" || e.Dim() != dim {
				t.Fatalf("Name=%q Dim=%d", e.Name(), e.Dim())
			}
			got, err := e.Embed(context.Background(), texts)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(texts) || f.calls.Load() != 2 {
				t.Fatalf("%d vectors in %d calls, want %d in 2 batches", len(got), f.calls.Load(), len(texts))
			}
			for i := range got {
				if !equalBits(got[i], want[i]) {
					t.Fatalf("vector %d differs from the server's", i)
				}
			}
			d, err := DetectDim(context.Background(), HTTPOptions{Protocol: proto, BaseURL: startModel(t, f), Model: "m1", APIKey: "sekret"})
			if err != nil || d != dim {
				t.Fatalf("DetectDim = %d, %v", d, err)
			}
		})
	}
}

func TestHTTPEmbedderFailures(t *testing.T) {
	const dim = 32
	cases := []struct {
		name   string
		set    func(*fakeModel)
		opts   HTTPOptions
		expect string
	}{
		{"500", func(f *fakeModel) { f.status = 500 }, HTTPOptions{}, "status 500"},
		{"401 no key", func(f *fakeModel) { f.wantKey = "k" }, HTTPOptions{}, "status 401"},
		{"hang past timeout", func(f *fakeModel) { f.hang = true }, HTTPOptions{Timeout: 100 * time.Millisecond}, "timed out"},
		{"too few vectors", func(f *fakeModel) { f.drop = 1 }, HTTPOptions{}, "got 2 vectors for 3 texts"},
		{"bad json", func(f *fakeModel) { f.badJSON = true }, HTTPOptions{}, "decode embed response"},
		{"wrong dimension", func(f *fakeModel) { f.wrongDim = true }, HTTPOptions{}, "has 31 values, want 32"},
		{"configured dim wrong", func(*fakeModel) {}, HTTPOptions{Dim: 16}, "has 32 values, want 16"},
	}
	for _, proto := range []Protocol{ProtocolOllama, ProtocolOpenAI} {
		for _, c := range cases {
			t.Run(string(proto)+"/"+c.name, func(t *testing.T) {
				f := &fakeModel{proto: proto, dim: dim}
				c.set(f)
				o := c.opts
				o.Protocol, o.BaseURL, o.Model = proto, startModel(t, f), "m"
				if o.Dim == 0 {
					o.Dim = dim
				}
				e, err := NewHTTPEmbedder(o)
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				_, err = e.Embed(context.Background(), []string{"a b", "c d", "e f"})
				if !errors.Is(err, ErrEmbedder) || !strings.Contains(err.Error(), c.expect) {
					t.Fatalf("err = %v, want ErrEmbedder containing %q", err, c.expect)
				}
				if f.hang && time.Since(start) > 5*time.Second {
					t.Fatalf("timeout not honoured: %v", time.Since(start))
				}
			})
		}
	}
	t.Run("connection refused", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		e, _ := NewHTTPEmbedder(HTTPOptions{Protocol: ProtocolOllama, BaseURL: url, Model: "m", Dim: 4})
		if _, err := e.Embed(context.Background(), []string{"x"}); !errors.Is(err, ErrEmbedder) {
			t.Fatalf("err = %v", err)
		}
	})
	for _, o := range []HTTPOptions{
		{Protocol: "grpc", BaseURL: "http://x", Model: "m", Dim: 4},
		{Protocol: ProtocolOllama, Model: "m", Dim: 4},
		{Protocol: ProtocolOllama, BaseURL: "http://x", Dim: 4},
		{Protocol: ProtocolOllama, BaseURL: "http://x", Model: "m"},
	} {
		if _, err := NewHTTPEmbedder(o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("NewHTTPEmbedder(%+v) = %v", o, err)
		}
	}
}

func TestCachedEmbedder(t *testing.T) {
	const dim = 48
	caches := map[string]func(t *testing.T) Cache{
		"mem": func(t *testing.T) Cache { return NewMemCache() },
		"bolt": func(t *testing.T) Cache {
			c, err := OpenBoltCache(filepath.Join(t.TempDir(), "emb.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		},
	}
	for _, name := range []string{"mem", "bolt"} {
		t.Run(name, func(t *testing.T) {
			f := &fakeModel{proto: ProtocolOllama, dim: dim}
			inner, _ := NewHTTPEmbedder(HTTPOptions{Protocol: ProtocolOllama, BaseURL: startModel(t, f), Model: "m", Dim: dim})
			cache := caches[name](t)
			ce := NewCachedEmbedder(inner, cache)
			if ce.Name() != inner.Name() || ce.Dim() != dim {
				t.Fatal("CachedEmbedder must report the inner Name and Dim")
			}
			texts := []string{"one two", "three four", "one two", "five"}
			first, err := ce.Embed(context.Background(), texts)
			if err != nil {
				t.Fatal(err)
			}
			if f.calls.Load() != 1 || f.texts.Load() != 3 {
				t.Fatalf("first embed: %d calls, %d texts sent; want 1 call, 3 distinct texts", f.calls.Load(), f.texts.Load())
			}
			second, err := ce.Embed(context.Background(), texts)
			if err != nil {
				t.Fatal(err)
			}
			if f.calls.Load() != 1 {
				t.Fatalf("second embed called the model (%d calls)", f.calls.Load())
			}
			for i := range texts {
				if !equalBits(first[i], second[i]) {
					t.Fatalf("cached vector %d differs", i)
				}
			}
			// One new text: only it is sent.
			if _, err := ce.Embed(context.Background(), []string{"five", "six"}); err != nil {
				t.Fatal(err)
			}
			if f.calls.Load() != 2 || f.texts.Load() != 4 {
				t.Fatalf("partial hit: %d calls, %d texts sent", f.calls.Load(), f.texts.Load())
			}
			// Another model name does not see these entries.
			other, _ := NewHTTPEmbedder(HTTPOptions{Protocol: ProtocolOllama, BaseURL: startModel(t, f), Model: "m2", Dim: dim})
			if _, err := NewCachedEmbedder(other, cache).Embed(context.Background(), []string{"one two"}); err != nil {
				t.Fatal(err)
			}
			if f.calls.Load() != 3 {
				t.Fatal("cache shared between model names")
			}
			// Failures propagate and are not cached.
			f.status = 500
			if _, err := ce.Embed(context.Background(), []string{"seven"}); !errors.Is(err, ErrEmbedder) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestBoltCachePersists(t *testing.T) {
	path := filepath.Join(t.TempDir(), "emb.db")
	c, err := OpenBoltCache(path)
	if err != nil {
		t.Fatal(err)
	}
	he, _ := NewHashEmbedder(16)
	ce := NewCachedEmbedder(he, c)
	v1, _ := ce.Embed(context.Background(), []string{"persist me"})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2, err := OpenBoltCache(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	got, err := c2.Get(he.Name(), [][32]byte{sha256Sum("persist me"), sha256Sum("absent")})
	if err != nil {
		t.Fatal(err)
	}
	if got[0] == nil || !equalBits(got[0], v1[0]) || got[1] != nil {
		t.Fatalf("reopened cache: %v", got)
	}
}
