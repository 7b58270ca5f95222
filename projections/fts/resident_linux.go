package fts

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// dropSegmentPages tells the kernel this process no longer needs the
// pages it has touched of the segment files mapped at segs (madvise
// MADV_DONTNEED). Each is a read-only shared mapping of a file: nothing
// is lost, a later read maps the page again from the page cache. Only a
// range that /proc/self/maps shows as a shared mapping of that very file
// is advised (MADV_DONTNEED on anonymous memory would zero it); the
// caller keeps segs mapped meanwhile.
func dropSegmentPages(segs []mappedFile) {
	if len(segs) == 0 {
		return
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return // advice only
	}
	defer f.Close()
	type mapping struct {
		end  uintptr
		path string
	}
	mapped := map[uintptr]mapping{} // start -> shared mappings of segment files
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 || len(fs[1]) < 4 || fs[1][3] != 's' {
			continue
		}
		path := strings.Join(fs[5:], " ")
		if !strings.HasSuffix(path, ".zap") {
			continue
		}
		lo, hi, ok := strings.Cut(fs[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if ok && err1 == nil && err2 == nil {
			mapped[uintptr(start)] = mapping{uintptr(end), path}
		}
	}
	if sc.Err() != nil {
		return
	}
	for _, sg := range segs {
		b := sg.data
		start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		m, ok := mapped[start]
		if !ok || len(b) == 0 || start+uintptr(len(b)) > m.end || !samePath(sg.path, m.path) {
			continue
		}
		// Advice: nothing to do when it is refused.
		_ = syscall.Madvise(b, syscall.MADV_DONTNEED)
	}
}

// samePath reports whether path names the file the kernel calls mapped
// (absolute, symbolic links resolved).
func samePath(path, mapped string) bool {
	if abs, err := filepath.Abs(path); err == nil && abs == mapped {
		return true
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false
	}
	abs, err := filepath.Abs(real)
	return err == nil && abs == mapped
}
