//go:build !unix

package log

import "os"

// readMapped reads the file at path (see mapread_unix.go).
func readMapped(path string) ([]byte, func() error, error) {
	b, err := os.ReadFile(path)
	return b, func() error { return nil }, err
}
