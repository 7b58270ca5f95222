package projections

import "golang.org/x/sys/unix"

// dontNeed is madvise(MADV_DONTNEED) on the n bytes of a read-only shared
// file mapping at addr: the pages leave the resident set and are read
// again from the page cache when touched.
func dontNeed(addr, n uintptr) {
	n &^= uintptr(unix.Getpagesize() - 1)
	if n == 0 {
		return
	}
	// The raw call takes the address as it is: the mapping is bbolt's,
	// not a Go object, and stays in place for the call (ReleaseBolt).
	_, _, _ = unix.Syscall(unix.SYS_MADVISE, addr, n, unix.MADV_DONTNEED)
}
