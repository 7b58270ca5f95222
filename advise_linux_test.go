package ucl

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// advisedMappings counts the mappings of files under dir in this process,
// and how many of them carry the random-read advice (VmFlags "rr").
func advisedMappings(t *testing.T, dir string) (mapped, random int) {
	t.Helper()
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps here")
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			in = len(fields) >= 6 && strings.HasPrefix(fields[5], dir+"/")
			if in {
				mapped++
			}
			continue
		}
		if in && fields[0] == "VmFlags:" {
			for _, fl := range fields[1:] {
				if fl == "rr" {
					random++
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
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
