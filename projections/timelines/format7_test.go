package timelines

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// TestVersion6StoreRebuilds opens a version 6 timelines.db (chunk records
// keyed by id), written by the code of main before version 7 from
// projtest.Events(7, 300) (testdata/timelines-v6.db.gz, its digest in
// timelines-v6.digest). The projector must rebuild it from the log, and
// the rebuilt store must have version 6's digest: version 7 moved the
// records, not the content.
func TestVersion6StoreRebuilds(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Open(filepath.Join("testdata", "timelines-v6.db.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, FileName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "timelines-v6.digest"))
	if err != nil {
		t.Fatal(err)
	}
	evs := projtest.Events(7, 300)
	old, err := Open(dir, projtest.NewMemSource(evs))
	if err != nil {
		t.Fatalf("open a version 6 store: %v", err)
	}
	if v, err := old.StoredVersion(); err != nil || v != 6 {
		t.Fatalf("stored version %d %v, want 6", v, err)
	}
	pr, err := projections.NewProjector(projtest.NewMemSource(evs), []projections.Projection{old}, projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	if err := pr.CatchUp(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if v, err := old.StoredVersion(); err != nil || v != Version {
		t.Fatalf("stored version after catch-up %d %v, want %d", v, err, Version)
	}
	if cp, _ := old.Checkpoint(); cp.Seq != evs[len(evs)-1].Seq {
		t.Fatalf("checkpoint %d, want %d", cp.Seq, evs[len(evs)-1].Seq)
	}
	got, err := old.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(got[:]) != strings.TrimSpace(string(want)) {
		t.Fatalf("rebuilt digest %x, version 6's %s", got, want)
	}
	if n, err := old.Count(); err != nil || n != 202 {
		t.Fatalf("count %d %v, want 202 (version 6's)", n, err)
	}
	for _, id := range projtest.LiveIDs(evs) {
		c, ok, err := old.Chunk(id)
		if err != nil || !ok || c.ID != id || c.Content == "" {
			t.Fatalf("chunk %q: %+v %v %v", id, c, ok, err)
		}
	}
}
