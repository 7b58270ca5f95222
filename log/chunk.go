package log

import (
	"fmt"
	"strings"

	"github.com/unlimitedcontext/ucl/internal/textutil"
)

// DefaultChunkTokens is the default chunk size of Chunk, in estimated tokens.
const DefaultChunkTokens = 400

// Chunk splits a long store body (a document or a tool result) into chunks
// of at most maxTokens estimated tokens (textutil.EstimateTokens), cutting at
// paragraph, then sentence, then word boundaries. Each chunk keeps the
// original's fields; ChunkID is parentID#i, ChunkParent is parentID and
// ChunkIndex i. Content that fits in one chunk is returned unchanged (one
// element, no chunk parent). Conversation turns are never split: a turn is a
// unit of meaning, and the context assembler trims it instead.
func Chunk(s *Store, parentID string, maxTokens int) []*Store {
	if maxTokens <= 0 {
		maxTokens = DefaultChunkTokens
	}
	if s.Kind == KindConversation || textutil.EstimateTokens(s.Content) <= maxTokens {
		return []*Store{s}
	}
	var pieces []string
	for _, para := range splitParagraphs(s.Content) {
		pieces = append(pieces, splitToFit(para, maxTokens)...)
	}
	// Greedily pack pieces into chunks.
	var chunks []string
	cur := ""
	for _, p := range pieces {
		cand := p
		if cur != "" {
			cand = cur + "\n\n" + p
		}
		if cur != "" && textutil.EstimateTokens(cand) > maxTokens {
			chunks = append(chunks, cur)
			cur = p
			continue
		}
		cur = cand
	}
	if cur != "" {
		chunks = append(chunks, cur)
	}
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

func splitParagraphs(s string) []string {
	var out []string
	for _, p := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// splitToFit splits a paragraph that is too long at sentences, and a
// sentence that is still too long at words.
func splitToFit(p string, maxTokens int) []string {
	if textutil.EstimateTokens(p) <= maxTokens {
		return []string{p}
	}
	var out []string
	cur := ""
	add := func(unit, sep string) {
		cand := unit
		if cur != "" {
			cand = cur + sep + unit
		}
		if cur != "" && textutil.EstimateTokens(cand) > maxTokens {
			out = append(out, cur)
			cur = unit
			return
		}
		cur = cand
	}
	for _, sent := range textutil.Sentences(p) {
		if textutil.EstimateTokens(sent) <= maxTokens {
			add(sent, " ")
			continue
		}
		for _, w := range strings.Fields(sent) {
			add(w, " ")
		}
	}
	if cur != "" {
		out = append(out, cur)
	}
	return out
}
