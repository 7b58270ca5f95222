//go:build !linux

package log

import "os"

// dataSync is fsync where fdatasync is not available.
func dataSync(f *os.File) error { return f.Sync() }

// preallocate does nothing where fallocate is not available: the writes
// extend the file.
func preallocate(f *os.File, off, n int64) error { return nil }

// startWriteback does nothing where sync_file_range is not available:
// the next fdatasync writes the pages.
func startWriteback(f *os.File, off, n int64) error { return nil }
