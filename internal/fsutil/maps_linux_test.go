package fsutil

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"
)

// Mappings reports a file this process maps shared, at its address and
// under its resolved path.
func TestMappingsFindsSharedFile(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "seg.zap")
	if err := os.WriteFile(path, make([]byte, 8192), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := syscall.Mmap(int(f.Fd()), 0, 8192, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(b)
	start := uintptr(unsafe.Pointer(&b[0]))
	var got []Mapping
	if err := Mappings(func(m Mapping) {
		if m.Path == path {
			got = append(got, m)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Start != start || got[0].End < start+8192 || !got[0].Shared {
		t.Fatalf("mappings of %s: %+v, want one shared from %#x", path, got, start)
	}
}

// Smaps reports this process's mapping of a file it mapped and touched,
// with its resident size.
func TestSmapsReportsAMappedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 64<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := syscall.Mmap(int(f.Fd()), 0, 64<<10, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(b)
	for i := 0; i < len(b); i += 4096 {
		touched += int(b[i])
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	var kb int64
	if err := Smaps("/proc/self", func(e SmapsEntry) {
		if e.Path == real {
			found, kb = true, kb+e.RssKB
		}
	}); err != nil {
		t.Fatal(err)
	}
	if !found || kb == 0 {
		t.Fatalf("mapping of %s: found %v, %d kB resident", real, found, kb)
	}
}

// touched keeps the test's page reads from being optimised away.
var touched int
