package ucl

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/unlimitedcontext/ucl/internal/fsutil"
	"golang.org/x/sys/unix"
)

// adviseOneShot advises every mapping of a file under dir MADV_RANDOM:
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
//
// It also lets go of the pages of the segments (shared mappings of .zap
// files) that this process has mapped so far (MADV_DONTNEED: a read-only
// shared file mapping, so a later read maps the page again from the page
// cache). Opening a segment reads its footer, field index and doc value
// locations, and each of those faults mapped the 64 KB around it
// (fault-around, the files being in the page cache: the open's own
// read-ahead put all of them there); what bleve keeps of them is on its
// heap. At 1M events, 40 segments: 9.3 MB mapped by the open, and a bm25
// query's segment pages at its peak fell from 21.8-28 MB to 16.4-23.2 MB.
func adviseOneShot(dir string) error {
	// The maps name files by their resolved paths.
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	prefix := strings.TrimSuffix(dir, "/") + "/"
	err := fsutil.Mappings(func(m fsutil.Mapping) {
		if !strings.HasPrefix(m.Path, prefix) {
			return
		}
		// The mapping may be gone by now (a segment merged away and
		// unmapped): madvise then fails with ENOMEM, which says nothing
		// about the others.
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, m.Start, m.End-m.Start, unix.MADV_RANDOM)
		if m.Shared && strings.HasSuffix(m.Path, ".zap") {
			_, _, _ = unix.Syscall(unix.SYS_MADVISE, m.Start, m.End-m.Start, unix.MADV_DONTNEED)
		}
	})
	if err != nil {
		return fmt.Errorf("advise mappings: %w", err)
	}
	return nil
}
