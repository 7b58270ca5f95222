package log

import (
	"encoding/binary"
	"os"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// extent is one extent of a file as FIEMAP reports it.
type extent struct {
	lo, hi    int64 // logical byte range [lo, hi)
	unwritten bool  // allocated, not written on disk
}

// fiemap returns the extents of the file at path (FIEMAP, after syncing
// the file when sync), or ok false where FIEMAP is not supported (tmpfs,
// some file systems).
func fiemap(t *testing.T, path string, sync bool) (_ []extent, ok bool) {
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
	if sync {
		binary.LittleEndian.PutUint32(buf[16:], fiemapFlagSync)
	}
	binary.LittleEndian.PutUint32(buf[24:], maxExtents)
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), fsIocFiemap, uintptr(unsafe.Pointer(&buf[0]))); e != 0 {
		return nil, false
	}
	var out []extent
	for i := 0; i < int(binary.LittleEndian.Uint32(buf[20:])) && i < maxExtents; i++ {
		e := buf[hdr+i*ext:]
		lo := int64(binary.LittleEndian.Uint64(e[0:]))
		out = append(out, extent{lo: lo, hi: lo + int64(binary.LittleEndian.Uint64(e[16:])),
			unwritten: binary.LittleEndian.Uint32(e[40:])&extentUnwritten != 0})
	}
	return out, true
}

// unwrittenIn returns how many of the extents es overlap [from, to) and
// are unwritten.
func unwrittenIn(es []extent, from, to int64) int {
	n := 0
	for _, e := range es {
		if e.unwritten && e.lo < to && e.hi > from {
			n++
		}
	}
	return n
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
	es, ok := fiemap(t, p, true)
	if !ok {
		t.Skip("FIEMAP not supported here")
	}
	if unwritten := unwrittenIn(es, 0, int64(len(b))); unwritten != 0 || len(es) == 0 {
		t.Fatalf("%d of the %d extents of the open segment (%d bytes, entries end at %d) are unwritten", unwritten, len(es), len(b), ents[len(ents)-1].end)
	}
	if err := l.tw.zeroErr; err != nil {
		t.Fatal(err)
	}
}

// The zeros the writer puts in the space it reserves after a commit go to
// the disk then (startWriteback), not with the next write's fdatasync: the
// extents under them turn from unwritten to written without an fdatasync
// of ours, before the kernel's own flusher (dirty_expire_centisecs, 30 s
// by default) would write them.
func TestZerosAheadWrittenBack(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, testKeys(t), Options{Durability: Group})
	defer l.Close()
	batch := make([]Entry, 60) // ~40 KB
	for i := range batch {
		batch[i] = benchEntry(i)
	}
	var from, to int64
	for i := 0; i < 8 && from == 0; i++ {
		unlock := l.exclusive()
		w0, alloc0 := l.tw, l.tw.alloc
		unlock()
		if _, err := l.AppendBatch(ctx, batch); err != nil {
			t.Fatal(err)
		}
		// Wait for the top-up, if any: it holds the commit lock.
		unlock = l.exclusive()
		w := l.tw
		if w.zeroErr != nil {
			unlock()
			t.Fatal(w.zeroErr)
		}
		// The write fitted in the space reserved before it (no
		// reservation, so no zeros, on the write's own path) and the
		// space grew after: the commit's top-up zeroed from past the
		// room of the next write to the end.
		if w == w0 && w.size <= alloc0 && w.alloc > alloc0 {
			from, to = int64(w.size+w.lastWrite), int64(w.alloc)
		}
		unlock()
	}
	if from == 0 {
		t.Skip("no preallocation on this file system")
	}
	p, _ := lastSegment(t, dir)
	for t0 := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		es, ok := fiemap(t, p, false)
		if !ok {
			t.Skip("FIEMAP not supported here")
		}
		n := unwrittenIn(es, from, to)
		if n == 0 {
			return
		}
		// 20 s: time for a loaded disk's queue, and still short of the
		// 30 s after which the flusher would write them anyway.
		if time.Since(t0) > 20*time.Second {
			t.Fatalf("the zeros in [%d, %d) are still on %d unwritten extents 20 s after the commit: their writeback was not started", from, to, n)
		}
	}
}
