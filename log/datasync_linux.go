package log

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// dataSync makes f's data durable with fdatasync, as etcd's WAL and SQLite
// do: it writes what reading the data back needs (the file size included)
// and skips metadata that does not (modification times), which fsync
// journals on every append.
func dataSync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			if err != nil {
				return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}

// preallocate reserves n bytes of f from off on (fallocate mode 0: the file
// grows to off+n, the new bytes read as zeros).
func preallocate(f *os.File, off, n int64) error {
	if n <= 0 {
		return nil
	}
	for {
		err := syscall.Fallocate(int(f.Fd()), 0, off, n)
		if err != syscall.EINTR {
			return err
		}
	}
}

// startWriteback asks the kernel to start writing the dirty pages of f in
// [off, off+n) to disk and returns without waiting for them
// (sync_file_range, SYNC_FILE_RANGE_WRITE). Nothing depends on it: what
// it does not start, the next fdatasync writes.
func startWriteback(f *os.File, off, n int64) error {
	if err := unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE); err != nil {
		return &os.PathError{Op: "sync_file_range", Path: f.Name(), Err: err}
	}
	return nil
}
