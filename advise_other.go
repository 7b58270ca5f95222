//go:build !linux

package ucl

// adviseOneShot does nothing here (it reads Linux's /proc/self/maps).
func adviseOneShot(string) error { return nil }
