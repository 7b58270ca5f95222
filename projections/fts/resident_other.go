//go:build !linux

package fts

// dropSegmentPages is a no-op where madvise is not wired (see the linux
// file).
func dropSegmentPages(segs []mappedFile) {}
