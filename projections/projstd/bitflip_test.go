package projstd

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// TestBitFlipsInFTSSegmentVerify: bit flips in the full-text index's
// segment file made Verify (`project verify`) panic inside zapx (its
// stored-field offsets out of bounds); now the damaged index is reset,
// rebuilt from the log, and Verify finds the set equal to a fresh build.
func TestBitFlipsInFTSSegmentVerify(t *testing.T) {
	evs := projtest.Events(5, 400)
	src := projtest.NewMemSource(evs)
	base := filepath.Join(t.TempDir(), "base")
	buildSet(t, base, src)
	var zap string
	for _, f := range projectionFiles(t, base, "fts") {
		if strings.HasSuffix(f, ".zap") {
			zap = f
		}
	}
	if zap == "" {
		t.Fatal("no segment")
	}
	rel, _ := filepath.Rel(base, zap)
	for seed := int64(1); seed <= 24; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "p")
			if err := os.CopyFS(dir, os.DirFS(base)); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, rel)
			b, _ := os.ReadFile(p)
			r := rand.New(rand.NewSource(seed))
			for i := 0; i < 16; i++ {
				b[r.Intn(len(b))] ^= 1 << r.Intn(8)
			}
			os.WriteFile(p, b, 0o600)
			s, err := Open(dir, src, damageOpts)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer s.Close()
			// Damage a read does not notice is verify's to report (a
			// mismatch of fts); damage that fails a read is reset.
			mm, err := s.Verify(context.Background(), nil)
			if err != nil || len(mm) > 1 || len(mm) == 1 && mm[0].Name != "fts" {
				t.Fatalf("verify after flips: %v %v", mm, err)
			}
		})
	}
}
