package vector

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
)

func TestStem(t *testing.T) {
	cases := []struct{ in, want string }{
		{"passwords", "password"},
		{"resetting", "reset"},
		{"running", "run"},
		{"configured", "configur"},
		{"configuration", "configur"},
		{"configure", "configur"},
		{"databases", "databas"},
		{"database", "databas"},
		{"queries", "query"},
		{"classes", "class"},
		{"status", "status"},
		{"go", "go"},
		{"naïve", "naïve"},
	}
	for _, c := range cases {
		if got := Stem(c.in); got != c.want {
			t.Errorf("Stem(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func cos(a, b []float32) float64 { return float64(dot(a, b)) }

func TestHashEmbedderProperties(t *testing.T) {
	e, err := NewHashEmbedder(0)
	if err != nil {
		t.Fatal(err)
	}
	if e.Dim() != 384 || e.Name() != "hash-v1/384" {
		t.Fatalf("Dim=%d Name=%q", e.Dim(), e.Name())
	}
	if _, err := NewHashEmbedder(3); err == nil {
		t.Fatal("dim 3 accepted")
	}
	vs, err := e.Embed(context.Background(), []string{
		"How do I reset my password?",
		"Resetting passwords: how to do it",
		"The tomato plants in the greenhouse need more compost",
		"",
		"the of and", // stopwords only
		"How do I reset my password?",
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		var ss float64
		for _, x := range v {
			ss += float64(x) * float64(x)
		}
		if len(v) != 384 || (i != 3 && i != 4 && math.Abs(ss-1) > 1e-5) {
			t.Fatalf("vector %d: len %d, norm² %v", i, len(v), ss)
		}
	}
	if !isZero(vs[3]) || !isZero(vs[4]) {
		t.Fatal("empty / stopword-only text is not the zero vector")
	}
	if !equalBits(vs[0], vs[5]) {
		t.Fatal("same text, different vectors")
	}
	para, unrel := cos(vs[0], vs[1]), cos(vs[0], vs[2])
	t.Logf("cos(paraphrase)=%.3f cos(unrelated)=%.3f", para, unrel)
	if para < 0.3 || para < unrel+0.25 {
		t.Fatalf("paraphrase %.3f not clearly above unrelated %.3f", para, unrel)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Embed(ctx, []string{"x"}); err == nil {
		t.Fatal("cancelled context ignored")
	}
}

// TestHashEmbedderGolden freezes the hash-v1 scheme: the SHA-256 of the
// little-endian float32 bytes of fixed texts. If this changes, the scheme
// changed and Name must change with it (hash-v2).
func TestHashEmbedderGolden(t *testing.T) {
	e, _ := NewHashEmbedder(0)
	texts := []string{
		"How do I reset my password?",
		"Meeting notes — May 8th 2023: discussed the Arweave mirror, naïve caching, and 42 open issues.",
	}
	want := []string{
		"d330666d843708e42769cb0977dbe06ad9ef6673db59ff7c26f1f1469c8797f0",
		"878dd402f376d19a1bdbddc3d78de23c184b908f50fea297f7cee8942c38d31e",
	}
	for i, tx := range texts {
		v := e.EmbedOne(tx)
		b := make([]byte, 4*len(v))
		for j, x := range v {
			binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(x))
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != want[i] {
			t.Errorf("text %d: digest %s, want %s", i, got, want[i])
		}
	}
}

func TestHashEmbedderRetrieval(t *testing.T) {
	// Each query must retrieve its paraphrase first among distractors.
	docs := []string{
		"To reset your password, open settings and choose the security tab.",
		"We planted tomatoes and basil in the raised garden beds.",
		"The database migration failed because of a missing column in the users table.",
		"Our flight to Lisbon was delayed by three hours at the airport.",
		"Bake the bread at 220 degrees until the crust is golden.",
	}
	queries := []struct {
		q    string
		want int
	}{
		{"how can I change my passwords in the security settings", 0},
		{"planting tomato seedlings in the garden", 1},
		{"migrations failing on a missing database column", 2},
		{"delayed flights at the airport", 3},
		{"baking bread crust temperature", 4},
	}
	e, _ := NewHashEmbedder(0)
	x := mustExact(t, e.Dim())
	for i, d := range docs {
		if err := x.Add(idOf(i), e.EmbedOne(d)); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range queries {
		hits, err := x.Search(e.EmbedOne(q.q), 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 1 || hits[0].ID != idOf(q.want) {
			t.Errorf("query %q: hits %v, want %s", q.q, hits, idOf(q.want))
		}
	}
}

// EmbedWeighted without weights, or with one weight for every word, is
// EmbedOne bit for bit (the stored vectors are EmbedOne's, so an engine
// that weights only its queries changes no digest); a word of weight 0
// contributes nothing, its pairs included.
func TestEmbedWeighted(t *testing.T) {
	h, err := NewHashEmbedder(0)
	if err != nil {
		t.Fatal(err)
	}
	const text = "Caroline: I went to the pottery class and painted a sunset"
	want := h.EmbedOne(text)
	if got := h.EmbedWeighted(text, nil); !slices.Equal(got, want) {
		t.Fatal("EmbedWeighted(nil) differs from EmbedOne")
	}
	if got := h.EmbedWeighted(text, func(string) float64 { return 2 }); !slices.Equal(got, want) {
		t.Fatal("a uniform weight changed the normalised vector")
	}
	drop := func(w string) float64 {
		if w == "caroline" {
			return 0
		}
		return 1
	}
	if got, want := h.EmbedWeighted("caroline pottery class", drop), h.EmbedOne("pottery class"); !slices.Equal(got, want) {
		t.Fatal("a word of weight 0 still contributes")
	}
	for _, bad := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		got := h.EmbedWeighted("pottery", func(string) float64 { return bad })
		for _, x := range got {
			if x != 0 {
				t.Fatalf("weight %v: vector not zero", bad)
			}
		}
	}
	up := h.EmbedWeighted("pottery class", func(w string) float64 {
		if w == "pottery" {
			return 3
		}
		return 1
	})
	p, c := h.EmbedOne("pottery"), h.EmbedOne("class")
	if dot(up, p) <= dot(up, c) {
		t.Fatalf("weighting pottery up: cos(pottery) %.3f <= cos(class) %.3f", dot(up, p), dot(up, c))
	}
}

// TestHashEmbedParallelSameVectors: a batch large enough to be split
// between goroutines gives each text the vector it has alone.
func TestHashEmbedParallelSameVectors(t *testing.T) {
	e, err := NewHashEmbedder(0)
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, 4*embedParallelMin+3)
	for i := range texts {
		texts[i] = fmt.Sprintf("text %d about the parallel embedding of batch item %d", i, i*i)
	}
	got, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		want := e.EmbedOne(text)
		for j := range want {
			if math.Float32bits(got[i][j]) != math.Float32bits(want[j]) {
				t.Fatalf("text %d, component %d: %v, alone %v", i, j, got[i][j], want[j])
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Embed(ctx, texts); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled batch: %v", err)
	}
}
