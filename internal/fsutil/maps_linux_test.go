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
