package vector

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"strings"
	"sync"
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

// LocalEmbedder is an optional Embedder capability. An embedder that
// computes on this machine's CPU, calls no service, and whose Embed is
// safe for concurrent use (with itself and with searches) reports true:
// the vector projection then embeds batches on goroutines of their own
// ahead of its commit, where a service embedder keeps its requests in
// the commit, batched as before.
type LocalEmbedder interface {
	Local() bool
}

// Local reports true: hashing is pure computation, and embed's scratch
// memory is per call (a sync.Pool).
func (h *HashEmbedder) Local() bool { return true }

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
	feats   []feature
	tmp     []feature // features grouped by bucket
	cnt     []int     // features per bucket, then each bucket's end in tmp
	used    []uint64  // bitmap of the buckets that have features
	rb      []int
	pw      []byte
	acc     []float64 // bucket sums, valid at touched
	touched []int     // the buckets with features, ascending
	words   []string
	lower   []byte // lower-cased ASCII words (unweighted embeds only)
	stem    []byte // the current word's stem
	prev    []byte // the previous word's stem
}

var embedScratches = sync.Pool{New: func() any { return new(embedScratch) }}

// maxKeptFeatures bounds the feature buffer kept for the next call (1 MB).
const maxKeptFeatures = 1 << 16

// Hashes of the feature prefixes (fnvAdd(fnvOffset, "w:") and so on).
var (
	fnvWordPrefix = fnvAdd(fnvOffset, "w:")
	fnvPairPrefix = fnvAdd(fnvOffset, "p:")
	fnvGramPrefix = fnvAdd(fnvOffset, "c:")
)

func (h *HashEmbedder) embed(text string, weight func(string) float64) []float32 {
	sc := embedScratches.Get().(*embedScratch)
	defer func() {
		if cap(sc.feats) > maxKeptFeatures { // a huge text: do not keep its buffers
			sc.feats, sc.tmp, sc.words, sc.lower = nil, nil, nil, nil
		}
		clear(sc.words[:cap(sc.words)]) // keep no text alive in the pool
		embedScratches.Put(sc)
	}()
	// Unweighted, the words may point into sc.lower: weight is a caller's
	// function and could keep a word, which must not change under it.
	sc.words, sc.lower = contentWords(text, sc.words[:0], sc.lower[:0], weight == nil)
	words := sc.words
	feats := sc.feats[:0]
	var prevW float64
	rb := sc.rb // rune start offsets of the padded word, plus its length
	stem, prev := sc.stem, sc.prev
	for i, w := range words {
		stem = stemInto(stem, w)
		ww := 1.0
		if weight != nil {
			ww = weight(w)
			if !(ww >= 0) || math.IsInf(ww, 1) {
				ww = 0
			}
		}
		feats = append(feats, feature{mix64(fnvAddBytes(fnvWordPrefix, stem)), 1.0 * ww})
		if i > 0 {
			x := fnvAddBytes(fnvPairPrefix, prev)
			x = fnvAddBytes(fnvAdd(x, " "), stem)
			pw := 0.5
			if weight != nil {
				pw = float64(pw * math.Sqrt(prevW*ww))
			}
			feats = append(feats, feature{mix64(x), pw})
		}
		stem, prev = prev, stem
		prevW = ww
		// The padded word "<w>", its character trigrams hashed in place.
		pw := append(append(append(sc.pw[:0], '<'), w...), '>')
		sc.pw = pw
		gw := float64(0.25 * ww)
		if isASCII(w) { // a rune a byte: the trigrams are the byte windows
			for j := 0; j+3 <= len(pw); j++ {
				x := fnvAddBytes(fnvGramPrefix, pw[j:j+3])
				feats = append(feats, feature{mix64(x), gw})
			}
			continue
		}
		rb = rb[:0]
		for off := range string(pw) { // no copy: the conversion only ranges
			rb = append(rb, off)
		}
		rb = append(rb, len(pw))
		for j := 0; j+3 < len(rb); j++ {
			x := fnvAddBytes(fnvGramPrefix, pw[rb[j]:rb[j+3]])
			feats = append(feats, feature{mix64(x), gw})
		}
	}
	sc.feats, sc.rb, sc.stem, sc.prev = feats, rb, stem, prev
	ss := h.accumulate(sc, feats)
	out := make([]float32, h.dim)
	if ss == 0 {
		return out
	}
	norm := math.Sqrt(ss)
	for _, b := range sc.touched { // the other buckets' +0 is out's zero
		out[b] = float32(sc.acc[b] / norm)
	}
	return out
}

// bucket is h mod dim (the constant divisor of the default dimension is a
// multiply, not a division).
func (h *HashEmbedder) bucket(x uint64) int {
	if h.dim == DefaultHashDim {
		return int(x % DefaultHashDim)
	}
	return int(x % uint64(h.dim))
}

// accumulate adds each distinct feature f of feats, with tf its number of
// copies, as sign(f)·w·√tf to the sum of bucket(f), in the order the
// scheme fixes: ascending (hash, weight). Only the order of the sums into
// one bucket changes the bits, so the features are grouped by bucket (one
// counting pass) and each bucket's few features sorted by (hash, weight):
// the sums of a full sort of all the features (a radix sort of all of
// them was half of embedding), in one pass and small sorts.
//
// It sets sc.acc[b] to the sum of each bucket b that has features, lists
// those buckets in ascending order in sc.touched, and returns the sum of
// the squares of all dim sums in index order. The other buckets' sums are
// +0, and sc.acc there is left as it was: a sum is never -0 (it starts at
// +0, and +0 + -0 is +0), so the +0 squares the index-order loop over all
// dim buckets added change nothing in it, and the caller's output is
// already +0 there. The buckets with features are found in ascending
// order from a bitmap, not by a scan of all dim: a chunk's ~200 features
// touch about a third of 384 buckets, and dropping the scan's loop, the
// clear and the running sum of every bucket's count took ~19% off the CPU
// of embedding a LoCoMo turn (same-time pairs, stop 40).
func (h *HashEmbedder) accumulate(sc *embedScratch, feats []feature) float64 {
	if cap(sc.acc) < h.dim {
		sc.acc = make([]float64, h.dim)
	}
	acc := sc.acc[:h.dim]
	touched := sc.touched[:0]
	defer func() { sc.touched = touched }()
	n := len(feats)
	if n == 0 {
		return 0
	}
	if cap(sc.tmp) < n {
		sc.tmp = make([]feature, n)
	}
	tmp := sc.tmp[:n]
	// cnt and used are all zero between calls: each call resets the
	// entries it set.
	if cap(sc.cnt) < h.dim {
		sc.cnt = make([]int, h.dim)
	}
	cnt := sc.cnt[:h.dim]
	if words := (h.dim + 63) / 64; cap(sc.used) < words {
		sc.used = make([]uint64, words)
	}
	used := sc.used[:(h.dim+63)/64]
	for _, f := range feats {
		b := h.bucket(f.h)
		cnt[b]++
		used[b>>6] |= 1 << (b & 63)
	}
	// Each used bucket's count becomes its start in tmp; filling moves it
	// to its end, which is where the next used bucket starts.
	pos := 0
	for wi, w := range used {
		for ; w != 0; w &= w - 1 {
			b := wi<<6 | bits.TrailingZeros64(w)
			c := cnt[b]
			cnt[b] = pos
			pos += c
		}
	}
	for _, f := range feats {
		b := h.bucket(f.h)
		tmp[cnt[b]] = f
		cnt[b]++
	}
	var ss float64
	lo := 0
	for wi, w := range used {
		used[wi] = 0
		for ; w != 0; w &= w - 1 {
			b := wi<<6 | bits.TrailingZeros64(w)
			hi := cnt[b]
			cnt[b] = 0
			g := tmp[lo:hi]
			lo = hi
			var sum float64
			if len(g) == 1 { // most buckets: no order to fix, and w·√1 is w
				sum += signed(g[0].w, g[0].h) // +0 + x, not x: a weight-0 feature's -0 sums to +0
			} else {
				sortByHashWeight(g)
				for i := 0; i < len(g); {
					j := i + 1
					for j < len(g) && g[j] == g[i] {
						j++
					}
					x := g[i].w
					if j-i > 1 { // w·√1 is w: a square root only for a repeat
						x *= math.Sqrt(float64(j - i))
					}
					sum += signed(x, g[i].h)
					i = j
				}
			}
			acc[b] = sum
			touched = append(touched, b)
			ss += float64(sum * sum)
		}
	}
	return ss
}

// signed is x with the sign of hash h: -x when h's top bit is set, by
// flipping x's sign bit as negation does (a branch on the sign went
// either way at random for every feature).
func signed(x float64, h uint64) float64 {
	return math.Float64frombits(math.Float64bits(x) ^ h&(1<<63))
}

// sortByHashWeight sorts a bucket's features by hash, then weight
// (weights are never NaN: embed clamps them; equal features are
// identical, so stability does not matter).
func sortByHashWeight(g []feature) {
	less := func(a, b feature) bool { return a.h < b.h || (a.h == b.h && a.w < b.w) }
	if len(g) > 24 {
		slices.SortFunc(g, func(a, b feature) int {
			if c := cmp.Compare(a.h, b.h); c != 0 {
				return c
			}
			return cmp.Compare(a.w, b.w)
		})
		return
	}
	for a := 1; a < len(g); a++ {
		for b := a; b > 0 && less(g[b], g[b-1]); b-- {
			g[b], g[b-1] = g[b-1], g[b]
		}
	}
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
