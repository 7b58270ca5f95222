package vector

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// embedCorpus is a fixed, generated corpus of texts that exercise every
// part of the hash-v1 scheme: stems of every suffix rule, apostrophes and
// curly quotes inside and around words, upper and mixed case (with
// letters whose lower case changes length), non-Latin scripts, digits,
// stopwords, one-letter words, repeated words and pairs (tf > 1), and
// long texts.
func embedCorpus(n int) []string {
	vocab := strings.Fields(`relational organization hopefulness effectiveness creation agreement
payment kindness surprisingly reportedly running stopped quickly bigger biggest make passes
ponies caress status analysis cats dogs don't Sarah's O'Brien ’quoted’ 'single' naïve café
Straße 日本語 テキスト 42 2023 8th x I a the and of UPPER MiXeD İstanbul Σίσυφος ǅemal
ÆØÅ émigré hopping filled buzzing fizz tries flies ies sses agreed feed hoped
national rationalization Caroline pottery class sunset painting painted paints
support group went go going LGBTQ transgender counseling adoption agency 🎉 k8s v1.2 e-mail`)
	seps := []string{" ", " ", " ", ", ", ". ", "\n", " — ", "-", "/", "'", "’", "\t", " (", ") ", "!? ", ":", ""}
	r := rand.New(rand.NewPCG(26, 7))
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		words := 1 + r.IntN(40)
		if i%97 == 0 {
			words = 400 + r.IntN(400)
		}
		for j := 0; j < words; j++ {
			w := vocab[r.IntN(len(vocab))]
			if r.IntN(9) == 0 && j > 0 { // repeat the last pair sometimes
				w = vocab[(i+j)%len(vocab)]
			}
			b.WriteString(w)
			b.WriteString(seps[r.IntN(len(seps))])
		}
		out[i] = b.String()
	}
	out[0], out[1], out[2] = "", "   ", "the of and a"
	return out
}

// TestHashEmbedderCorpusGolden freezes the bits of hash-v1 over a corpus
// of 1,500 varied texts, unweighted and weighted (the SHA-256 of every
// vector's little-endian float32 bytes in order), and checks each against
// embedReference, the plain form of the scheme: any change to the
// embedder's speed-ups that moves one bit of one vector fails here.
func TestHashEmbedderCorpusGolden(t *testing.T) {
	e, err := NewHashEmbedder(0)
	if err != nil {
		t.Fatal(err)
	}
	weight := func(w string) float64 { return float64(len(w)%7) * 0.37 }
	plain, weighted := sha256.New(), sha256.New()
	var b [4]byte
	put := func(h interface{ Write([]byte) (int, error) }, v []float32) {
		for _, x := range v {
			binary.LittleEndian.PutUint32(b[:], math.Float32bits(x))
			h.Write(b[:])
		}
	}
	for i, tx := range embedCorpus(1500) {
		got, gotW := e.EmbedOne(tx), e.EmbedWeighted(tx, weight)
		put(plain, got)
		put(weighted, gotW)
		if i%5 != 0 {
			continue // the reference is slow; the digests cover every text
		}
		for k, want := range e.embedReference(tx, nil) {
			if math.Float32bits(got[k]) != math.Float32bits(want) {
				t.Fatalf("text %d: component %d %v, reference %v", i, k, got[k], want)
			}
		}
		for k, want := range e.embedReference(tx, weight) {
			if math.Float32bits(gotW[k]) != math.Float32bits(want) {
				t.Fatalf("text %d weighted: component %d %v, reference %v", i, k, gotW[k], want)
			}
		}
	}
	const (
		wantPlain    = "a5659e7b6f7aeb9c27c09c3c9d7f9f0192e7c6f205077b5ccb74b16cab7908e5"
		wantWeighted = "c7bc7fa9a78fd7410e4443c286302ec77dc6c9cfcea3b29dc7e0e6ca607e730b"
	)
	if got := hex.EncodeToString(plain.Sum(nil)); got != wantPlain {
		t.Errorf("corpus digest %s, want %s", got, wantPlain)
	}
	if got := hex.EncodeToString(weighted.Sum(nil)); got != wantWeighted {
		t.Errorf("weighted corpus digest %s, want %s", got, wantWeighted)
	}
}
