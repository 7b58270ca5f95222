package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"time"
)

// Bench corpora for the command benchmarks (UCL_BENCH_CORPUS). "words100"
// draws every word of a ~300-byte content uniformly from 100 words
// (benchSentence): each query term then matches about a third of all
// chunks, the worst case for BM25 and no text anyone writes. "locomo" is
// text a bigram model of the LoCoMo development set's turns writes: real
// words at the frequencies and in the neighbourhoods they have in real
// conversations, fresh for every turn (no repetition), so a query term
// matches as many chunks as it would in a long real history.
const (
	corpusWords100 = "words100"
	corpusLoCoMo   = "locomo"
)

// bigramModel is every word of the source followed by each word that
// followed it there (with repetition, so sampling follows the source's
// frequencies), plus the sentence starts.
type bigramModel struct {
	words  []string
	next   [][]int32
	starts []int32
}

// locomoBigrams builds the model from the LoCoMo turns, or returns nil
// when the data set is not there.
func locomoBigrams() *bigramModel {
	turns := locomoTurns()
	if len(turns) == 0 {
		return nil
	}
	m := &bigramModel{}
	ids := map[string]int32{}
	id := func(w string) int32 {
		i, ok := ids[w]
		if !ok {
			i = int32(len(m.words))
			ids[w] = i
			m.words = append(m.words, w)
			m.next = append(m.next, nil)
		}
		return i
	}
	for _, t := range turns {
		prev := int32(-1)
		for _, w := range strings.Fields(t.text) {
			i := id(w)
			if prev < 0 {
				m.starts = append(m.starts, i)
			} else {
				m.next[prev] = append(m.next[prev], i)
			}
			prev = i
			if strings.ContainsAny(w[len(w)-1:], ".!?") {
				prev = -1
			}
		}
	}
	return m
}

// text writes about n bytes (cut at a word boundary).
func (m *bigramModel) text(r *rand.Rand, n int) string {
	var b strings.Builder
	cur := int32(-1)
	for b.Len() < n {
		if cur < 0 || len(m.next[cur]) == 0 {
			cur = m.starts[r.Intn(len(m.starts))]
		} else {
			cur = m.next[cur][r.Intn(len(m.next[cur]))]
		}
		w := m.words[cur]
		if b.Len()+1+len(w) > n && b.Len() > 0 {
			break
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	return b.String()
}

// locomoBenchTurns writes n turns of contentLen-byte bigram text in
// sessions of 20 turns between two of benchNames, 30 s apart, sessions a
// day apart. Nil when the LoCoMo data is not there.
func locomoBenchTurns(n, contentLen int) []byte {
	m := locomoBigrams()
	if m == nil {
		return nil
	}
	r := rand.New(rand.NewSource(1))
	base := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	const perSession = 20
	var pair [2]string
	for i := 0; i < n; i++ {
		s := i / perSession
		if i%perSession == 0 {
			a := r.Intn(len(benchNames))
			pair = [2]string{benchNames[a], benchNames[(a+1+r.Intn(len(benchNames)-1))%len(benchNames)]}
		}
		speaker := pair[i%2]
		at := base.Add(time.Duration(s)*24*time.Hour + time.Duration(i%perSession)*30*time.Second)
		if err := enc.Encode(benchTurn{Type: "store", Session: fmt.Sprintf("s%d", s), Role: "user",
			Kind: "conversation", Content: speaker + ": " + m.text(r, contentLen-len(speaker)-2), Time: at.Format(time.RFC3339),
			Meta: map[string]string{"speaker": speaker}}); err != nil {
			panic(err)
		}
	}
	return out.Bytes()
}
