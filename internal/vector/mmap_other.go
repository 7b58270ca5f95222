//go:build !unix

package vector

import "os"

// mapFile reads path: this system has no mmap here.
func mapFile(path string) ([]byte, *os.File, func() error, error) {
	b, err := os.ReadFile(path)
	return b, nil, func() error { return nil }, err
}
