package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/unlimitedcontext/ucl/projections/fts"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// The full-text query figure: one process that opens an index of n
// documents (the corpus of the build figure) and answers one bm25 query
// of 2-4 words for the top 10, as a `ucl query --mode bm25` process
// without an owner does: ucl's fts projection (opened read-only, typo
// tolerance on, as by default) beside SQLite FTS5 (the words OR-ed, as
// ucl matches them, ranked by bm25()). CPU and peak RSS are the whole
// child process's (its rusage: start-up, open, query). The indexes are
// built once into the -dir and reused by later runs.

// ftsQueryIndexes builds (or finds) the two indexes of n documents under
// root and returns their directories.
func ftsQueryIndexes(root string, n int) (uclDir, fts5Dir string) {
	uclDir, fts5Dir = filepath.Join(root, fmt.Sprintf("ftsq-ucl-%d", n)), filepath.Join(root, fmt.Sprintf("ftsq-fts5-%d", n))
	// The marker names the format the index was built in: ucl's fts
	// projection opened on an index of another format wipes it (and
	// would answer nothing), so a kept index of an older format is built
	// again.
	for _, b := range []struct{ which, dir, format string }{
		{"ucl", uclDir, fmt.Sprintf("fts format %d\n", fts.FormatVersion)}, {"fts5", fts5Dir, ""}} {
		done := filepath.Join(b.dir, "complete")
		if kept, err := os.ReadFile(done); err == nil && string(kept) == b.format {
			fmt.Printf("%s index of %d documents: reusing %s\n", b.which, n, b.dir)
			continue
		}
		os.RemoveAll(b.dir)
		// Counting ids, whatever -ftsids says: the indexes are kept and
		// reused, and those of earlier runs were built with them.
		cmd := exec.Command(os.Args[0], "-child", b.which, "-dir", b.dir, "-fts", strconv.Itoa(n), "-ftsids", "counting")
		cmd.Stderr = os.Stderr
		peak := childPeak(cmd)
		out, err := cmd.Output()
		if err != nil {
			fail(fmt.Errorf("%s build of %d: %w", b.which, n, err))
		}
		f := strings.Fields(string(out))
		rss := peak()
		fmt.Printf("%s index of %d documents built: wall %s s, cpu %s s, peak RSS %.0f MB\n", b.which, n, f[0], f[1], float64(rss)/1e6)
		if err := os.WriteFile(done, []byte(b.format), 0o600); err != nil {
			fail(err)
		}
	}
	dropCache(uclDir)
	dropCache(fts5Dir)
	return uclDir, fts5Dir
}

// queryChild answers one query in this process and prints the hits.
func queryChild(which, dir, q string) {
	switch which {
	case "uclq":
		x, err := fts.Open(dir)
		if err != nil {
			fail(err)
		}
		hits, err := x.Search(context.Background(), fts.Query{Text: q, K: 10})
		if err != nil {
			fail(err)
		}
		fmt.Println(len(hits))
		if err := x.Close(); err != nil {
			fail(err)
		}
	case "fts5q":
		db, err := sql.Open("sqlite", filepath.Join(dir, "fts.db")+"?mode=ro")
		if err != nil {
			fail(err)
		}
		defer db.Close()
		rows, err := db.Query("SELECT rowid, bm25(docs) FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT 10",
			strings.Join(strings.Fields(q), " OR "))
		if err != nil {
			fail(err)
		}
		n := 0
		for rows.Next() {
			var id int64
			var score float64
			if err := rows.Scan(&id, &score); err != nil {
				fail(err)
			}
			n++
		}
		if err := rows.Err(); err != nil {
			fail(err)
		}
		fmt.Println(n)
	default:
		fail(fmt.Errorf("unknown child %q", which))
	}
}

// queryRun runs one query process: its CPU seconds (user+system) and
// peak RSS in bytes.
func queryRun(which, dir, q string) (cpu float64, rss int64) {
	cmd := exec.Command(os.Args[0], "-child", which, "-dir", dir, "-q", q)
	cmd.Stderr = os.Stderr
	peak := childPeak(cmd)
	out, err := cmd.Output()
	if err != nil {
		fail(fmt.Errorf("%s query %q: %w", which, q, err))
	}
	if n, _ := strconv.Atoi(strings.TrimSpace(string(out))); n == 0 {
		fail(fmt.Errorf("%s query %q found nothing", which, q))
	}
	ps := cmd.ProcessState
	return (ps.UserTime() + ps.SystemTime()).Seconds(), peak()
}

func ftsQueryFigure(root string, rounds, n int) {
	uclDir, fts5Dir := ftsQueryIndexes(root, n)
	r := rand.New(rand.NewSource(7))
	var uc, pc, ur, pr, rc []float64
	for i := 0; i < rounds*5; i++ {
		q := projtest.QueryText(r)
		c, m := queryRun("uclq", uclDir, q)
		c2, m2 := queryRun("fts5q", fts5Dir, q)
		uc, ur, pc, pr, rc = append(uc, c*1000), append(ur, float64(m)/1e6), append(pc, c2*1000), append(pr, float64(m2)/1e6), append(rc, c/c2)
	}
	fmt.Printf("\none bm25 query process (top 10) on an index of %d documents, %d queries, each process alternating:\n", n, len(uc))
	fmt.Printf("%-10s %11s %10s\n", "", "cpu ms", "peak RSS")
	fmt.Printf("%-10s %11.1f %7.1f MB\n", "ucl fts", median(uc), median(ur))
	fmt.Printf("%-10s %11.1f %7.1f MB\n", "FTS5", median(pc), median(pr))
	fmt.Printf("ucl/FTS5: cpu %.2f [%.2f-%.2f], peak RSS %.1f (ucl max %.1f MB)\n", median(rc), minOf(rc), maxOf(rc),
		median(ur)/median(pr), maxOf(ur))
	summaryRow("one bm25 query process of the fts projection alone, %d documents | CPU %.1f ms, peak RSS %.1f MB | FTS5: CPU %.1f ms, peak RSS %.1f MB | CPU %.2f [%.2f–%.2f], RSS %.1f× (%d queries)",
		n, median(uc), median(ur), median(pc), median(pr), median(rc), minOf(rc), maxOf(rc), median(ur)/median(pr), len(uc))
}
