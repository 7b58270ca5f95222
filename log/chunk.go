package log

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/unlimitedcontext/ucl/internal/textutil"
)

// DefaultChunkTokens is the default chunk size of Chunk, in estimated tokens.
const DefaultChunkTokens = 400

// Chunk splits a long store body (a document or a tool result) into chunks
// of at most maxTokens estimated tokens (textutil.EstimateTokens). The
// chunks are consecutive pieces of the content, byte for byte: joined in
// order they are exactly the stored input, whitespace, indentation and line
// ends included. Cuts fall at the best boundary that leaves a chunk at least
// half full: a paragraph break, then a line end, then a sentence end, then a
// space, and only inside an unbroken run of text at a character boundary.
// Each chunk keeps the original's fields; ChunkID is parentID#i,
// ChunkParent is parentID and ChunkIndex i. Content that fits in one chunk
// is returned unchanged (one element, no chunk parent). Conversation turns
// are never split: a turn is a unit of meaning, and the context assembler
// trims it instead.
func Chunk(s *Store, parentID string, maxTokens int) []*Store {
	if maxTokens <= 0 {
		maxTokens = DefaultChunkTokens
	}
	if s.Kind == KindConversation || textutil.EstimateTokens(s.Content) <= maxTokens {
		return []*Store{s}
	}
	chunks := splitExact(s.Content, maxTokens)
	out := make([]*Store, len(chunks))
	for i, c := range chunks {
		cp := *s
		cp.Content = c
		cp.ChunkParent = parentID
		cp.ChunkIndex = i
		cp.ChunkID = fmt.Sprintf("%s#%d", parentID, i)
		out[i] = &cp
	}
	return out
}

// Cut classes, best first.
const (
	cutNone = iota
	cutRune
	cutWord
	cutSentence
	cutLine
	cutParagraph
)

// cutClass says how good a cut just before byte p of s is (p > 0).
func cutClass(s string, p int) int {
	prev := s[p-1]
	if !utf8.RuneStart(s[p]) {
		return cutNone
	}
	if prev == '\n' {
		// A paragraph break: two line ends with only blanks between.
		for i := p - 2; i >= 0; i-- {
			switch s[i] {
			case '\n':
				return cutParagraph
			case ' ', '\t', '\r':
				continue
			}
			break
		}
		return cutLine
	}
	if isBlank(prev) && !isBlank(s[p]) {
		// After a run of blanks: a sentence end if the run follows . ! ?
		i := p - 1
		for i > 0 && isBlank(s[i]) {
			i--
		}
		switch s[i] {
		case '.', '!', '?':
			return cutSentence
		}
		return cutWord
	}
	if isBlank(prev) || isBlank(s[p]) {
		return cutNone // never inside a run of blanks
	}
	return cutRune
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// splitExact cuts s into consecutive pieces of at most maxTokens estimated
// tokens (a piece may run over only by trailing blanks that would otherwise
// form a piece of their own).
func splitExact(s string, maxTokens int) []string {
	var out []string
	for start := 0; start < len(s); {
		// EstimateTokens counts at least a token per 4 bytes: a rest
		// longer than 4*maxTokens is not scanned to learn it does not
		// fit (scanning it at every cut made splitting quadratic).
		rest := s[start:]
		if (len(rest)+3)/4 <= maxTokens && textutil.EstimateTokens(rest) <= maxTokens || strings.TrimSpace(rest) == "" {
			out = append(out, s[start:])
			break
		}
		// The longest prefix that fits: EstimateTokens grows with the
		// prefix, and 4 bytes count at least one token.
		lo, hi := start+1, min(len(s), start+4*maxTokens+4)
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if textutil.EstimateTokens(s[start:mid]) <= maxTokens {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		limit := lo
		// A chunk holds some text: never cut inside leading blanks.
		first := start
		for first < len(s) && isBlank(s[first]) {
			first++
		}
		best, bestClass := 0, cutNone
		for p := limit; p > first; p-- {
			c := cutClass(s, p)
			if c > bestClass {
				best, bestClass = p, c
				if c == cutParagraph {
					break
				}
			}
			if bestClass >= cutWord && p-start < (limit-start)/2 {
				break // a better class this early would leave a small chunk
			}
		}
		if best == 0 { // no boundary at all (blanks, then one rune over the limit)
			_, n := utf8.DecodeRuneInString(s[first:])
			best = first + n
		}
		// Trailing blanks that would be a piece of their own stay here.
		if strings.TrimSpace(s[best:]) == "" {
			best = len(s)
		}
		out = append(out, s[start:best])
		start = best
	}
	return out
}
