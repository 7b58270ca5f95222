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
	mappingsUnder(t, dir, func(e fsutil.SmapsEntry) {
		mapped++
		if slices.Contains(e.VmFlags, "rr") {
			random++
		}
	})
	return mapped, random
}

// mappingsUnder calls fn for each of this process's mappings of a file
// under dir (symbolic links resolved); it skips the test without /proc.
func mappingsUnder(t *testing.T, dir string, fn func(e fsutil.SmapsEntry)) {
	t.Helper()
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	if err := fsutil.Smaps("/proc/self", func(e fsutil.SmapsEntry) {
		if strings.HasPrefix(e.Path, dir+"/") {
			fn(e)
		}
	}); errors.Is(err, fs.ErrNotExist) {
		t.Skip(err) // no /proc here
	} else if err != nil {
		t.Fatal(err)
	}
}

// reopenedTestStore is a test store holding testJSONL, closed and opened
// again with opts (as a one-shot process opens a store), and its directory.
func reopenedTestStore(t *testing.T, opts Options) (*Store, string) {
	t.Helper()
	s := newTestStore(t)
	if _, err := s.Append(context.Background(), AppendRequest{JSONL: testJSONL}); err != nil {
		t.Fatal(err)
	}
	dir := s.Dir()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, dir
}

// With RandomReads, a search runs with all the projections' mappings
// advised random; without it the full-text segments keep the kernel's
// default (bbolt advises its databases random itself).
func TestRandomReadsAdvisesProjections(t *testing.T) {
	ctx := context.Background()
	for _, random := range []bool{false, true} {
		s, dir := reopenedTestStore(t, Options{RandomReads: random})
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

// residentSegments sums the resident kilobytes of this process's
// mappings of full-text segment files under dir, and counts them.
func residentSegments(t *testing.T, dir string) (mappings int, kb int64) {
	t.Helper()
	mappingsUnder(t, dir, func(e fsutil.SmapsEntry) {
		if strings.HasSuffix(e.Path, ".zap") {
			mappings++
			kb += e.RssKB
		}
	})
	return mappings, kb
}

// adviseOneShot lets go of every segment page the process has mapped (a
// search has just read them), and a search after it reads them again and
// answers the same; a one-shot listing of sessions holds none.
func TestAdviseOneShotDropsSegmentPages(t *testing.T) {
	ctx := context.Background()
	s, dir := reopenedTestStore(t, Options{RandomReads: true})
	defer s.Close()
	// A listing of sessions reads no segment: what opening the set
	// mapped of them is let go before it reads.
	if ss, err := s.Sessions(ctx, SessionsRequest{}); err != nil || len(ss.Sessions) == 0 {
		t.Fatalf("sessions: %+v %v", ss, err)
	}
	proj := filepath.Join(dir, "projections")
	if n, kb := residentSegments(t, proj); n == 0 || kb != 0 {
		t.Errorf("after listing sessions: %d segment mappings, %d kB resident; want mappings, none resident", n, kb)
	}
	search := func() string {
		t.Helper()
		res, err := s.Search(ctx, SearchRequest{Text: "cello", Mode: "bm25"})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Results) == 0 {
			t.Fatal("no results")
		}
		var ids []string
		for _, r := range res.Results {
			ids = append(ids, r.ChunkID)
		}
		return strings.Join(ids, " ")
	}
	first := search()
	if n, kb := residentSegments(t, proj); n == 0 || kb == 0 {
		t.Fatalf("after a search: %d segment mappings, %d kB resident; want some", n, kb)
	}
	if err := adviseOneShot(proj); err != nil {
		t.Fatal(err)
	}
	if n, kb := residentSegments(t, proj); n == 0 || kb != 0 {
		t.Errorf("advised: %d segment mappings, %d kB resident; want mappings, none resident", n, kb)
	}
	if again := search(); again != first {
		t.Errorf("search after the advice: %s, want %s", again, first)
	}
}
