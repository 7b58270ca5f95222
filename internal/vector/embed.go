package vector

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"

	"github.com/unlimitedcontext/ucl/internal/textutil"
)

// Embedder turns texts into vectors of a fixed dimension.
type Embedder interface {
	// Name identifies the model and its dimension (e.g. "hash-v1/384",
	// "ollama/nomic-embed-text/768"). It keys the embedding cache and enters
	// projection digests: two embedders with the same Name must produce the
	// same vectors.
	Name() string
	// Dim is the length of every returned vector.
	Dim() int
	// Embed returns one vector per text, in order.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// DefaultHashDim is the HashEmbedder's default dimension.
const DefaultHashDim = 384

// HashEmbedder is the default, offline, deterministic embedder ("hash-v1").
//
// Scheme: each text contributes three kinds of features —
//
//	word     "w:"+stem(word) for each textutil.ContentWords word   weight 1.0
//	pair     "p:"+stem(a)+" "+stem(b) for adjacent content words   weight 0.5
//	trigram  "c:"+3-gram of "<"+word+">" (3 runes, unstemmed)      weight 0.25
//
// Each distinct feature f with term frequency tf adds sign(f)·weight·√tf to
// bucket(f), where h = splitmix64(FNV-1a-64(f)), bucket = h mod dim and sign
// is the top bit of h (signed feature hashing keeps collisions unbiased).
// The vector is then L2-normalised. √tf is the sublinear tf weight; it is
// used instead of 1+ln(tf) because IEEE square root is correctly rounded on
// every platform while math.Log is not guaranteed to be.
//
// A feature is identified by its 64-bit hash (and weight class): identical
// hashes are one feature. Determinism: features are sorted by (hash, weight)
// before accumulation,
// sums are float64 with explicit rounding (no FMA), so the output is
// bit-for-bit identical across runs, platforms and Go versions. Changing the
// scheme must change Name ("hash-v2").
//
// Empty text (or text with no content words) yields the zero vector. Index
// implementations store a zero vector but never return it as a hit, and a
// zero query vector returns no hits.
type HashEmbedder struct {
	dim int
}

// NewHashEmbedder returns a HashEmbedder of dimension dim (0 means
// DefaultHashDim).
func NewHashEmbedder(dim int) (*HashEmbedder, error) {
	if dim == 0 {
		dim = DefaultHashDim
	}
	if dim < 8 || dim > MaxDim {
		return nil, fmt.Errorf("new hash embedder: dim %d: %w", dim, ErrInvalidOptions)
	}
	return &HashEmbedder{dim: dim}, nil
}

// Name returns "hash-v1/<dim>".
func (h *HashEmbedder) Name() string { return fmt.Sprintf("hash-v1/%d", h.dim) }

// Dim returns the vector dimension.
func (h *HashEmbedder) Dim() int { return h.dim }

// Embed embeds each text; it never fails except on a cancelled context.
//
// From 2·embedParallelMin texts on, the texts are split between up to
// GOMAXPROCS goroutines (a catch-up embeds in batches of hundreds, and
// embedding is most of the vector projection's build): each vector is a
// function of its text alone, so the split changes nothing in the output.
func (h *HashEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	workers := min(runtime.GOMAXPROCS(0), len(texts)/embedParallelMin, 8)
	if workers < 2 {
		return out, h.embedRange(ctx, texts, out)
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := w*len(texts)/workers, (w+1)*len(texts)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = h.embedRange(ctx, texts[lo:hi], out[lo:hi])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// embedParallelMin is the number of texts a goroutine of Embed takes at
// least (a 60-word text embeds in ~30-50 µs; a goroutine costs ~1 µs).
const embedParallelMin = 32

func (h *HashEmbedder) embedRange(ctx context.Context, texts []string, out [][]float32) error {
	for i, t := range texts {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("embed texts: %w", err)
			}
		}
		out[i] = h.EmbedOne(t)
	}
	return nil
}

type feature struct {
	h uint64
	w float64
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvAdd(x uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		x ^= uint64(s[i])
		x *= fnvPrime
	}
	return x
}

// EmbedOne embeds a single text.
func (h *HashEmbedder) EmbedOne(text string) []float32 { return h.embed(text, nil) }

// WeightedEmbedder is an optional Embedder capability: a query vector in
// which each content word counts weight(word) times its usual weight, so a
// caller that knows how rare a word is in the store (its IDF) can let the
// rare words of a question dominate its vector. Chunk vectors are embedded
// unweighted (Embed); only the query side changes, so stored vectors and
// digests do not depend on it.
type WeightedEmbedder interface {
	// EmbedWeighted embeds text with each content word w (as
	// textutil.ContentWords returns it) scaled by weight(w) ≥ 0. A nil
	// weight, or one that returns 1 for every word, gives exactly the
	// vector of Embed.
	EmbedWeighted(text string, weight func(word string) float64) []float32
}

// LexicalEmbedder is an optional Embedder capability. An embedder whose
// vectors are built from a text's own words and their spelling, with
// nothing learned about meaning (HashEmbedder), reports true: its cosines
// are a second view of the words BM25 already matches, so the query
// engine lets them reorder BM25's ranking only where BM25 cannot separate
// its candidates (query.Options.ANNGate). A learned model reports false
// or lacks the method.
type LexicalEmbedder interface {
	Lexical() bool
}

// IsLexical reports whether e is a lexical embedder (LexicalEmbedder).
func IsLexical(e Embedder) bool {
	l, ok := e.(LexicalEmbedder)
	return ok && l.Lexical()
}

// Lexical reports true: hash features are words, word pairs and trigrams.
func (h *HashEmbedder) Lexical() bool { return true }

// EmbedWeighted embeds text with word weights (see WeightedEmbedder): a
// word's feature and its trigrams are scaled by its weight, a pair by the
// geometric mean of its two words' weights. NaN, infinite or negative
// weights count as 0.
func (h *HashEmbedder) EmbedWeighted(text string, weight func(word string) float64) []float32 {
	return h.embed(text, weight)
}

// embedScratch is embed's working memory, reused across calls (embedding
// a chunk allocated ~10 KB of it, a sixth of the vector projection's
// allocation; it is the same arithmetic in the same order).
type embedScratch struct {
	feats []feature
	tmp   []feature // sortFeatures' buffer
	rb    []int
	pw    []byte
	acc   []float64
}

var embedScratches = sync.Pool{New: func() any { return new(embedScratch) }}

// maxKeptFeatures bounds the feature buffer kept for the next call (1 MB).
const maxKeptFeatures = 1 << 16

func (h *HashEmbedder) embed(text string, weight func(string) float64) []float32 {
	sc := embedScratches.Get().(*embedScratch)
	defer func() {
		if cap(sc.feats) > maxKeptFeatures { // a huge text: do not keep its buffers
			sc.feats, sc.tmp = nil, nil
		}
		embedScratches.Put(sc)
	}()
	words := textutil.ContentWords(text)
	feats := sc.feats[:0]
	var prevStem string
	var prevW float64
	rb := sc.rb // rune start offsets of the padded word, plus its length
	for i, w := range words {
		st := Stem(w)
		ww := 1.0
		if weight != nil {
			ww = weight(w)
			if !(ww >= 0) || math.IsInf(ww, 1) {
				ww = 0
			}
		}
		feats = append(feats, feature{mix64(fnvAdd(fnvAdd(fnvOffset, "w:"), st)), 1.0 * ww})
		if i > 0 {
			x := fnvAdd(fnvAdd(fnvOffset, "p:"), prevStem)
			x = fnvAdd(fnvAdd(x, " "), st)
			pw := 0.5
			if weight != nil {
				pw = float64(pw * math.Sqrt(prevW*ww))
			}
			feats = append(feats, feature{mix64(x), pw})
		}
		prevStem, prevW = st, ww
		// The padded word "<w>", its character trigrams hashed in place.
		pw := append(append(append(sc.pw[:0], '<'), w...), '>')
		sc.pw = pw
		rb = rb[:0]
		for off := range string(pw) { // no copy: the conversion only ranges
			rb = append(rb, off)
		}
		rb = append(rb, len(pw))
		cx := fnvAdd(fnvOffset, "c:")
		for j := 0; j+3 < len(rb); j++ {
			x := fnvAddBytes(cx, pw[rb[j]:rb[j+3]])
			feats = append(feats, feature{mix64(x), float64(0.25 * ww)})
		}
	}
	sc.feats, sc.rb = feats, rb
	sc.tmp = sortFeatures(feats, sc.tmp)
	if cap(sc.acc) < h.dim {
		sc.acc = make([]float64, h.dim)
	}
	acc := sc.acc[:h.dim]
	clear(acc)
	for i := 0; i < len(feats); {
		j := i
		for j < len(feats) && feats[j] == feats[i] {
			j++
		}
		x := feats[i].w * math.Sqrt(float64(j-i))
		if feats[i].h>>63 == 1 {
			x = -x
		}
		acc[feats[i].h%uint64(h.dim)] += x
		i = j
	}
	var ss float64
	for _, x := range acc {
		ss += float64(x * x)
	}
	out := make([]float32, h.dim)
	if ss == 0 {
		return out
	}
	norm := math.Sqrt(ss)
	for i, x := range acc {
		out[i] = float32(x / norm)
	}
	return out
}

// sortFeatures sorts f by hash, then weight, ascending (the order the
// features are summed in, which fixes the float bits), using tmp (returned,
// grown) as its buffer. A stable LSD radix sort on the hash, 8 bits a pass,
// then runs of equal hashes by weight: the same order a comparison sort
// gives (the order is total, and equal features are identical), at a third
// of pdqsort's time on a chunk's ~600 features, where sorting was half of
// embedding. Weights are never NaN (embed clamps them).
func sortFeatures(f, tmp []feature) []feature {
	n := len(f)
	if n < 2 {
		return tmp
	}
	if cap(tmp) < n {
		tmp = make([]feature, n)
	}
	tmp = tmp[:n]
	src, dst := f, tmp
	var count [256]int
	for shift := uint(0); shift < 64; shift += 8 {
		clear(count[:])
		for _, x := range src {
			count[byte(x.h>>shift)]++
		}
		if count[byte(src[0].h>>shift)] == n {
			continue // every hash has this digit: the pass would not move anything
		}
		pos := 0
		for d, c := range count {
			count[d], pos = pos, pos+c
		}
		for _, x := range src {
			d := byte(x.h >> shift)
			dst[count[d]] = x
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &f[0] {
		copy(f, src)
	}
	for i := 0; i < n; {
		j := i + 1
		for j < n && f[j].h == f[i].h {
			j++
		}
		if j-i > 1 {
			run := f[i:j]
			for a := 1; a < len(run); a++ {
				for b := a; b > 0 && run[b].w < run[b-1].w; b-- {
					run[b], run[b-1] = run[b-1], run[b]
				}
			}
		}
		i = j
	}
	return tmp
}

func fnvAddBytes(x uint64, s []byte) uint64 {
	for _, c := range s {
		x ^= uint64(c)
		x *= fnvPrime
	}
	return x
}

// Stem is a small, conservative suffix stripper (a subset of Porter step 1
// plus common derivational endings). It is part of the hash-v1 scheme: do
// not change it without renaming the embedder.
func Stem(w string) string {
	if len(w) <= 3 || !isASCIILower(w) {
		return w
	}
	w = strings.TrimSuffix(w, "'s")
	switch {
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
	case strings.HasSuffix(w, "s") && len(w) > 3:
		w = w[:len(w)-1]
	}
	for _, suf := range []struct{ s, r string }{
		{"ational", "at"}, {"ization", "iz"}, {"fulness", "ful"}, {"iveness", "iv"},
		{"ation", ""}, {"ement", ""}, {"ment", ""}, {"ness", ""}, {"ingly", ""},
		{"edly", ""}, {"ing", ""}, {"ed", ""}, {"ly", ""}, {"er", ""}, {"est", ""}, {"e", ""},
	} {
		if strings.HasSuffix(w, suf.s) && len(w)-len(suf.s)+len(suf.r) >= 3 {
			w = w[:len(w)-len(suf.s)] + suf.r
			if suf.r == "" {
				w = undouble(w)
			}
			break
		}
	}
	return w
}

// undouble turns "stopp" into "stop" (but keeps "ll", "ss", "zz").
func undouble(w string) string {
	n := len(w)
	if n >= 4 && w[n-1] == w[n-2] && !strings.ContainsRune("lsz", rune(w[n-1])) && !strings.ContainsRune("aeiou", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}

func isASCIILower(w string) bool {
	for i := 0; i < len(w); i++ {
		c := w[i]
		if (c < 'a' || c > 'z') && c != '\'' {
			return false
		}
	}
	return true
}
