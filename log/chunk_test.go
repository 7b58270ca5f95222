package log

import (
	"fmt"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/internal/textutil"
)

func TestChunk(t *testing.T) {
	var sb strings.Builder
	for p := 0; p < 12; p++ {
		for s := 0; s < 8; s++ {
			fmt.Fprintf(&sb, "Paragraph %d sentence %d talks about storage engines and logs. ", p, s)
		}
		sb.WriteString("\n\n")
	}
	sb.WriteString(strings.Repeat("word ", 2000)) // one giant sentence
	doc := &Store{Kind: KindDocument, Session: "s", Content: sb.String(), Meta: map[string]string{"name": "d"}}
	chunks := Chunk(doc, "doc1", 100)
	if len(chunks) < 10 {
		t.Fatalf("%d chunks", len(chunks))
	}
	var joined []string
	for i, c := range chunks {
		if c.ChunkParent != "doc1" || c.ChunkIndex != i || c.ChunkID != fmt.Sprintf("doc1#%d", i) || c.Meta["name"] != "d" {
			t.Fatalf("chunk %d fields: %+v", i, c)
		}
		if n := textutil.EstimateTokens(c.Content); n > 100 {
			t.Fatalf("chunk %d has %d tokens", i, n)
		}
		joined = append(joined, strings.Fields(c.Content)...)
	}
	if strings.Join(joined, " ") != strings.Join(strings.Fields(doc.Content), " ") {
		t.Fatal("chunks lost or reordered words")
	}
	turn := &Store{Kind: KindConversation, Content: strings.Repeat("long turn ", 1000)}
	if got := Chunk(turn, "t", 50); len(got) != 1 || got[0] != turn {
		t.Fatal("a conversation turn was split")
	}
	short := &Store{Kind: KindDocument, Content: "short"}
	if got := Chunk(short, "x", 50); len(got) != 1 || got[0].ChunkParent != "" {
		t.Fatal("short content chunked")
	}
}
