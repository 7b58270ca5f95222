package summary

import (
	"cmp"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/unlimitedcontext/ucl/internal/textutil"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// The extraction as it was before summarizeFirst numbered the terms
// (kept as the reference the equivalence tests compare with): maps keyed
// by word for the stats, the df and the weights.

// refExtract is what refSummarizeFirst returns.
type refExtract struct {
	text    string
	chosen  []bool
	best    int
	stats   map[string]*termStat
	weights map[string]float64
	terms   []string
}

// refSummarizeFirst is summarize without key terms; firstBonus applies to
// sents[0] only when bonusFirst.
func refSummarizeFirst(sents []sentence, maxTokens int, bonusFirst bool) refExtract {
	n := len(sents)
	if n == 0 || maxTokens <= 0 {
		return refExtract{}
	}
	// Sized for every word being distinct, so that the map never grows and
	// the stats come from one allocation: growing the map and a termStat
	// per term were a third of summarizing.
	total := 0
	for _, s := range sents {
		total += len(s.words)
	}
	stats := make(map[string]*termStat, total)
	arena := make([]termStat, 0, total)
	uniq := refDistinctWords(sents)
	for i, s := range sents {
		for _, w := range s.words {
			st := stats[w]
			if st == nil {
				arena = append(arena, termStat{})
				st = &arena[len(arena)-1]
				stats[w] = st
			}
			st.count++
		}
		for _, w := range uniq[i] {
			stats[w].df++
		}
	}
	weights := make(map[string]float64, len(stats))
	terms := make([]string, 0, len(stats))
	for w, st := range stats {
		weights[w] = termWeight(st.count, st.df, n)
		terms = append(terms, w)
	}
	chosen, nChosen, best := refPick(sents, uniq, weights, bonusFirst, maxTokens)
	ex := refExtract{text: join(sents, chosen), chosen: chosen, best: best, stats: stats, weights: weights, terms: terms}
	if nChosen == 0 {
		// Not even the best sentence fits: cut it.
		ex.text = cut(sents[best].text, maxTokens)
	}
	return ex
}

// refDistinctWords are the distinct content words of each sentence in
// first-seen order (sentences are short: a linear scan beats a map, except
// for a long run of text without a sentence end, which gets a map instead
// of a quadratic scan).
func refDistinctWords(sents []sentence) [][]string {
	uniq := make([][]string, len(sents))
	for i, s := range sents {
		u := make([]string, 0, len(s.words))
		if len(s.words) > 64 {
			seen := make(map[string]struct{}, len(s.words))
			for _, w := range s.words {
				if _, ok := seen[w]; !ok {
					seen[w] = struct{}{}
					u = append(u, w)
				}
			}
			uniq[i] = u
			continue
		}
	next:
		for _, w := range s.words {
			for _, v := range u {
				if v == w {
					continue next
				}
			}
			u = append(u, w)
		}
		uniq[i] = u
	}
	return uniq
}

// refPick scores sents (uniq: their distinct words) with the term weights and
// takes the best greedily under maxTokens, skipping duplicates. firstBonus
// applies to sents[0] when bonusFirst. best is the highest-scoring sentence
// (ties: earlier first).
func refPick(sents []sentence, uniq [][]string, weights map[string]float64, bonusFirst bool, maxTokens int) (chosen []bool, nChosen, best int) {
	n := len(sents)
	// Sums run in sentence order so that rounding does not depend on map
	// order.
	scores := make([]float64, n)
	for i, u := range uniq {
		sum := 0.0
		for _, w := range u {
			sum = float64(sum + weights[w])
		}
		sc := float64(sum / float64(max(len(u), lengthFloor)))
		if i == 0 && bonusFirst {
			sc = float64(sc * firstBonus)
		}
		scores[i] = sc
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	// Higher score first, then earlier: a total order (scores are never
	// NaN), so an unstable sort gives the one result.
	slices.SortFunc(order, func(a, b int) int {
		if scores[a] != scores[b] {
			if scores[a] > scores[b] {
				return -1
			}
			return 1
		}
		return cmp.Compare(a, b)
	})

	// Greedy selection under the budget, skipping duplicates. The joined
	// text's estimate is kept incrementally: bytes and words of sentences
	// joined by one space add up exactly (sentences carry no outer space).
	chosen = make([]bool, n)
	seenText := map[string]struct{}{}
	bytes, words := 0, 0
	for _, i := range order {
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
	return chosen, nChosen, order[0]
}

// refCountWords is countWords as it was: unicode.IsSpace on every rune.
func refCountWords(s string) int {
	n, in := 0, false
	for _, r := range s {
		if unicode.IsSpace(r) {
			in = false
		} else if !in {
			in = true
			n++
		}
	}
	return n
}

// refTexts are texts for the equivalence tests: generated prose (many
// ties between sentences of the same words, repeated sentences, short
// budgets), long runs without a sentence end (over distinctWords' 64-word
// switch), and non-ASCII words and spaces.
func refTexts(r *rand.Rand) []string {
	var out []string
	for i := 0; i < 300; i++ {
		out = append(out, projtest.Text(r, 1+r.Intn(200)))
	}
	for i := 0; i < 50; i++ {
		out = append(out, projtest.TextZipf(r, 1+r.Intn(400), 50+r.Intn(500)))
	}
	for i := 0; i < 30; i++ {
		var b strings.Builder
		for j := r.Intn(300); j > 0; j-- {
			fmt.Fprintf(&b, "w%d ", r.Intn(80))
		}
		out = append(out, b.String())
	}
	odd := []string{"Ünïcode", "naïve", "ÉTÉ", "l’été", "x\u00a0y", "a\u2003b", "\u0085", "中文", "¿qué?", "same.", "Same.", "SAME."}
	for i := 0; i < 100; i++ {
		var b strings.Builder
		for j := r.Intn(60); j > 0; j-- {
			b.WriteString(odd[r.Intn(len(odd))])
			b.WriteString([]string{" ", ". ", "\n\n", "\t", "! "}[r.Intn(5)])
		}
		out = append(out, b.String())
	}
	return out
}

// TestSummarizeMatchesMaps: the numbered terms give every output of the
// map version (text, choices, best sentence, each term's count, df and
// weight, the key terms), with and without the first-sentence bonus, over
// single texts and groups of texts, at several budgets.
func TestSummarizeMatchesMaps(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	texts := refTexts(r)
	for round := 0; round < 600; round++ {
		var group []string
		for j := 1 + r.Intn(4); j > 0; j-- {
			group = append(group, texts[r.Intn(len(texts))])
		}
		sents := split(group)
		maxTokens := []int{0, 1, 5, 30, DefaultMaxTokens, 1000}[r.Intn(6)]
		bonus := r.Intn(2) == 0
		nTerms := r.Intn(12)
		want := refSummarizeFirst(sents, maxTokens, bonus)
		got := summarizeFirst(sents, maxTokens, bonus)
		if got.text != want.text || got.best != want.best || !slices.Equal(got.chosen, want.chosen) {
			t.Fatalf("round %d: text %q best %d chosen %v, want %q %d %v", round, got.text, got.best, got.chosen, want.text, want.best, want.chosen)
		}
		if len(got.terms) != len(want.terms) {
			t.Fatalf("round %d: %d terms, want %d", round, len(got.terms), len(want.terms))
		}
		for id, w := range got.terms {
			if got.stats[id] != *want.stats[w] || got.weights[id] != want.weights[w] {
				t.Fatalf("round %d: term %q stats %v weight %v, want %v %v", round, w, got.stats[id], got.weights[id], *want.stats[w], want.weights[w])
			}
		}
		if !bonus {
			continue
		}
		wantTerms := []string{}
		if len(want.terms) > 0 {
			wantTerms = topTerms(slices.Clone(want.terms), want.weights, nTerms)
		}
		ex := summarize(sents, maxTokens, nTerms)
		if !slices.Equal(ex.keyTerms, wantTerms) {
			t.Fatalf("round %d: key terms %v, want %v", round, ex.keyTerms, wantTerms)
		}
		for i, w := range ex.keyTerms {
			if ex.keyStats[i] != *want.stats[w] {
				t.Fatalf("round %d: key term %q stats %v, want %v", round, w, ex.keyStats[i], *want.stats[w])
			}
		}
	}
}

// TestCountWordsMatchesRunes: the ASCII path counts what unicode.IsSpace
// on every rune counts, invalid UTF-8 included.
func TestCountWordsMatchesRunes(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	pieces := []string{"a", "Z", " ", "\t", "\n", "\v", "\f", "\r", "\x1c", "\x85", "\u0085", "\u00a0", "\u2003", "é", "\xff", "\xe2\x80", ".", "'"}
	for round := 0; round < 5000; round++ {
		var b strings.Builder
		for j := r.Intn(30); j > 0; j-- {
			b.WriteString(pieces[r.Intn(len(pieces))])
		}
		s := b.String()
		if got, want := countWords(s), refCountWords(s); got != want {
			t.Fatalf("countWords(%q) = %d, want %d", s, got, want)
		}
	}
	for _, s := range refTexts(r) {
		if got, want := countWords(s), refCountWords(s); got != want {
			t.Fatalf("countWords(%q) = %d, want %d", s, got, want)
		}
	}
}

// refSplit is split as it was: AppendContentWords (a string per lowered
// word) into a scratch list of its own.
func refSplit(texts []string) []sentence {
	var out []sentence
	var scratch []string
	var ends []int
	for _, t := range texts {
		for _, s := range textutil.Sentences(bounded(t)) {
			scratch = textutil.AppendContentWords(scratch, s)
			ends = append(ends, len(scratch))
			out = append(out, sentence{text: s, pos: len(out)})
		}
	}
	words := slices.Clone(scratch)
	from := 0
	for i, end := range ends {
		out[i].words = words[from:end:end]
		from = end
	}
	return out
}

// TestSplitMatchesAppendContentWords: split's pooled scratch and shared
// lowered string give the sentences and words of the list it had, for
// single texts and groups, one after another through the same pool.
func TestSplitMatchesAppendContentWords(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	texts := refTexts(r)
	texts = append(texts, "", "   ", "ABC DEF. Ghi JKL MNO!", strings.Repeat("Word ", 20000))
	for round := 0; round < 1500; round++ {
		var group []string
		for j := 1 + r.Intn(3); j > 0; j-- {
			group = append(group, texts[r.Intn(len(texts))])
		}
		got, want := split(group), refSplit(group)
		if len(got) != len(want) {
			t.Fatalf("round %d: %d sentences, want %d", round, len(got), len(want))
		}
		for i := range got {
			if got[i].text != want[i].text || got[i].pos != want[i].pos || !slices.Equal(got[i].words, want[i].words) {
				t.Fatalf("round %d, sentence %d: %q %d %q, want %q %d %q", round, i, got[i].text, got[i].pos, got[i].words, want[i].text, want[i].pos, want[i].words)
			}
			if len(got[i].words) != cap(got[i].words) {
				t.Fatalf("round %d, sentence %d: words cap %d, len %d", round, i, cap(got[i].words), len(got[i].words))
			}
		}
	}
}
