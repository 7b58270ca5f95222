//go:build unix

package vector

import (
	"errors"
	"os"
	"syscall"
)

// mapFile maps path privately (copy-on-write) and returns its bytes, the
// file (kept open for reads beside the mapping; nil when the bytes were
// read instead) and the function that unmaps and closes them.
func mapFile(path string) ([]byte, *os.File, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, nil, errors.Join(err, f.Close())
	}
	if fi.Size() == 0 || int64(int(fi.Size())) != fi.Size() {
		b, err := os.ReadFile(path)
		return b, nil, func() error { return nil }, errors.Join(err, f.Close())
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, nil, errors.Join(err, f.Close())
	}
	return data, f, func() error { return errors.Join(syscall.Munmap(data), f.Close()) }, nil
}
