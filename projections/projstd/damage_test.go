package projstd

import (
	"context"

	"github.com/blevesearch/bleve/v2"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/fts"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// damage modes applied to a projection file.
var damages = map[string]func(t *testing.T, path string){
	"truncated": func(t *testing.T, path string) {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, fi.Size()/2); err != nil {
			t.Fatal(err)
		}
	},
	"zeroed": func(t *testing.T, path string) {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, make([]byte, fi.Size()), 0o600); err != nil {
			t.Fatal(err)
		}
	},
	"garbage": func(t *testing.T, path string) {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, fi.Size())
		rand.New(rand.NewSource(fi.Size())).Read(b)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	},
}

// damageOpts make the vector projection start its graph (graph.bin) at 100
// live vectors, so the damage tests cover the graph file.
var damageOpts = Options{Vectors: VectorOptions{GraphEvery: 100, Graph: true, ExactBelow: 100}}

// buildSet builds the standard set over src in dir, returns its digests.
func buildSet(t *testing.T, dir string, src projections.Source) map[string]string {
	t.Helper()
	s, err := Open(dir, src, damageOpts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CatchUp(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Vectors.Flush(); err != nil { // so graph.bin exists
		t.Fatal(err)
	}
	d, err := s.Projector.Digests()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// projectionFiles lists the files of projection name under dir (relative).
func projectionFiles(t *testing.T, dir, name string) []string {
	t.Helper()
	var out []string
	root := filepath.Join(dir, name)
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// TestDamagedProjectionFileBricksEveryRead: a truncated, zeroed or garbage
// file of any projection (bbolt files, the bleve index, the vector graph)
// used to make open fail, panic or SIGBUS. Now the set resets the damaged
// projection, says so once, and the catch-up rebuilds it to the digest the
// log gives.
func TestDamagedProjectionFileBricksEveryRead(t *testing.T) {
	evs := projtest.Events(5, 400)
	src := projtest.NewMemSource(evs)
	base := filepath.Join(t.TempDir(), "base")
	want := buildSet(t, base, src)
	targets := map[string][]string{ // projection -> file name suffixes to damage
		"timelines": {"timelines.db"},
		"summary":   {"summary.db"},
		"fts":       {"side.db", "root.bolt", ".zap"},
		"vectors":   {"vectors.db", "graph.bin"},
	}
	for _, name := range Names {
		files := projectionFiles(t, base, name)
		for _, suffix := range targets[name] {
			var file string
			for _, f := range files {
				if strings.HasSuffix(f, suffix) {
					file = f
					break
				}
			}
			if file == "" {
				t.Fatalf("%s: no file ending in %s among %v", name, suffix, files)
			}
			rel, _ := filepath.Rel(base, file)
			for mode, damage := range damages {
				t.Run(mode+"/"+strings.ReplaceAll(rel, "/", "_"), func(t *testing.T) {
					dir := filepath.Join(t.TempDir(), "p")
					if err := os.CopyFS(dir, os.DirFS(base)); err != nil {
						t.Fatal(err)
					}
					damage(t, filepath.Join(dir, rel))
					s, err := Open(dir, src, damageOpts)
					if err != nil {
						t.Fatalf("open with damaged %s: %v", rel, err)
					}
					defer s.Close()
					if err := s.CatchUp(context.Background(), nil); err != nil {
						t.Fatalf("catch up with damaged %s: %v", rel, err)
					}
					// The graph is loaded on first use: a damaged one
					// of the right size is found by the first vector
					// search, which flags it; Heal rebuilds it.
					if _, err := s.Vectors.SearchText(context.Background(), "cello", 3); err != nil {
						if _, ok := projections.Damaged(err); !ok {
							t.Fatalf("vector search with damaged %s: %v", rel, err)
						}
						if healed, err := s.Heal(context.Background(), nil); err != nil || !healed {
							t.Fatalf("heal after damaged %s: %v %v", rel, healed, err)
						}
					}
					notes := s.TakeNotices()
					if len(notes) != 1 || notes[0].Projection != name {
						t.Fatalf("damaged %s: notices %v, want one for %s", rel, notes, name)
					}
					if again := s.TakeNotices(); len(again) != 0 {
						t.Fatalf("notices repeated: %v", again)
					}
					got, err := s.Projector.Digests()
					if err != nil {
						t.Fatal(err)
					}
					for _, n := range Names {
						if got[n] != want[n] {
							t.Fatalf("after damaged %s: %s digest %.12s, want %.12s", rel, n, got[n], want[n])
						}
					}
				})
			}
		}
	}
}

// A projection flagged damaged (by a read that found it disagreeing with
// the log) is reset by Heal, and by the next Open.
func TestMarkedDamagedIsResetOnHealAndOpen(t *testing.T) {
	evs := projtest.Events(6, 200)
	src := projtest.NewMemSource(evs)
	dir := filepath.Join(t.TempDir(), "p")
	want := buildSet(t, dir, src)
	s, err := Open(dir, src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.MarkDamaged("timelines", "chunk c1: content differs from seq 3"); err != nil {
		t.Fatal(err)
	}
	healed, err := s.Heal(context.Background(), nil)
	if err != nil || !healed {
		t.Fatalf("heal: %v %v", healed, err)
	}
	if n := s.TakeNotices(); len(n) != 1 || n[0].Projection != "timelines" || !strings.Contains(n[0].Reason, "content differs") {
		t.Fatalf("notices %v", n)
	}
	got, _ := s.Projector.Digests()
	if got["timelines"] != want["timelines"] {
		t.Fatal("timelines not rebuilt to the log's digest")
	}
	if err := s.MarkDamaged("summary", "test"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(dir, src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := s.TakeNotices(); len(n) != 1 || n[0].Projection != "summary" {
		t.Fatalf("notices on open %v", n)
	}
	if err := s.CatchUp(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Projector.Digests()
	for _, n := range Names {
		if got[n] != want[n] {
			t.Fatalf("%s digest differs after reopen", n)
		}
	}
}

// A document deleted from the bleve index behind the projection's back
// (BM25 then misses it) is found on open, the index is rebuilt with a
// notice, and verify then agrees with a rebuild from the log.
func TestDocumentDeletedFromIndexIsFoundAndRebuilt(t *testing.T) {
	evs := projtest.Events(8, 200)
	src := projtest.NewMemSource(evs)
	dir := filepath.Join(t.TempDir(), "p")
	buildSet(t, dir, src)
	idx, err := bleve.Open(filepath.Join(dir, "fts", "index"))
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Delete(fts.DocID(liveSeqOf(t, evs, projtest.LiveIDs(evs)[0]))); err != nil {
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
	if n := s.TakeNotices(); len(n) != 1 || n[0].Projection != "fts" {
		t.Fatalf("notices %v, want one for fts", n)
	}
	mm, err := s.Verify(context.Background(), nil)
	if err != nil || len(mm) != 0 {
		t.Fatalf("verify after the reset: %v %v", mm, err)
	}
}

// liveSeqOf is the seq of the event that stored chunk id's live version:
// the fts document of the chunk is fts.DocID of it (format 8).
func liveSeqOf(t *testing.T, evs []*log.Event, id string) uint64 {
	t.Helper()
	var seq uint64
	for _, ev := range evs {
		switch b := ev.Body.(type) {
		case *log.Store:
			if b.ChunkID == id {
				seq = ev.Seq
			}
		case *log.Edit:
			if b.Store.ChunkID == id {
				seq = ev.Seq
			}
		}
	}
	if seq == 0 {
		t.Fatalf("no event stored chunk %q", id)
	}
	return seq
}
