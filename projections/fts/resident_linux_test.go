package fts

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/internal/fsutil"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// segmentKB is the resident size of this process's mappings of the
// segment files under dir (/proc/self/smaps), in KB, and how many files.
func segmentKB(t *testing.T, dir string) (kb, files int) {
	t.Helper()
	if err := fsutil.Smaps("/proc/self", func(e fsutil.SmapsEntry) {
		if strings.HasPrefix(e.Path, dir) && strings.HasSuffix(e.Path, ".zap") {
			files++
			kb += int(e.RssKB)
		}
	}); errors.Is(err, fs.ErrNotExist) {
		t.Skip(err) // no /proc here
	} else if err != nil {
		t.Fatal(err)
	}
	return kb, files
}

// ReleaseMemory, and a full batch, take the index's segment files out of
// the resident set (a bulk build's merges read whole segments through
// their mappings), and searches read the same afterwards.
func TestReleaseMemoryDropsSegmentPages(t *testing.T) {
	dir := t.TempDir()
	x := openT(t, dir, Options{BatchSize: 500})
	r := rand.New(rand.NewSource(3))
	var e evs
	for i := 0; i < 2500; i++ {
		e.store(fmt.Sprintf("c%05d", i), fmt.Sprintf("s%d", i/50), "user", log.KindConversation, int64(i), projtest.TextZipf(r, 60, 5000))
	}
	applyAll(t, x, e.out, 0)
	search := func() []Hit {
		hs, err := x.Search(context.Background(), Query{Text: projtest.ZipfWord(3) + " " + projtest.ZipfWord(40), K: 20})
		if err != nil {
			t.Fatal(err)
		}
		return hs
	}
	want := search()
	if _, err := x.Digest(); err != nil { // reads every posting of every segment
		t.Fatal(err)
	}
	before, files := segmentKB(t, dir)
	if files == 0 || before < 128 {
		t.Fatalf("%d KB of %d segment files resident after reading every posting", before, files)
	}
	x.ReleaseMemory()
	after, _ := segmentKB(t, dir)
	t.Logf("%d segment files: %d KB resident before ReleaseMemory, %d after", files, before, after)
	if after > before/4 {
		t.Fatalf("%d KB of segment files resident after ReleaseMemory, %d before", after, before)
	}
	if got := search(); !reflect.DeepEqual(got, want) || len(got) == 0 {
		t.Fatalf("search after the release: %v, before: %v", got, want)
	}

	// A full batch (a bulk load's) drops them too: the merger reads
	// segments between commits.
	if _, err := x.Digest(); err != nil {
		t.Fatal(err)
	}
	before, _ = segmentKB(t, dir)
	releases := segmentReleases.Load()
	for i := 0; i < 500; i++ {
		ev := e.store(fmt.Sprintf("d%05d", i), "s", "user", log.KindConversation, int64(i), projtest.TextZipf(r, 60, 5000))
		if err := x.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	// What is resident afterwards is not asserted: the background merger
	// may read the segments again as soon as they are dropped (under
	// -race beside make test: 552 KB before, 320 after). That a release
	// drops the pages is checked above; here, that the full batch made one.
	after, _ = segmentKB(t, dir)
	t.Logf("%d KB resident before a full batch, %d after", before, after)
	if segmentReleases.Load() == releases {
		t.Fatalf("a full batch released no segment pages (%d KB resident after it, %d before)", after, before)
	}
}
