package vector

import (
	"math"
	"strings"
	"testing"

	"cmp"
	"github.com/unlimitedcontext/ucl/internal/textutil"
	"slices"
)

// TestHashEmbedderScratchSame: embed with reused scratch memory gives the
// bits the allocating version (embedReference, the code before the
// scratch) gives, on varied texts, weighted and not, in any call order.
func TestHashEmbedderScratchSame(t *testing.T) {
	e, _ := NewHashEmbedder(0)
	texts := []string{
		"", "a", "How do I reset my password?",
		"Meeting notes — May 8th 2023: discussed the Arweave mirror, naïve caching, and 42 open issues.",
		"日本語のテキスト と English mixed, émigré café Straße ÆØÅ",
		strings.Repeat("long repeated words make many equal features ", 200),
	}
	for i := 0; i < 200; i++ {
		var b strings.Builder
		for j := 0; j < 5+i%70; j++ {
			b.WriteString([]string{"alpha", "beta's", "gamma", "delta", "naïve", "ünïcödé", "running", "stopped", "x", "42"}[(i*7+j*3)%10])
			b.WriteByte(" ,.\n"[j%4])
		}
		texts = append(texts, b.String())
	}
	weight := func(w string) float64 { return float64(len(w)%5) * 0.3 }
	for round := 0; round < 2; round++ {
		for i, tx := range texts {
			for _, wf := range []func(string) float64{nil, weight} {
				got, want := e.embed(tx, wf), e.embedReference(tx, wf)
				for k := range want {
					if math.Float32bits(got[k]) != math.Float32bits(want[k]) {
						t.Fatalf("text %d (weighted %v): component %d %v, want %v", i, wf != nil, k, got[k], want[k])
					}
				}
			}
		}
	}
}

func (h *HashEmbedder) embedReference(text string, weight func(string) float64) []float32 {
	words := textutil.ContentWords(text)
	feats := make([]feature, 0, len(words)*10)
	var prevStem string
	var prevW float64
	var rb []int // rune start offsets of the padded word, plus its length
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
		pw := "<" + w + ">"
		rb = rb[:0]
		for off := range pw {
			rb = append(rb, off)
		}
		rb = append(rb, len(pw))
		for j := 0; j+3 < len(rb); j++ {
			x := fnvAdd(fnvAdd(fnvOffset, "c:"), pw[rb[j]:rb[j+3]])
			feats = append(feats, feature{mix64(x), float64(0.25 * ww)})
		}
	}
	slices.SortFunc(feats, func(a, b feature) int {
		if c := cmp.Compare(a.h, b.h); c != 0 {
			return c
		}
		return cmp.Compare(a.w, b.w)
	})
	acc := make([]float64, h.dim)
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

// TestAccumulateOrder: summing features grouped by bucket gives the bits
// of summing them after one sort of all features by (hash, weight), on
// features with repeated hashes, repeated weights and crowded buckets,
// at the default dimension and another.
func TestAccumulateOrder(t *testing.T) {
	sc := new(embedScratch)
	for _, dim := range []int{DefaultHashDim, 37} {
		e, err := NewHashEmbedder(dim)
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n < 3000; n += 7 + n/3 {
			f := make([]feature, n)
			for i := range f {
				x := mix64(uint64(i * 31 % (n/3 + 1)))
				if i%5 == 0 {
					x = x &^ 0xFFFF * uint64(dim) // many features in bucket 0
				}
				f[i] = feature{x, float64(i%4)*0.25 + 0.1}
			}
			want := make([]float64, dim)
			sorted := slices.Clone(f)
			slices.SortFunc(sorted, func(a, b feature) int {
				if c := cmp.Compare(a.h, b.h); c != 0 {
					return c
				}
				return cmp.Compare(a.w, b.w)
			})
			for i := 0; i < len(sorted); {
				j := i
				for j < len(sorted) && sorted[j] == sorted[i] {
					j++
				}
				x := sorted[i].w * math.Sqrt(float64(j-i))
				if sorted[i].h>>63 == 1 {
					x = -x
				}
				want[sorted[i].h%uint64(dim)] += x
				i = j
			}
			var wantSS float64
			for _, x := range want {
				wantSS += float64(x * x)
			}
			// accumulate sets only the buckets it lists: NaN elsewhere
			// shows any it leaves unset but reads or fails to list.
			for i := range sc.acc {
				sc.acc[i] = math.NaN()
			}
			ss := e.accumulate(sc, f)
			got := make([]float64, dim)
			for k, b := range sc.touched {
				if k > 0 && b <= sc.touched[k-1] {
					t.Fatalf("dim %d, n=%d: touched buckets out of order: %v", dim, n, sc.touched)
				}
				got[b] = sc.acc[b]
			}
			for b := range want {
				if math.Float64bits(got[b]) != math.Float64bits(want[b]) {
					t.Fatalf("dim %d, n=%d: bucket %d sums to %v, the sorted order to %v", dim, n, b, got[b], want[b])
				}
			}
			if math.Float64bits(ss) != math.Float64bits(wantSS) {
				t.Fatalf("dim %d, n=%d: sum of squares %v, in index order %v", dim, n, ss, wantSS)
			}
		}
	}
}
