package fsutil

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Mapping is one line of /proc/self/maps: a range of this process's
// address space and the file mapped there.
type Mapping struct {
	Start, End uintptr
	Shared     bool   // MAP_SHARED (perms "...s")
	Path       string // absolute, symbolic links resolved; "" for anonymous memory
}

// Mappings calls fn for every file mapping of this process (Linux's
// /proc/self/maps), the one reader of that file for the pieces that
// advise the kernel about mapped projection files. A mapping may be gone
// by the time fn sees it.
func Mappings(fn func(Mapping)) error {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return fmt.Errorf("read mappings: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// address perms offset dev inode path
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || len(fields[1]) < 4 {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		fn(Mapping{Start: uintptr(start), End: uintptr(end), Shared: fields[1][3] == 's', Path: strings.Join(fields[5:], " ")})
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read mappings: %w", err)
	}
	return nil
}
