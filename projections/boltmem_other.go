//go:build !linux

package projections

// dontNeed does nothing here: resident mapped pages are the kernel's to
// drop.
func dontNeed(addr, n uintptr) {}
