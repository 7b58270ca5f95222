package arweave

import (
	"bytes"
	"testing"

	"github.com/everFinance/goar/utils"
)

// TestArweaveChunksMatchGoarWhereGoarIsRight: for sizes outside goar's
// off-by-one case the trees are identical; the proofs validate everywhere.
func TestArweaveChunks(t *testing.T) {
	for _, n := range []int{1, 1000, maxChunkSize, maxChunkSize + 1, maxChunkSize + 1000, 2*maxChunkSize + 1001, 3*maxChunkSize + 40000, 5 * maxChunkSize} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(i * 13)
		}
		ours := arweaveChunks(data)
		goars, err := utils.GenerateChunks(data)
		if err != nil {
			t.Fatal(err)
		}
		oddSmallTail := n > maxChunkSize && n%2 == 1 && n%maxChunkSize > 0 && n%maxChunkSize < minChunkSize
		if same := bytes.Equal(ours.DataRoot, goars.DataRoot); same == oddSmallTail {
			t.Errorf("n=%d: roots equal=%v, want %v", n, same, !oddSmallTail)
		}
		covered := 0
		for i, c := range ours.Chunks {
			if c.MinByteRange != covered {
				t.Fatalf("n=%d: chunk %d starts at %d", n, i, c.MinByteRange)
			}
			covered = c.MaxByteRange
			if _, ok := utils.ValidatePath(ours.DataRoot, ours.Proofs[i].Offest, 0, n, ours.Proofs[i].Proof); !ok {
				t.Fatalf("n=%d: proof %d does not validate", n, i)
			}
		}
		if covered != n {
			t.Fatalf("n=%d: chunks cover %d", n, covered)
		}
	}
}
