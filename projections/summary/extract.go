package summary

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/unlimitedcontext/ucl/internal/textutil"
)

// Scoring constants. They are part of the format: changing one changes
// every summary and must bump FormatVersion.
const (
	lengthFloor = 8    // a sentence's score is divided by max(content words, lengthFloor)
	firstBonus  = 1.15 // multiplier for the first sentence of the text
	ellipsis    = "…"  // marks a sentence cut to fit the budget
)

// sentence is one sentence of a group, in reading order.
type sentence struct {
	text  string
	words []string // content words, with repeats
	pos   int
}

// extract is the result of summarising one text or group of texts.
type extract struct {
	text     string
	keyTerms []string
	keyStats []termStat // the key terms' stats, in keyTerms' order
	chosen   []bool     // sentences taken (empty input: nil)
	best     int        // the best-scoring sentence

	// The terms are numbered in order of first occurrence; these are by
	// number.
	terms   []string
	stats   []termStat
	weights []float64
}

// MaxAnalysedBytes bounds the text of one chunk that a summary reads: the
// first MaxAnalysedBytes bytes, cut back to a rune boundary. A chunk made by
// the chunker is far smaller; the bound is for one huge conversation turn
// (up to log.MaxBodySize), whose summary work and candidate sentences would
// otherwise grow with it. Part of the format.
const MaxAnalysedBytes = 64 << 10

// bounded is the prefix of t a summary analyses (MaxAnalysedBytes).
func bounded(t string) string {
	if len(t) <= MaxAnalysedBytes {
		return t
	}
	n := MaxAnalysedBytes
	for n > 0 && !utf8.RuneStart(t[n]) {
		n--
	}
	return t[:n]
}

// split turns texts (in reading order) into sentences with content words,
// each text bounded to its first MaxAnalysedBytes.
//
// The words are gathered in pooled scratch and copied once, exactly sized:
// a chunk keeps its analysis until its commit, and sentences that pointed
// into a growing array kept every array it outgrew (growing it was a
// fifth of split). A word lowered from capitals is not a substring of the
// text: all of a call's such words are one string, and each word a
// substring of it (a string per word was a third of split's allocations).
func split(texts []string) []sentence {
	sc := splitPool.Get().(*splitScratch)
	defer splitPool.Put(sc)
	sc.words, sc.ends, sc.lowered, sc.lowAt, sc.lowEnd = sc.words[:0], sc.ends[:0], sc.lowered[:0], sc.lowAt[:0], sc.lowEnd[:0]
	add := func(w string, lowered []byte) {
		if lowered != nil {
			sc.lowered = append(sc.lowered, lowered...)
			sc.lowAt = append(sc.lowAt, len(sc.words))
			sc.lowEnd = append(sc.lowEnd, len(sc.lowered))
		}
		sc.words = append(sc.words, w)
	}
	var out []sentence
	for _, t := range texts {
		ss := textutil.Sentences(bounded(t))
		if out == nil {
			out = make([]sentence, 0, len(ss))
		}
		for _, s := range ss {
			textutil.EachContentWord(s, add)
			sc.ends = append(sc.ends, len(sc.words))
			out = append(out, sentence{text: s, pos: len(out)})
		}
	}
	words := slices.Clone(sc.words)
	clear(sc.words) // the pool keeps no text alive
	if len(sc.lowAt) > 0 {
		all := string(sc.lowered)
		from := 0
		for i, at := range sc.lowAt {
			words[at] = all[from:sc.lowEnd[i]]
			from = sc.lowEnd[i]
		}
	}
	from := 0
	for i, end := range sc.ends {
		out[i].words = words[from:end:end]
		from = end
	}
	return out
}

// splitScratch is split's reused scratch: the words of every sentence one
// after another, where each sentence's end, and the words lowered from
// capitals (one after another, with their place in words and their end).
type splitScratch struct {
	words   []string
	ends    []int
	lowered []byte
	lowAt   []int
	lowEnd  []int
}

var splitPool = sync.Pool{New: func() any { return new(splitScratch) }}

// summarize is the extractive summary of sentences (see the package doc):
// term weight w(t) = count(t) · √(N / df(t)) with df over sentences; a
// sentence scores Σ w(t) over its distinct terms / max(#terms, lengthFloor),
// ×firstBonus for the first; the best sentences are taken greedily while the
// joined text stays within maxTokens and printed in original order; the key
// terms are the nTerms heaviest words (ties by word).
//
// Arithmetic uses only +, ×, ÷ and √, each rounded explicitly, so the result
// is the same on every platform.
func summarize(sents []sentence, maxTokens, nTerms int) extract {
	ex := summarizeFirst(sents, maxTokens, true)
	ex.keyTerms = []string{}
	if len(ex.terms) > 0 {
		top := topTermIDs(ex.terms, ex.weights, nTerms)
		ex.keyTerms = make([]string, len(top))
		ex.keyStats = make([]termStat, len(top))
		for i, id := range top {
			ex.keyTerms[i], ex.keyStats[i] = ex.terms[id], ex.stats[id]
		}
	}
	return ex
}

// summarizeFirst is summarize without key terms; firstBonus applies to
// sents[0] only when bonusFirst.
//
// Each term gets a number at its first occurrence (one map lookup per
// word), and its stats, its weight and the sentences' distinct terms are
// slices by number: a map keyed by word for each of them (stats, df,
// weights, the scores' lookups) was most of summarizing's CPU, a sixth of
// a summary build's.
func summarizeFirst(sents []sentence, maxTokens int, bonusFirst bool) extract {
	n := len(sents)
	if n == 0 || maxTokens <= 0 {
		return extract{keyTerms: []string{}}
	}
	total := 0
	for _, s := range sents {
		total += len(s.words)
	}
	// The numbering's scratch is pooled: sized afresh for every word
	// being distinct, it was a quarter of a summary build's allocated
	// bytes. Only the terms and their stats are copied out, exactly sized.
	sc := summarizePool.Get().(*summarizeScratch)
	defer sc.release()
	ids := sc.ids
	terms, stats, counted := sc.terms[:0], sc.stats[:0], sc.counted[:0] // counted: the last sentence (from 1) that counted a term's df
	uniq := sc.uniq[:0]                                                 // each sentence's distinct terms in first-seen order, one after another
	ends := make([]int, n)                                              // where each sentence's distinct terms end in uniq
	for i, s := range sents {
		for _, w := range s.words {
			id, ok := ids[w]
			if !ok {
				id = int32(len(terms))
				ids[w] = id
				terms = append(terms, w)
				stats = append(stats, termStat{})
				counted = append(counted, 0)
			}
			stats[id].count++
			if counted[id] != int32(i+1) {
				counted[id] = int32(i + 1)
				stats[id].df++
				uniq = append(uniq, id)
			}
		}
		ends[i] = len(uniq)
	}
	sc.terms, sc.stats, sc.counted, sc.uniq = terms, stats, counted, uniq
	terms, stats = slices.Clone(terms), slices.Clone(stats)
	weights := make([]float64, len(terms))
	for id, st := range stats {
		weights[id] = termWeight(st.count, st.df, n)
	}
	chosen, nChosen, best := pick(sents, uniq, ends, weights, bonusFirst, maxTokens)
	ex := extract{text: join(sents, chosen), chosen: chosen, best: best, terms: terms, stats: stats, weights: weights}
	if nChosen == 0 {
		// Not even the best sentence fits: cut it.
		ex.text = cut(sents[best].text, maxTokens)
	}
	return ex
}

// summarizeScratch is summarizeFirst's reused scratch.
type summarizeScratch struct {
	ids     map[string]int32
	terms   []string
	stats   []termStat
	counted []int32
	uniq    []int32
}

// maxPooledTerms bounds the scratch kept for the next call: clearing a
// map costs its capacity, so one huge text's map is not kept for the
// many small ones.
const maxPooledTerms = 4096

var summarizePool = sync.Pool{New: func() any { return &summarizeScratch{ids: map[string]int32{}} }}

// release returns sc to the pool, holding no text.
func (sc *summarizeScratch) release() {
	if len(sc.terms) > maxPooledTerms {
		return
	}
	clear(sc.ids)
	clear(sc.terms[:cap(sc.terms)])
	summarizePool.Put(sc)
}

// termStat is a term's occurrences and the number of sentences holding it.
type termStat struct{ count, df int }

// termWeight is count · √(n / df), rounded explicitly.
func termWeight(count, df, n int) float64 {
	ratio := float64(float64(n) / float64(df))
	return float64(float64(count) * math.Sqrt(ratio))
}

// topTerms returns the n heaviest of terms (ties by word), heaviest first;
// terms are distinct. It keeps the best n in a small sorted slice as it
// goes instead of sorting every term: a block has hundreds of terms, a
// summary 8, and the sort's comparisons (two map lookups each) were
// topTerms' whole cost, ~2% of a catch-up. terms is reused for the result.
func topTerms(terms []string, weights map[string]float64, n int) []string {
	type tw struct {
		t string
		w float64
	}
	better := func(a, b tw) bool {
		if a.w != b.w {
			return a.w > b.w
		}
		return a.t < b.t
	}
	n = max(min(n, len(terms)), 0)
	top := make([]tw, 0, n)
	for _, t := range terms {
		c := tw{t, weights[t]}
		if len(top) == n {
			if n == 0 || !better(c, top[n-1]) {
				continue
			}
			top = top[:n-1]
		}
		i := sort.Search(len(top), func(i int) bool { return better(c, top[i]) })
		top = append(top, tw{})
		copy(top[i+1:], top[i:])
		top[i] = c
	}
	out := terms[:n]
	for i, c := range top {
		out[i] = c.t
	}
	return out
}

// topTermIDs is topTerms over numbered terms: the numbers of the n
// heaviest (ties by word), heaviest first.
func topTermIDs(terms []string, weights []float64, n int) []int32 {
	better := func(a, b int32) bool {
		if weights[a] != weights[b] {
			return weights[a] > weights[b]
		}
		return terms[a] < terms[b]
	}
	n = max(min(n, len(terms)), 0)
	top := make([]int32, 0, n)
	for id := range terms {
		c := int32(id)
		if len(top) == n {
			if n == 0 || !better(c, top[n-1]) {
				continue
			}
			top = top[:n-1]
		}
		i := sort.Search(len(top), func(i int) bool { return better(c, top[i]) })
		top = append(top, 0)
		copy(top[i+1:], top[i:])
		top[i] = c
	}
	return top
}

// pick scores sents with the term weights (uniq[ends[i-1]:ends[i]]: the
// distinct terms of sentence i) and takes the best greedily under
// maxTokens, skipping duplicates. firstBonus applies to sents[0] when
// bonusFirst. best is the highest-scoring sentence (ties: earlier first).
func pick(sents []sentence, uniq []int32, ends []int, weights []float64, bonusFirst bool, maxTokens int) (chosen []bool, nChosen, best int) {
	n := len(sents)
	// Sums run in sentence order so that rounding does not depend on map
	// order.
	scores := make([]float64, n)
	from := 0
	for i, end := range ends {
		sum := 0.0
		for _, id := range uniq[from:end] {
			sum = float64(sum + weights[id])
		}
		sc := float64(sum / float64(max(end-from, lengthFloor)))
		if i == 0 && bonusFirst {
			sc = float64(sc * firstBonus)
		}
		scores[i] = sc
		from = end
	}
	// Higher score first, then earlier: a total order (scores are never
	// NaN), so an unstable sort gives the one result. The sort moves
	// (score, position) pairs, not positions that index the scores
	// (half of pick's time was that sort's indirect comparisons).
	type ranked struct {
		score float64
		i     int
	}
	order := make([]ranked, n)
	for i, sc := range scores {
		order[i] = ranked{sc, i}
	}
	slices.SortFunc(order, func(a, b ranked) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.i, b.i)
	})

	// Greedy selection under the budget, skipping duplicates. The joined
	// text's estimate is kept incrementally: bytes and words of sentences
	// joined by one space add up exactly (sentences carry no outer space).
	chosen = make([]bool, n)
	seenText := map[string]struct{}{}
	bytes, words := 0, 0
	for _, r := range order {
		i := r.i
		b := len(sents[i].text)
		if nChosen > 0 {
			b++
		}
		if (bytes+b+3)/4 > maxTokens { // too long by bytes alone
			continue
		}
		w := countWords(sents[i].text)
		if estimate(bytes+b, words+w) > maxTokens {
			continue
		}
		key := strings.ToLower(sents[i].text)
		if _, dup := seenText[key]; dup {
			continue
		}
		chosen[i] = true
		seenText[key] = struct{}{}
		nChosen++
		bytes, words = bytes+b, words+w
	}
	return chosen, nChosen, order[0].i
}

// estimate is textutil.EstimateTokens from a text's byte and word counts.
func estimate(bytes, words int) int {
	if bytes == 0 {
		return 0
	}
	return max((bytes+3)/4, (words*4+2)/3)
}

// countWords counts runs of non-space as textutil.EstimateTokens does
// (unicode.IsSpace; ASCII bytes without decoding).
func countWords(s string) int {
	n, in := 0, false
	for i := 0; i < len(s); {
		var space bool
		if c := s[i]; c < utf8.RuneSelf {
			space = c == ' ' || c >= '\t' && c <= '\r'
			i++
		} else {
			r, size := utf8.DecodeRuneInString(s[i:])
			space = unicode.IsSpace(r)
			i += size
		}
		if space {
			in = false
		} else if !in {
			in = true
			n++
		}
	}
	return n
}

func join(sents []sentence, chosen []bool) string {
	var b strings.Builder
	for i, s := range sents {
		if chosen[i] {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(s.text)
		}
	}
	return b.String()
}

// cut returns the longest word prefix of s (plus an ellipsis) within
// maxTokens; "" when not even one word fits.
func cut(s string, maxTokens int) string {
	fields := strings.Fields(s)
	lo, hi := 0, len(fields) // largest k with fits(k)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if textutil.EstimateTokens(strings.Join(fields[:mid], " ")+ellipsis) <= maxTokens {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if lo == 0 {
		return ""
	}
	return strings.Join(fields[:lo], " ") + ellipsis
}

// Trim keeps the key sentences of text, in their original order, within
// maxTokens (textutil.EstimateTokens), scored as a summary of the text
// alone. Text that already fits is returned unchanged; maxTokens <= 0 gives
// "". When not even the best sentence fits, it is cut at a word boundary
// and ends with "…".
func Trim(text string, maxTokens int) string {
	if maxTokens <= 0 {
		return ""
	}
	if textutil.EstimateTokens(text) <= maxTokens {
		return text
	}
	return summarize(split([]string{text}), maxTokens, 0).text
}
