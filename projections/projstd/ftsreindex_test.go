package projstd

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/blevesearch/bleve/v2"

	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/fts"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// A document re-indexed in the bleve index with other text under the same
// id (the live set and the document count unchanged, so open finds
// nothing) used to leave the fts digest as it was: `project verify` said
// ok while searches found the other text. The digest covers the indexed
// terms, so verify reports it.
func TestVerifyCatchesDocumentReindexedWithOtherText(t *testing.T) {
	evs := projtest.Events(8, 200)
	src := projtest.NewMemSource(evs)
	dir := filepath.Join(t.TempDir(), "p")
	buildSet(t, dir, src)
	idx, err := bleve.Open(filepath.Join(dir, "fts", "index"))
	if err != nil {
		t.Fatal(err)
	}
	id := projtest.LiveIDs(evs)[0]
	if err := idx.Index(fts.DocID(liveSeqOf(t, evs, id)), map[string]any{"content": "zanzibar quokka planted text"}); err != nil {
		t.Fatal(err)
	}
	if err := idx.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, src, Options{Projector: projections.Options{TempDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mm, err := s.Verify(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range mm {
		found = found || m.Name == "fts"
	}
	if !found {
		t.Fatalf("verify after re-indexing %s with other text: %v, want an fts mismatch", id, mm)
	}
}
