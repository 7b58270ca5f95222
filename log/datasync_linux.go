package log

import (
	"os"
	"syscall"
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
