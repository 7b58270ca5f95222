package vector

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// hfTokenizer is the subset of a Hugging Face tokenizers pipeline that
// static embedding models use: normalizers, pre-tokenizers, and a WordPiece
// or Unigram model. See StaticEmbedder for what is supported.
type hfTokenizer struct {
	norms []func(string) string
	pres  []func([]string) []string
	model func(piece string, out []int) []int
	unk   int // -1: none
	maxID int
}

type hfJSON struct {
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Model        json.RawMessage `json:"model"`
}

func badTok(format string, a ...any) error {
	return fmt.Errorf("load static model: tokenizer.json: %w: %s", ErrBadModel, fmt.Sprintf(format, a...))
}

func parseTokenizer(b []byte) (*hfTokenizer, error) {
	var j hfJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, badTok("%v", err)
	}
	t := &hfTokenizer{unk: -1}
	var err error
	if t.norms, err = parseNormalizer(j.Normalizer); err != nil {
		return nil, err
	}
	if t.pres, err = parsePreTokenizer(j.PreTokenizer); err != nil {
		return nil, err
	}
	if err := t.parseModel(j.Model); err != nil {
		return nil, err
	}
	return t, nil
}

// encode returns the token ids of text (unknown pieces as t.unk).
func (t *hfTokenizer) encode(text string) []int {
	for _, n := range t.norms {
		text = n(text)
	}
	pieces := []string{text}
	for _, p := range t.pres {
		pieces = p(pieces)
	}
	var out []int
	for _, p := range pieces {
		if p != "" {
			out = t.model(p, out)
		}
	}
	return out
}

func isNull(r json.RawMessage) bool { return len(r) == 0 || string(r) == "null" }

func parseNormalizer(r json.RawMessage) ([]func(string) string, error) {
	if isNull(r) {
		return nil, nil
	}
	var n struct {
		Type          string            `json:"type"`
		Normalizers   []json.RawMessage `json:"normalizers"`
		CleanText     *bool             `json:"clean_text"`
		ChineseChars  *bool             `json:"handle_chinese_chars"`
		StripAccents  *bool             `json:"strip_accents"`
		Lowercase     *bool             `json:"lowercase"`
		Left          *bool             `json:"strip_left"`
		Right         *bool             `json:"strip_right"`
		Pattern       map[string]string `json:"pattern"`
		Content       string            `json:"content"`
		PrependString string            `json:"prepend"`
	}
	if err := json.Unmarshal(r, &n); err != nil {
		return nil, badTok("normalizer: %v", err)
	}
	on := func(p *bool, def bool) bool {
		if p == nil {
			return def
		}
		return *p
	}
	switch n.Type {
	case "Sequence":
		var out []func(string) string
		for _, x := range n.Normalizers {
			fs, err := parseNormalizer(x)
			if err != nil {
				return nil, err
			}
			out = append(out, fs...)
		}
		return out, nil
	case "BertNormalizer":
		lower := on(n.Lowercase, true)
		clean, chinese, strip := on(n.CleanText, true), on(n.ChineseChars, true), on(n.StripAccents, lower)
		return []func(string) string{func(s string) string { return bertNormalize(s, clean, chinese, strip, lower) }}, nil
	case "Lowercase":
		return []func(string) string{strings.ToLower}, nil
	case "StripAccents":
		return []func(string) string{stripAccents}, nil
	case "NFC", "NFKC", "NFD", "NFKD":
		return nil, nil // identity: see StaticEmbedder
	case "Strip":
		l, rt := on(n.Left, true), on(n.Right, true)
		return []func(string) string{func(s string) string {
			if l {
				s = strings.TrimLeftFunc(s, unicode.IsSpace)
			}
			if rt {
				s = strings.TrimRightFunc(s, unicode.IsSpace)
			}
			return s
		}}, nil
	case "Replace":
		pat, ok := n.Pattern["String"]
		if !ok || pat == "" {
			return nil, badTok("normalizer Replace: only plain string patterns are supported")
		}
		content := n.Content
		return []func(string) string{func(s string) string { return strings.ReplaceAll(s, pat, content) }}, nil
	case "Prepend":
		p := n.PrependString
		return []func(string) string{func(s string) string {
			if s == "" {
				return s
			}
			return p + s
		}}, nil
	}
	return nil, badTok("unsupported normalizer %q", n.Type)
}

func parsePreTokenizer(r json.RawMessage) ([]func([]string) []string, error) {
	if isNull(r) {
		return nil, nil
	}
	var p struct {
		Type          string            `json:"type"`
		PreTokenizers []json.RawMessage `json:"pretokenizers"`
		Replacement   string            `json:"replacement"`
		PrependScheme string            `json:"prepend_scheme"`
		AddPrefix     *bool             `json:"add_prefix_space"`
		Split         *bool             `json:"split"`
	}
	if err := json.Unmarshal(r, &p); err != nil {
		return nil, badTok("pre_tokenizer: %v", err)
	}
	each := func(f func(string) []string) func([]string) []string {
		return func(in []string) []string {
			var out []string
			for _, s := range in {
				out = append(out, f(s)...)
			}
			return out
		}
	}
	switch p.Type {
	case "Sequence":
		var out []func([]string) []string
		for _, x := range p.PreTokenizers {
			fs, err := parsePreTokenizer(x)
			if err != nil {
				return nil, err
			}
			out = append(out, fs...)
		}
		return out, nil
	case "BertPreTokenizer":
		return []func([]string) []string{each(bertSplit)}, nil
	case "WhitespaceSplit":
		return []func([]string) []string{each(strings.Fields)}, nil
	case "Whitespace":
		return []func([]string) []string{each(wordPunctSplit)}, nil
	case "Metaspace":
		rep := p.Replacement
		if rep == "" {
			rep = "▁"
		}
		scheme := p.PrependScheme
		if scheme == "" {
			scheme = "always"
			if p.AddPrefix != nil && !*p.AddPrefix {
				scheme = "never"
			}
		}
		if scheme != "always" && scheme != "never" && scheme != "first" {
			return nil, badTok("Metaspace prepend_scheme %q", scheme)
		}
		split := p.Split == nil || *p.Split
		return []func([]string) []string{func(in []string) []string {
			var out []string
			for k, s := range in {
				if s == "" {
					continue
				}
				s = strings.ReplaceAll(s, " ", rep)
				if (scheme == "always" || (scheme == "first" && k == 0)) && !strings.HasPrefix(s, rep) {
					s = rep + s
				}
				if !split {
					out = append(out, s)
					continue
				}
				// Split before every replacement character, keeping it
				// with the piece that follows.
				last := 0
				for i := 0; i < len(s); {
					j := strings.Index(s[i:], rep)
					if j < 0 {
						break
					}
					if pos := i + j; pos > last {
						out = append(out, s[last:pos])
						last = pos
					}
					i += j + len(rep)
				}
				out = append(out, s[last:])
			}
			return out
		}}, nil
	}
	return nil, badTok("unsupported pre_tokenizer %q", p.Type)
}

func (t *hfTokenizer) parseModel(r json.RawMessage) error {
	var m struct {
		Type         string          `json:"type"`
		Vocab        json.RawMessage `json:"vocab"`
		UnkToken     *string         `json:"unk_token"`
		UnkID        *int            `json:"unk_id"`
		Prefix       *string         `json:"continuing_subword_prefix"`
		MaxChars     int             `json:"max_input_chars_per_word"`
		ByteFallback bool            `json:"byte_fallback"`
	}
	if isNull(r) {
		return badTok("no model")
	}
	if err := json.Unmarshal(r, &m); err != nil {
		return badTok("model: %v", err)
	}
	switch m.Type {
	case "WordPiece":
		var vocab map[string]int
		if err := json.Unmarshal(m.Vocab, &vocab); err != nil {
			return badTok("WordPiece vocab: %v", err)
		}
		if len(vocab) == 0 {
			return badTok("empty vocab")
		}
		for _, id := range vocab {
			if id < 0 {
				return badTok("negative token id %d", id)
			}
			t.maxID = max(t.maxID, id)
		}
		unkTok := "[UNK]"
		if m.UnkToken != nil {
			unkTok = *m.UnkToken
		}
		id, ok := vocab[unkTok]
		if !ok {
			return badTok("WordPiece unk_token %q not in the vocab", unkTok)
		}
		t.unk = id
		prefix := "##"
		if m.Prefix != nil {
			prefix = *m.Prefix
		}
		maxChars := m.MaxChars
		if maxChars <= 0 {
			maxChars = 100
		}
		t.model = func(word string, out []int) []int { return wordPiece(vocab, prefix, maxChars, t.unk, word, out) }
		return nil
	case "Unigram":
		var vocab []struct {
			Piece string
			Score float64
		}
		var raw [][2]json.RawMessage
		if err := json.Unmarshal(m.Vocab, &raw); err != nil {
			return badTok("Unigram vocab: %v", err)
		}
		if len(raw) == 0 {
			return badTok("empty vocab")
		}
		for i, pr := range raw {
			var v struct {
				Piece string
				Score float64
			}
			if err := json.Unmarshal(pr[0], &v.Piece); err != nil {
				return badTok("Unigram vocab entry %d: %v", i, err)
			}
			if err := json.Unmarshal(pr[1], &v.Score); err != nil {
				return badTok("Unigram vocab entry %d: %v", i, err)
			}
			vocab = append(vocab, v)
		}
		t.maxID = len(vocab) - 1
		if m.UnkID != nil {
			if *m.UnkID < 0 || *m.UnkID >= len(vocab) {
				return badTok("Unigram unk_id %d outside the vocab", *m.UnkID)
			}
			t.unk = *m.UnkID
		}
		u := &unigram{ids: map[string]int{}, unk: t.unk, byteFallback: m.ByteFallback}
		u.minScore = math.Inf(1)
		for i, v := range vocab {
			if _, dup := u.ids[v.Piece]; !dup {
				u.ids[v.Piece] = i
			}
			u.scores = append(u.scores, v.Score)
			u.minScore = math.Min(u.minScore, v.Score)
			u.maxLen = max(u.maxLen, utf8.RuneCountInString(v.Piece))
		}
		t.model = u.encode
		return nil
	}
	return badTok("unsupported model %q (want WordPiece or Unigram)", m.Type)
}

// wordPiece is greedy longest-match-first; a word that cannot be split
// entirely into vocabulary pieces becomes one unknown token.
func wordPiece(vocab map[string]int, prefix string, maxChars, unk int, word string, out []int) []int {
	if utf8.RuneCountInString(word) > maxChars {
		return append(out, unk)
	}
	n := len(out)
	for start := 0; start < len(word); {
		end := len(word)
		id := -1
		for end > start {
			sub := word[start:end]
			if start > 0 {
				sub = prefix + sub
			}
			if v, ok := vocab[sub]; ok {
				id = v
				break
			}
			_, sz := utf8.DecodeLastRuneInString(word[start:end])
			end -= sz
		}
		if id < 0 {
			return append(out[:n], unk)
		}
		out = append(out, id)
		start = end
	}
	return out
}

// unigram segments a piece by Viterbi over the vocabulary's log
// probabilities, as SentencePiece does; a character no piece covers costs
// the lowest score minus 10 and becomes unk (or its UTF-8 bytes as
// <0xXX> pieces with byte_fallback).
type unigram struct {
	ids          map[string]int
	scores       []float64
	minScore     float64
	maxLen       int
	unk          int
	byteFallback bool
}

func (u *unigram) encode(s string, out []int) []int {
	offs := make([]int, 0, len(s)+1)
	for i := range s {
		offs = append(offs, i)
	}
	offs = append(offs, len(s))
	n := len(offs) - 1
	best := make([]float64, n+1)
	from := make([]int, n+1) // start rune index of the last piece
	pid := make([]int, n+1)  // its id, -1 for an unknown character
	for i := 1; i <= n; i++ {
		best[i] = math.Inf(-1)
	}
	unkScore := u.minScore - 10
	for i := 0; i < n; i++ {
		if math.IsInf(best[i], -1) {
			continue
		}
		matched := false
		for j := i + 1; j <= min(n, i+u.maxLen); j++ {
			if id, ok := u.ids[s[offs[i]:offs[j]]]; ok {
				matched = matched || j == i+1
				if v := best[i] + u.scores[id]; v > best[j] {
					best[j], from[j], pid[j] = v, i, id
				}
			}
		}
		if !matched { // the single character is unknown
			if v := best[i] + unkScore; v > best[i+1] {
				best[i+1], from[i+1], pid[i+1] = v, i, -1
			}
		}
	}
	var rev []int
	var revText []string
	for j := n; j > 0; j = from[j] {
		rev = append(rev, pid[j])
		revText = append(revText, s[offs[from[j]]:offs[j]])
	}
	for k := len(rev) - 1; k >= 0; k-- {
		if rev[k] >= 0 {
			out = append(out, rev[k])
			continue
		}
		if u.byteFallback {
			for _, c := range []byte(revText[k]) {
				if id, ok := u.ids[fmt.Sprintf("<0x%02X>", c)]; ok {
					out = append(out, id)
				} else {
					out = append(out, u.unk)
				}
			}
			continue
		}
		out = append(out, u.unk)
	}
	return out
}

// bertNormalize is BertNormalizer: drop control characters and turn white
// space into spaces (clean), pad CJK ideographs with spaces, strip accents,
// lower-case.
func bertNormalize(s string, clean, chinese, strip, lower bool) string {
	var b strings.Builder
	for _, r := range s {
		if clean {
			if r == 0 || r == 0xfffd || (unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r') {
				continue
			}
			if unicode.IsSpace(r) {
				r = ' '
			}
		}
		if chinese && isCJK(r) {
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
			continue
		}
		b.WriteRune(r)
	}
	out := b.String()
	if lower {
		out = strings.ToLower(out)
	}
	if strip {
		out = stripAccents(out)
	}
	return out
}

func isCJK(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) || (r >= 0x3400 && r <= 0x4DBF) || (r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) || (r >= 0x2B740 && r <= 0x2B81F) || (r >= 0x2B820 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) || (r >= 0x2F800 && r <= 0x2FA1F)
}

// accentBase maps the precomposed Latin-1 Supplement and Latin Extended-A
// letters to their base letter (what NFD + dropping marks gives).
var accentBase = func() map[rune]rune {
	m := map[rune]rune{}
	add := func(base rune, letters string) {
		for _, r := range letters {
			m[r] = base
		}
	}
	add('A', "ÀÁÂÃÄÅĀĂĄ")
	add('a', "àáâãäåāăą")
	add('C', "ÇĆĈĊČ")
	add('c', "çćĉċč")
	add('D', "Ď")
	add('d', "ď")
	add('E', "ÈÉÊËĒĔĖĘĚ")
	add('e', "èéêëēĕėęě")
	add('G', "ĜĞĠĢ")
	add('g', "ĝğġģ")
	add('H', "Ĥ")
	add('h', "ĥ")
	add('I', "ÌÍÎÏĨĪĬĮİ")
	add('i', "ìíîïĩīĭį")
	add('J', "Ĵ")
	add('j', "ĵ")
	add('K', "Ķ")
	add('k', "ķ")
	add('L', "ĹĻĽ")
	add('l', "ĺļľ")
	add('N', "ÑŃŅŇ")
	add('n', "ñńņň")
	add('O', "ÒÓÔÕÖŌŎŐ")
	add('o', "òóôõöōŏő")
	add('R', "ŔŖŘ")
	add('r', "ŕŗř")
	add('S', "ŚŜŞŠ")
	add('s', "śŝşš")
	add('T', "ŢŤ")
	add('t', "ţť")
	add('U', "ÙÚÛÜŨŪŬŮŰŲ")
	add('u', "ùúûüũūŭůűų")
	add('W', "Ŵ")
	add('w', "ŵ")
	add('Y', "ÝŶŸ")
	add('y', "ýÿŷ")
	add('Z', "ŹŻŽ")
	add('z', "źżž")
	return m
}()

// stripAccents replaces accented Latin letters by their base letter and
// drops combining marks (see StaticEmbedder for the limits).
func stripAccents(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		if base, ok := accentBase[r]; ok {
			r = base
		}
		b.WriteRune(r)
	}
	return b.String()
}

// isBertPunct is BERT's punctuation test: ASCII symbols count too.
func isBertPunct(r rune) bool {
	if (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126) {
		return true
	}
	return unicode.IsPunct(r)
}

// bertSplit splits on white space and makes every punctuation character a
// piece of its own.
func bertSplit(s string) []string {
	var out []string
	start := -1
	for i, r := range s {
		switch {
		case unicode.IsSpace(r):
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
		case isBertPunct(r):
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
			out = append(out, string(r))
		default:
			if start < 0 {
				start = i
			}
		}
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}

// wordPunctSplit is the Whitespace pre-tokenizer: runs of word characters
// (\w: letters, digits, underscore) and runs of other non-space characters.
func wordPunctSplit(s string) []string {
	var out []string
	start, kind := -1, 0 // kind 1 word, 2 other
	for i, r := range s {
		k := 2
		switch {
		case unicode.IsSpace(r):
			k = 0
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || unicode.Is(unicode.Mn, r):
			k = 1
		}
		if k != kind && start >= 0 {
			out = append(out, s[start:i])
			start = -1
		}
		if k != 0 && start < 0 {
			start = i
		}
		kind = k
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}
