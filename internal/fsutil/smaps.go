package fsutil

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// SmapsEntry is one mapping of /proc/PID/smaps with the fields ucl's
// measurements read.
type SmapsEntry struct {
	Path    string   // as the kernel prints it; "" for anonymous memory
	RssKB   int64    // resident kilobytes ("Rss:")
	VmFlags []string // "VmFlags:" (e.g. "rr" for MADV_RANDOM)
}

// Smaps calls fn for every mapping in proc's smaps file (proc is a /proc
// directory such as "/proc/self"; Linux only: elsewhere the open fails,
// wrapping fs.ErrNotExist). It is the one parser of that format for the
// packages that measure resident pages and advice (their tests); the CLI's
// UCL_MEMSTATS writer keeps its own, because the layering keeps cmd/ucl
// off internal packages other than through the engine.
func Smaps(proc string, fn func(SmapsEntry)) error {
	f, err := os.Open(proc + "/smaps")
	if err != nil {
		return fmt.Errorf("read smaps: %w", err)
	}
	defer f.Close()
	var cur *SmapsEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			// A mapping's header: address perms offset dev inode [path].
			if cur != nil {
				fn(*cur)
			}
			cur = &SmapsEntry{Path: strings.Join(fields[5:], " ")}
			continue
		}
		if cur == nil {
			continue
		}
		switch fields[0] {
		case "Rss:":
			if len(fields) >= 2 {
				kb, err := strconv.ParseInt(fields[1], 10, 64)
				if err != nil {
					return fmt.Errorf("read smaps: Rss %q: %w", fields[1], err)
				}
				cur.RssKB = kb
			}
		case "VmFlags:":
			cur.VmFlags = fields[1:]
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read smaps: %w", err)
	}
	if cur != nil {
		fn(*cur)
	}
	return nil
}
