package log

import (
	"encoding/binary"
	"os"
	"syscall"
	"testing"
	"unsafe"
)

// unwrittenExtents returns how many extents of the file at path are
// allocated but unwritten (FIEMAP), or ok false where FIEMAP is not
// supported (tmpfs, some file systems).
func unwrittenExtents(t *testing.T, path string) (n, total int, ok bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const (
		fsIocFiemap     = 0xC020660B
		fiemapFlagSync  = 0x1
		extentUnwritten = 0x800
		maxExtents      = 64
		hdr, ext        = 32, 56
	)
	buf := make([]byte, hdr+maxExtents*ext)
	binary.LittleEndian.PutUint64(buf[8:], ^uint64(0)) // fm_length: all
	binary.LittleEndian.PutUint32(buf[16:], fiemapFlagSync)
	binary.LittleEndian.PutUint32(buf[24:], maxExtents)
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), fsIocFiemap, uintptr(unsafe.Pointer(&buf[0]))); e != 0 {
		return 0, 0, false
	}
	total = int(binary.LittleEndian.Uint32(buf[20:]))
	for i := 0; i < total && i < maxExtents; i++ {
		if binary.LittleEndian.Uint32(buf[hdr+i*ext+40:])&extentUnwritten != 0 {
			n++
		}
	}
	return n, total, true
}

// The space the writer reserves ahead of its writes is written zeros, not
// bare fallocated (unwritten) extents, whose conversion on the first write
// into them made every fdatasync journal a metadata change.
func TestPreallocatedSpaceIsWritten(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, testKeys(t), Options{Durability: Sync})
	defer l.Close()
	appendN(t, l, 5)
	// The space ahead of the next write is zeroed after a commit, holding
	// the commit lock: wait for it.
	unlock := l.exclusive()
	defer unlock()
	p, b := lastSegment(t, dir)
	ents := entryOffsets(t, b)
	if int(ents[len(ents)-1].end) >= len(b) {
		t.Skip("no preallocation on this file system")
	}
	unwritten, total, ok := unwrittenExtents(t, p)
	if !ok {
		t.Skip("FIEMAP not supported here")
	}
	if unwritten != 0 || total == 0 {
		t.Fatalf("%d of the %d extents of the open segment (%d bytes, entries end at %d) are unwritten", unwritten, total, len(b), ents[len(ents)-1].end)
	}
	if err := l.tw.zeroErr; err != nil {
		t.Fatal(err)
	}
}
