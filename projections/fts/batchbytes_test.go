package fts

import (
	"fmt"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
)

// TestBatchBytesExecutesBatch: Apply executes the pending batch once it
// holds Options.BatchBytes of text, however few operations that is, and
// not before; the default bound leaves small batches to the Commit.
func TestBatchBytesExecutesBatch(t *testing.T) {
	content := strings.Repeat("lorem ipsum ", 10) // 120 bytes
	for _, tc := range []struct {
		name  string
		bytes int
		want  []uint64 // documents bleve holds after each of 4 Applies
	}{
		// 120+2+12+4 = 138 bytes of text a document (content, session,
		// kind "conversation", role): the batch runs at the third.
		{"bound", 300, []uint64{0, 0, 3, 3}},
		{"default", 0, []uint64{0, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := openT(t, t.TempDir(), Options{BatchSize: 1 << 20, BatchBytes: tc.bytes})
			var e evs
			for i, want := range tc.want {
				ev := e.store(fmt.Sprintf("c%d", i), "s1", "user", log.KindConversation, int64(i+1), content)
				if err := x.Apply(ev); err != nil {
					t.Fatal(err)
				}
				x.mu.RLock()
				x.settle() // a full batch executes in the background
				x.mu.RUnlock()
				n, err := x.idx.DocCount()
				if err != nil {
					t.Fatal(err)
				}
				if n != want {
					t.Fatalf("after %d applies bleve holds %d documents, want %d", i+1, n, want)
				}
			}
			if err := x.Commit(cpOf(e.out[len(e.out)-1])); err != nil {
				t.Fatal(err)
			}
			if n, _ := x.idx.DocCount(); n != 4 {
				t.Fatalf("after the commit bleve holds %d documents, want 4", n)
			}
		})
	}
}
