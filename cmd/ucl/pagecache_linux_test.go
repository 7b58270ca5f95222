package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// residentPages counts the pages of path in the page cache (mincore).
func residentPages(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() == 0 {
		return 0
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(b)
	vec := make([]byte, (len(b)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// A rebuild leaves none of the projections' files in the page cache: what
// it wrote would stay there as large folios, which every later query maps
// whole (ucl.DropProjectionPages). The files are still all there and a query
// reads them back.
func TestRebuildDropsProjectionPages(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	if _, errs, code := runCLI(t, dir, "", "init"); code != 0 {
		t.Fatal(errs)
	}
	for _, text := range []string{"Remember the cello lesson on Tuesday.", "The violin teacher moved to Porto."} {
		if _, errs, code := runCLI(t, dir, "", "store", "--session", "s1", text); code != 0 {
			t.Fatal(errs)
		}
	}
	if _, errs, code := runCLI(t, dir, "", "project", "rebuild"); code != 0 {
		t.Fatal(errs)
	}
	files := 0
	err := filepath.WalkDir(filepath.Join(dir, "projections"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		files++
		if n := residentPages(t, path); n != 0 {
			t.Errorf("%s: %d pages in the page cache after a rebuild, want 0", path, n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("no projection files")
	}
	out, errs, code := runCLI(t, dir, "", "query", "cello")
	if code != 0 || !strings.Contains(out, "cello lesson") {
		t.Fatalf("query after the rebuild: code %d, %q, %s", code, out, errs)
	}
}
