//go:build unix

package vector

import (
	"os"
	"syscall"
)

// mapFile maps path privately (copy-on-write) and returns its bytes and the
// function that unmaps them.
func mapFile(path string) ([]byte, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if fi.Size() == 0 || int64(int(fi.Size())) != fi.Size() {
		b, err := os.ReadFile(path)
		return b, func() error { return nil }, err
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, err
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}
