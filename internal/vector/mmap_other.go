//go:build !unix

package vector

import "os"

// mapFile reads path: this system has no mmap here.
func mapFile(path string) ([]byte, func() error, error) {
	b, err := os.ReadFile(path)
	return b, func() error { return nil }, err
}
