package ucl

import (
	"context"
	"crypto/sha256"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// A process that only reads a caught-up store writes nothing to its
// projections: opening them checks their state in read transactions (a
// no-op bbolt commit still writes and syncs two pages per database, about
// ten syncs for a `ucl query` process) and searches change no file.
func TestSearchLeavesProjectionFilesUnchanged(t *testing.T) {
	s := newTestStore(t)
	dir := s.Dir()
	ctx := context.Background()
	if _, err := s.Append(ctx, AppendRequest{JSONL: testJSONL}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CatchUp(ctx, CatchUpRequest{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before := projectionFiles(t, dir)
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"bm25", "hybrid", "vector"} {
		r, err := s.Search(ctx, SearchRequest{Text: "cello practice", K: 5, Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Results) == 0 {
			t.Fatalf("%s: no results", mode)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	after := projectionFiles(t, dir)
	for name, h := range before {
		if after[name] != h {
			t.Errorf("%s changed by a read-only process", name)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s created by a read-only process", name)
		}
	}
}

// projectionFiles hashes every file under dir/projections.
func projectionFiles(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	root := filepath.Join(dir, "projections")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		out[rel] = sha256.Sum256(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
