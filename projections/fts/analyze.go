package fts

import (
	"reflect"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/registry"
	index "github.com/blevesearch/bleve_index_api"
	porterstemmer "github.com/blevesearch/go-porterstemmer"
)

// contentField is the content field of a document as document.TextField
// with the "en" analyzer indexes it (same length, same terms, same
// frequencies: TestContentFieldMatchesTextField, FuzzContentField), at a
// fraction of its cost: analysis was 30% of the build's CPU, most of it
// the Unicode word segmenter and the token streams between the filters.
//
// The text is cut into pieces after ASCII white space followed by an
// ASCII byte: a word boundary of Unicode text segmentation (UAX #29)
// whatever surrounds it (no rule joins white space to what follows but an
// Extend or Format character, which is not ASCII, and no rule looking
// across it can join the words on its sides). A piece of ASCII bytes is
// segmented, filtered and counted in one pass (asciiPiece); any other
// piece, and a text that is not valid UTF-8, goes through the "en"
// analyzer itself. Positions and offsets are
// not kept: the mapping indexes content without term vectors.
type contentField struct {
	value  []byte
	en     analysis.Analyzer // the "en" analyzer, for pieces that are not ASCII
	length int
	freqs  index.TokenFrequencies
	// freqsSize is freqs.Size(), counted as terms were added: bleve asks
	// every analysed document its size, and TokenFrequencies.Size walks
	// the map (2% of a build's CPU).
	freqsSize int
	// buf holds freqs, its terms and its keys once analysed: taken from
	// analysisBufs by Analyze, given back by release.
	buf *analysisBuf
}

func newContentField(value []byte, en analysis.Analyzer) *contentField {
	return &contentField{value: value, en: en}
}

// analysisBuf is the memory of one content field's analysis, reused from
// one executed batch to the next: allocating a frequency map, its term
// blocks and a string per distinct term for every chunk was a third of
// the build's allocations, and garbage collection a fifth of its CPU.
// Reuse is safe because nothing keeps a field's analysis once the batch
// that holds it has executed: scorch's Batch waits for every document's
// analysis, encodes the segment from them (zapx's interim copies every
// term into the segment's bytes and drops its references on reset) and
// only then returns (TestAnalysisReuseKeepsIndex).
type analysisBuf struct {
	freqs index.TokenFrequencies
	tfs   []index.TokenFreq
	terms []byte
}

// Bounds on what an analysisBuf keeps for reuse: a large chunk's buffers
// are left to the collector, and a map grown for one would make every
// later range over it (bleve ranges twice per document) walk its table.
const (
	maxReusedTerms    = 64 << 10
	maxReusedDistinct = 1024
)

var analysisBufs = sync.Pool{New: func() any { return new(analysisBuf) }}

// release gives the field's analysis memory back for reuse; the field's
// frequencies are invalid afterwards. Only for a field of an executed
// batch.
func (f *contentField) release() {
	b := f.buf
	f.buf, f.freqs = nil, nil
	if b == nil || cap(b.terms) > maxReusedTerms || cap(b.tfs) > maxReusedDistinct || len(b.freqs) > maxReusedDistinct {
		return
	}
	clear(b.freqs)
	clear(b.tfs[:cap(b.tfs)]) // drop the term slices and any Locations
	b.tfs, b.terms = b.tfs[:0], b.terms[:0]
	analysisBufs.Put(b)
}

func (f *contentField) Name() string                                     { return fieldContent }
func (f *contentField) ArrayPositions() []uint64                         { return nil }
func (f *contentField) Options() index.FieldIndexingOptions              { return index.IndexField }
func (f *contentField) Value() []byte                                    { return f.value }
func (f *contentField) NumPlainTextBytes() uint64                        { return uint64(len(f.value)) }
func (f *contentField) EncodedFieldType() byte                           { return 't' }
func (f *contentField) AnalyzedLength() int                              { return f.length }
func (f *contentField) AnalyzedTokenFrequencies() index.TokenFrequencies { return f.freqs }

// Size is what bleve counts for the field in a batch's memory estimate
// (as document.TextField counts it).
func (f *contentField) Size() int {
	n := 64 + len(f.value)
	if f.freqs != nil {
		n += f.freqsSize
	}
	return n
}

// enStop is the "en" analyzer's stop word list.
var enStop = func() analysis.TokenMap {
	m, err := registry.NewCache().TokenMapNamed(en.StopName)
	if err != nil {
		panic(err)
	}
	return m
}()

// enStopIdx holds enStop's words by length and first byte: isEnStop
// compares a word with the few of its length and first letter, where
// the map lookup hashed every word of every chunk (2.6% of bench/peers'
// 1M-document build's CPU).
var enStopIdx = func() [][256][]string {
	n := 0
	for w := range enStop {
		n = max(n, len(w))
	}
	idx := make([][256][]string, n+1)
	for w := range enStop {
		if w != "" {
			idx[len(w)][w[0]] = append(idx[len(w)][w[0]], w)
		}
	}
	return idx
}()

// isEnStop reports whether w is in enStop.
func isEnStop(w []byte) bool {
	if len(w) == 0 || len(w) >= len(enStopIdx) {
		_, ok := enStop[string(w)]
		return ok
	}
	for _, s := range enStopIdx[len(w)][w[0]] {
		if string(w) == s {
			return true
		}
	}
	return false
}

// Analyze computes the field's length and term frequencies.
func (f *contentField) Analyze() {
	// About one distinct term per 8 bytes of chat text (60 words, 45
	// terms, 400 bytes): one block each for the terms' frequencies and
	// bytes is nearly always enough, and a large text of long distinct
	// words is not given three times the room it needs.
	n := len(f.value)/8 + 1
	b := analysisBufs.Get().(*analysisBuf)
	if b.freqs == nil {
		b.freqs = make(index.TokenFrequencies, n)
	}
	if cap(b.tfs) < n {
		b.tfs = make([]index.TokenFreq, 0, n)
	}
	if cap(b.terms) < len(f.value) {
		b.terms = make([]byte, 0, len(f.value))
	}
	f.buf = b
	a := analyzer{freqs: b.freqs, tfs: b.tfs, terms: b.terms}
	defer func() {
		f.length, f.freqs = a.length, a.freqs
		f.freqsSize = freqsSizeOf(len(a.freqs), a.termBytes)
	}()
	text := f.value
	if !utf8.Valid(text) {
		// The segmenter stops at the first invalid byte: no cutting.
		a.piece(f.en, text, false)
		return
	}
	start, ascii := 0, true
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c >= 0x80 {
			ascii = false
			continue
		}
		if i > start && isSpace(text[i-1]) && !isSpace(c) {
			a.piece(f.en, text[start:i], ascii)
			start, ascii = i, true
		}
	}
	a.piece(f.en, text[start:], ascii)
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// analyzer accumulates one field's analysis.
type analyzer struct {
	length int
	freqs  index.TokenFrequencies
	tfs    []index.TokenFreq // allocated in blocks, one per distinct term
	terms  []byte            // the terms' bytes, likewise
	lower  [64]byte
	runes  [64]rune
	// termBytes is the distinct terms' total length (freqsSizeOf).
	termBytes int
}

// Sizes TokenFrequencies.Size counts: a map header, a string and a
// pointer per entry, and per TokenFreq its struct and its term.
var (
	sizeOfMap       = int(reflect.TypeOf(index.TokenFrequencies{}).Size())
	sizeOfEntry     = int(reflect.TypeOf("").Size() + reflect.TypeOf(&index.TokenFreq{}).Size())
	sizeOfTokenFreq = int(reflect.TypeOf(index.TokenFreq{}).Size())
)

// freqsSizeOf is what TokenFrequencies.Size returns for a map of n terms
// of termBytes bytes in all and no locations (the key and the term are
// each counted).
func freqsSizeOf(n, termBytes int) int {
	return sizeOfMap + n*(sizeOfEntry+sizeOfTokenFreq) + 2*termBytes
}

func (a *analyzer) add(term []byte) {
	a.length++
	if tf, ok := a.freqs[string(term)]; ok {
		tf.SetFrequency(tf.Frequency() + 1)
		return
	}
	if len(a.tfs) == cap(a.tfs) {
		a.tfs = make([]index.TokenFreq, 0, max(32, cap(a.tfs)/4))
	}
	if len(a.terms)+len(term) > cap(a.terms) {
		a.terms = make([]byte, 0, max(512, len(term)))
	}
	a.termBytes += len(term)
	n := len(a.terms)
	a.terms = append(a.terms, term...)
	t := a.terms[n:len(a.terms):len(a.terms)]
	a.tfs = append(a.tfs, index.TokenFreq{Term: t})
	tf := &a.tfs[len(a.tfs)-1]
	tf.SetFrequency(1)
	// The key shares the term's bytes, which stay unchanged while the
	// field's analysis is in use (analysisBuf).
	a.freqs[unsafe.String(unsafe.SliceData(t), len(t))] = tf
}

func (a *analyzer) piece(en analysis.Analyzer, p []byte, ascii bool) {
	if len(p) == 0 {
		return
	}
	if !ascii {
		for _, t := range en.Analyze(p) {
			a.add(t.Term)
		}
		return
	}
	a.asciiPiece(p)
}

// Character classes of UAX #29's word boundary rules, for ASCII.
const (
	clOther     = iota
	clLetter    // ALetter
	clNumeric   // Numeric
	clMidLetter // MidLetter: ':'
	clMidNumLet // MidNumLet: '.', '\''
	clMidNum    // MidNum: ',', ';'
	clExtendNum // ExtendNumLet: '_'
)

var asciiClass = func() (t [128]byte) {
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = clLetter, clLetter
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = clNumeric
	}
	t[':'] = clMidLetter
	t['.'], t['\''] = clMidNumLet, clMidNumLet
	t[','], t[';'] = clMidNum, clMidNum
	t['_'] = clExtendNum
	return t
}()

// joins reports whether UAX #29 keeps p[i-1] and p[i] in one word
// (rules WB5 to WB13b; p is ASCII).
func joins(p []byte, i int) bool {
	l, r := asciiClass[p[i-1]], asciiClass[p[i]]
	switch {
	case l == clLetter && (r == clLetter || r == clNumeric || r == clExtendNum): // WB5, WB9, WB13a
		return true
	case l == clNumeric && (r == clNumeric || r == clLetter || r == clExtendNum): // WB8, WB10, WB13a
		return true
	case l == clExtendNum && (r == clExtendNum || r == clLetter || r == clNumeric): // WB13a, WB13b
		return true
	case l == clLetter && (r == clMidLetter || r == clMidNumLet): // WB6
		return i+1 < len(p) && asciiClass[p[i+1]] == clLetter
	case (l == clMidLetter || l == clMidNumLet) && r == clLetter: // WB7
		return i >= 2 && asciiClass[p[i-2]] == clLetter
	case l == clNumeric && (r == clMidNum || r == clMidNumLet): // WB12
		return i+1 < len(p) && asciiClass[p[i+1]] == clNumeric
	case (l == clMidNum || l == clMidNumLet) && r == clNumeric: // WB11
		return i >= 2 && asciiClass[p[i-2]] == clNumeric
	}
	return false
}

// asciiPiece segments an ASCII piece into words and runs each through
// the "en" filters: possessive ('s), lower case, stop words, Porter.
func (a *analyzer) asciiPiece(p []byte) {
	for i := 0; i < len(p); {
		if c := asciiClass[p[i]]; c != clLetter && c != clNumeric && c != clExtendNum {
			i++ // a segment of its own, not a word
			continue
		}
		j := i + 1
		for j < len(p) && joins(p, j) {
			j++
		}
		a.word(p[i:j])
		i = j
	}
}

func (a *analyzer) word(w []byte) {
	if n := len(w); n >= 2 && (w[n-1] == 's' || w[n-1] == 'S') && w[n-2] == '\'' {
		w = w[:n-2]
	}
	var buf []byte
	if len(w) <= len(a.lower) {
		buf = a.lower[:len(w)]
	} else {
		buf = make([]byte, len(w))
	}
	for i, c := range w {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	if isEnStop(buf) {
		return
	}
	if len(buf) <= 2 { // Porter leaves these as they are
		a.add(buf)
		return
	}
	var rs []rune
	if len(buf) <= len(a.runes) {
		rs = a.runes[:len(buf)]
	} else {
		rs = make([]rune, len(buf))
	}
	for i, c := range buf {
		rs[i] = rune(c)
	}
	rs = porterstemmer.StemWithoutLowerCasing(rs)
	out := buf[:0] // a stem of ASCII is ASCII, and not longer than its word
	for _, r := range rs {
		out = append(out, byte(r))
	}
	a.add(out)
}

// keywordField is a keyword field of a document as document.TextField
// with the "keyword" analyzer and index.SkipFreqNorm indexes it: the
// whole value is its one term, without a frequency
// (TestKeywordFieldMatchesTextField). Built with its analysis done: the
// analyzer's token stream and frequency map were three allocations a
// field, three or four fields a chunk.
type keywordField struct {
	name  string
	value []byte
	freqs index.TokenFrequencies
}

func newKeywordField(name string, value []byte) *keywordField {
	return &keywordField{name: name, value: value, freqs: index.TokenFrequencies{string(value): &index.TokenFreq{Term: value}}}
}

func (f *keywordField) Name() string             { return f.name }
func (f *keywordField) ArrayPositions() []uint64 { return nil }
func (f *keywordField) Options() index.FieldIndexingOptions {
	return index.IndexField | index.SkipFreqNorm
}
func (f *keywordField) Value() []byte                                    { return f.value }
func (f *keywordField) NumPlainTextBytes() uint64                        { return uint64(len(f.value)) }
func (f *keywordField) EncodedFieldType() byte                           { return 't' }
func (f *keywordField) Analyze()                                         {}
func (f *keywordField) AnalyzedLength() int                              { return 1 }
func (f *keywordField) AnalyzedTokenFrequencies() index.TokenFrequencies { return f.freqs }
func (f *keywordField) Size() int                                        { return 64 + len(f.name) + 2*len(f.value) }
