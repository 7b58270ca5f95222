package ucl

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/internal/fsutil"
)

// advisedMappings counts the mappings of files under dir in this process,
// and how many of them carry the random-read advice (VmFlags "rr").
func advisedMappings(t *testing.T, dir string) (mapped, random int) {
	t.Helper()
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	if err := fsutil.Smaps("/proc/self", func(e fsutil.SmapsEntry) {
		if !strings.HasPrefix(e.Path, dir+"/") {
			return
		}
		mapped++
		if slices.Contains(e.VmFlags, "rr") {
			random++
		}
	}); errors.Is(err, fs.ErrNotExist) {
		t.Skip(err) // no /proc here
	} else if err != nil {
		t.Fatal(err)
	}
	return mapped, random
}

// With RandomReads, a search runs with all the projections' mappings
// advised random; without it the full-text segments keep the kernel's
// default (bbolt advises its databases random itself).
func TestRandomReadsAdvisesProjections(t *testing.T) {
	ctx := context.Background()
	for _, random := range []bool{false, true} {
		s := newTestStore(t)
		if _, err := s.Append(ctx, AppendRequest{JSONL: testJSONL}); err != nil {
			t.Fatal(err)
		}
		dir := s.Dir()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir, Options{RandomReads: random})
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Search(ctx, SearchRequest{Text: "cello", Mode: "bm25"})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Results) == 0 {
			t.Fatal("no results")
		}
		mapped, advised := advisedMappings(t, filepath.Join(dir, "projections"))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if mapped == 0 {
			t.Fatal("no projection file is mapped during a search")
		}
		// bbolt advises its own mappings random; bleve's segments keep the
		// default unless RandomReads.
		if random && advised != mapped || !random && advised == mapped {
			t.Errorf("RandomReads %v: %d of %d projection mappings advised random", random, advised, mapped)
		}
	}
}
