package ucl

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// adviseRandom advises every mapping of a file under dir MADV_RANDOM:
// the kernel then reads no more than the page a fault needs when the file
// is not in the page cache. bbolt advises its databases so itself; bleve
// maps its full-text segments with the default and gives no hook to
// advise them, so the mappings are found in /proc/self/maps. Without it each
// such fault reads a read-ahead window around the page (8 MB on the
// machine measured: a 1M-event bm25 query with the projections out of the
// page cache read 178 MB from disk and peaked at 61.6 MB; advised, 88 MB
// and 52.4 MB), and what it read stays cached in folios that later
// queries map whole (see DropProjectionPages). Pages already
// cached are mapped as before.
func adviseRandom(dir string) error {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return fmt.Errorf("advise mappings: %w", err)
	}
	defer f.Close()
	// The maps name files by their resolved paths.
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	prefix := strings.TrimSuffix(dir, "/") + "/"
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// address perms offset dev inode path
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || !strings.HasPrefix(fields[5], prefix) {
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
		// The mapping may be gone by now (a segment merged away and
		// unmapped): madvise then fails with ENOMEM, which says nothing
		// about the others.
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, uintptr(start), uintptr(end-start), unix.MADV_RANDOM)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("advise mappings: %w", err)
	}
	return nil
}
