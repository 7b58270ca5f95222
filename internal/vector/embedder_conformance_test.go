package vector

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"testing"
)

// TestEmbedderConformance holds every built-in Embedder to the contract
// the vector projection relies on (runEmbedderConformance).
func TestEmbedderConformance(t *testing.T) {
	h, err := NewHashEmbedder(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("hash", func(t *testing.T) { runEmbedderConformance(t, h) })
	h64, err := NewHashEmbedder(64)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("hash-64", func(t *testing.T) { runEmbedderConformance(t, h64) })
	t.Run("static", func(t *testing.T) {
		st := safetensorsFile(stTensor{"embeddings", "F32", []int{11, 2}, f32bytes(wpRows()...)})
		s, err := LoadStatic(writeModel(t, wpTokenizer, st, `{"normalize": true, "model_type": "model2vec"}`))
		if err != nil {
			t.Fatal(err)
		}
		runEmbedderConformance(t, s)
	})
	for _, proto := range []Protocol{ProtocolOllama, ProtocolOpenAI} {
		t.Run("http-"+string(proto), func(t *testing.T) {
			url := startModel(t, &fakeModel{proto: proto, dim: 64})
			e, err := NewHTTPEmbedder(HTTPOptions{Protocol: proto, BaseURL: url, Model: "m", Dim: 64, BatchSize: 2})
			if err != nil {
				t.Fatal(err)
			}
			runEmbedderConformance(t, e)
		})
	}
	t.Run("cached", func(t *testing.T) {
		c, err := OpenBoltCache(filepath.Join(t.TempDir(), "cache.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		runEmbedderConformance(t, NewCachedEmbedder(h, c))
		runEmbedderConformance(t, NewCachedEmbedder(h, NewMemCache()))
	})
}

// runEmbedderConformance checks the Embedder contract against one
// implementation: a stable Name that carries the dimension, one vector of
// Dim finite values per text in order, unit length or zero (the indexes
// normalise, and a zero vector is never a hit), the same vector for a text
// whatever batch it comes in (the projection embeds in batches of any
// size, so a rebuild must embed alike), an empty batch, and a cancelled
// context refused with its error. A WeightedEmbedder must give Embed's
// vector for a nil weight and for weights of 1.
func runEmbedderConformance(t *testing.T, e Embedder) {
	t.Helper()
	ctx := context.Background()
	texts := []string{
		"How do I reset my password?",
		"Caroline: I went to the pottery class and painted a sunset",
		"",
		"hello world",
		"naïve café — 42 résumés",
		"Hello, WORLDS! Unbelievable café zzz",
	}
	name := e.Name()
	if name == "" || !endsWithDim(name, e.Dim()) {
		t.Fatalf("Name %q does not end in its dimension %d", name, e.Dim())
	}
	all, err := e.Embed(ctx, texts)
	if err != nil || len(all) != len(texts) {
		t.Fatalf("Embed: %d vectors for %d texts, %v", len(all), len(texts), err)
	}
	for i, v := range all {
		if len(v) != e.Dim() {
			t.Fatalf("text %d: %d values, Dim %d", i, len(v), e.Dim())
		}
		var ss float64
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Fatalf("text %d: non-finite value", i)
			}
			ss += float64(x) * float64(x)
		}
		if ss != 0 && math.Abs(ss-1) > 1e-5 {
			t.Fatalf("text %d: squared norm %v, want 1 or 0", i, ss)
		}
		one, err := e.Embed(ctx, []string{texts[i]})
		if err != nil || len(one) != 1 || !slices.Equal(one[0], v) {
			t.Fatalf("text %d: alone it embeds otherwise than in a batch (%v)", i, err)
		}
	}
	if empty := all[2]; slices.ContainsFunc(empty, func(x float32) bool { return x != 0 }) {
		t.Fatal("the empty text has a non-zero vector")
	}
	rev := slices.Clone(texts)
	slices.Reverse(rev)
	back, err := e.Embed(ctx, rev)
	if err != nil {
		t.Fatal(err)
	}
	for i := range back {
		if !slices.Equal(back[i], all[len(all)-1-i]) {
			t.Fatalf("text %d: the batch order changed its vector", len(all)-1-i)
		}
	}
	if vs, err := e.Embed(ctx, nil); err != nil || len(vs) != 0 {
		t.Fatalf("empty batch: %d vectors, %v", len(vs), err)
	}
	if e.Name() != name {
		t.Fatal("Name changed after use")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := e.Embed(cctx, texts); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v, want context.Canceled", err)
	}
	if w, ok := e.(WeightedEmbedder); ok {
		for i, text := range texts {
			if v := w.EmbedWeighted(text, nil); !slices.Equal(v, all[i]) {
				t.Fatalf("text %d: EmbedWeighted(nil) differs from Embed", i)
			}
			if v := w.EmbedWeighted(text, func(string) float64 { return 1 }); !slices.Equal(v, all[i]) {
				t.Fatalf("text %d: weights of 1 differ from Embed", i)
			}
		}
	}
}

func endsWithDim(name string, dim int) bool {
	suffix := "/" + itoaTest(dim)
	return len(name) > len(suffix) && name[len(name)-len(suffix):] == suffix
}
