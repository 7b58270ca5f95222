package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// memStatsEnv names the file a one-shot query or context process writes
// its memory figures to once it has its answer, before it closes the
// store (closing unmaps the projections, so a figure taken at exit would
// miss them): the peak and current resident set, split into anonymous
// and file-backed pages, and the resident kilobytes of each mapped file.
// What the process maps is what its RSS is made of, so this is how a
// change to it is measured. A developer aid (Linux: it reads /proc), so
// an environment variable and not a flag.
const memStatsEnv = "UCL_MEMSTATS"

// dumpMemStats writes the figures memStatsEnv describes to the file it
// names, if set; a failure is reported on stderr and changes nothing else.
func dumpMemStats(stderr io.Writer) {
	path := os.Getenv(memStatsEnv)
	if path == "" {
		return
	}
	var out bytes.Buffer
	err := writeMemStats(&out, "/proc/self")
	if err == nil {
		err = os.WriteFile(path, out.Bytes(), 0o600)
	}
	if err != nil {
		fmt.Fprintf(stderr, "ucl: mem stats: %v\n", err)
	}
}

// writeMemStats writes the status lines VmHWM, VmRSS, RssAnon, RssFile
// and RssShmem of the process whose /proc directory is proc, then one
// line per mapped file (or [heap], [stack], anonymous…) with its resident
// kilobytes, largest first.
func writeMemStats(w io.Writer, proc string) error {
	status, err := os.ReadFile(proc + "/status")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(status), "\n") {
		for _, k := range []string{"VmHWM:", "VmRSS:", "RssAnon:", "RssFile:", "RssShmem:"} {
			if strings.HasPrefix(line, k) {
				fmt.Fprintln(w, strings.Join(strings.Fields(line), " "))
			}
		}
	}
	f, err := os.Open(proc + "/smaps")
	if err != nil {
		return err
	}
	defer f.Close()
	rss := map[string]int64{}
	name := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
			// A mapping's header: address perms offset dev inode [path].
			name = "[anon]"
			if len(fields) >= 6 {
				name = strings.Join(fields[5:], " ")
			}
		case len(fields) == 3 && fields[0] == "Rss:":
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return fmt.Errorf("parse smaps: %w", err)
			}
			rss[name] += kb
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	names := make([]string, 0, len(rss))
	for n := range rss {
		if rss[n] > 0 {
			names = append(names, n)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		if rss[names[i]] != rss[names[j]] {
			return rss[names[i]] > rss[names[j]]
		}
		return names[i] < names[j]
	})
	for _, n := range names {
		fmt.Fprintf(w, "%8d kB %s\n", rss[n], n)
	}
	return nil
}
