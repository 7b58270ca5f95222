package fts

import (
	"path/filepath"
	"strings"
	"syscall"
	"unsafe"

	"github.com/unlimitedcontext/ucl/internal/fsutil"
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
	type mapping struct {
		end  uintptr
		path string
	}
	mapped := map[uintptr]mapping{} // start -> shared mappings of segment files
	err := fsutil.Mappings(func(m fsutil.Mapping) {
		if m.Shared && strings.HasSuffix(m.Path, ".zap") {
			mapped[m.Start] = mapping{m.End, m.Path}
		}
	})
	if err != nil {
		return // advice only
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
