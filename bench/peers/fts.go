package main

import (
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/fts"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// The full-text figure: ucl's fts projection (bleve scorch, the build path
// of a bulk catch-up: Apply per event, Commit and ReleaseMemory every
// projections.DefaultCommitEvery; the projector's GOGC 200 is not copied,
// the collector runs at its default) beside SQLite FTS5 (one column, porter
// stemming, a transaction per 10K rows), each building an index of the
// same n documents (60 words of Zipf-distributed text over a 50K-word
// synthetic vocabulary, generated while indexing) in a process of its own,
// so that its peak RSS is its own. No log is read: this is the index build
// alone. Chunk ids are random by default (-ftsids), as a store's are.

const ftsCommitEvery = projections.DefaultCommitEvery

// ftsDoc is document i of the corpus (r advanced in order).
func ftsDoc(r *rand.Rand, i int) (session, content string, ms int64) {
	return fmt.Sprintf("s%d", i/50), projtest.TextZipf(r, 60, 50_000), projtest.BaseTime + int64(i)*30_000
}

func runChild(which, dir string, n int) {
	if os.Getenv("PEERS_RSS") != "" {
		defer sampleRSS()()
	}
	t0, cpu0 := time.Now(), cpuTime()
	switch which {
	case "ucl":
		uclFTS(dir, n)
	case "fts5":
		fts5Build(dir, n)
	default:
		fail(fmt.Errorf("unknown child %q", which))
	}
	fmt.Printf("%f %f\n", time.Since(t0).Seconds(), (cpuTime() - cpu0).Seconds())
}

func uclFTS(dir string, n int) {
	x, err := fts.Open(dir)
	if err != nil {
		fail(err)
	}
	r := rand.New(rand.NewSource(1))
	// -ftsids random (the default): chunk ids drawn at random, as a
	// store's event ids are, so side.db's "ids" entries land all over the
	// file as in a store's build; counting ids (1, 2, ...) append at the
	// end and understate the cost (the figure of stops up to 40).
	// As the projector does around a bulk catch-up (CompactAfter events
	// or more): a first build then skips side.db lookups of ids it never
	// stored.
	if n >= projections.CompactAfter {
		x.BeginBulk()
	}
	var ids *rand.Rand
	if ftsIDs == "random" {
		ids = rand.New(rand.NewSource(2))
	}
	for i := 0; i < n; i++ {
		session, content, ms := ftsDoc(r, i)
		var id log.ID
		binary.BigEndian.PutUint64(id[8:], uint64(i+1))
		if ids != nil {
			ids.Read(id[:])
		}
		seq := uint64(i + 1)
		ev := &log.Event{
			Header: log.Header{Version: log.FormatVersion, Type: log.TypeStore, Seq: seq, Time: ms, ID: id},
			Hash:   sha256.Sum256(id[:]),
			Body: &log.Store{ChunkID: id.String(), Kind: log.KindConversation, Session: session, Role: "user",
				Content: content, Time: ms},
		}
		if err := x.Apply(ev); err != nil {
			fail(err)
		}
		if (i+1)%ftsCommitEvery == 0 || i == n-1 {
			if err := x.Commit(projections.Checkpoint{Seq: ev.Seq, Hash: ev.Hash}); err != nil {
				fail(err)
			}
			// As the projector does after each commit of a bulk catch-up.
			x.ReleaseMemory()
		}
	}
	if err := x.EndBulk(); err != nil {
		fail(err)
	}
	if err := x.Close(); err != nil {
		fail(err)
	}
}

func fts5Build(dir string, n int) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		fail(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "fts.db"))
	if err != nil {
		fail(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, p := range []string{"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL",
		"CREATE VIRTUAL TABLE docs USING fts5(content, tokenize='porter unicode61')"} {
		if _, err := db.Exec(p); err != nil {
			fail(fmt.Errorf("sqlite %q: %w", p, err))
		}
	}
	r := rand.New(rand.NewSource(1))
	for i := 0; i < n; i += ftsCommitEvery {
		tx, err := db.Begin()
		if err != nil {
			fail(err)
		}
		st, err := tx.Prepare("INSERT INTO docs (rowid, content) VALUES (?, ?)")
		if err != nil {
			fail(err)
		}
		for j := i; j < min(n, i+ftsCommitEvery); j++ {
			_, content, _ := ftsDoc(r, j)
			if _, err := st.Exec(j+1, content); err != nil {
				fail(err)
			}
		}
		st.Close()
		if err := tx.Commit(); err != nil {
			fail(err)
		}
	}
}

// childRun runs one build in a child process: wall and CPU seconds as it
// measured them, and its peak RSS in bytes (as it measured it: rss.go).
func childRun(which, dir string, n int) (wall, cpu float64, rss int64) {
	os.RemoveAll(dir)
	defer os.RemoveAll(dir)
	cmd := exec.Command(os.Args[0], "-child", which, "-dir", dir, "-fts", strconv.Itoa(n), "-ftsids", ftsIDs)
	cmd.Stderr = os.Stderr
	peak := childPeak(cmd)
	out, err := cmd.Output()
	if err != nil {
		fail(fmt.Errorf("%s build: %w", which, err))
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		fail(fmt.Errorf("%s build printed %q", which, out))
	}
	wall, _ = strconv.ParseFloat(f[0], 64)
	cpu, _ = strconv.ParseFloat(f[1], 64)
	return wall, cpu, peak()
}

func ftsFigure(root string, rounds, n int) {
	var uw, pw, uc, pc, rt, rc []float64
	var urss, prss []float64
	for r := 0; r < rounds; r++ {
		w, c, m := childRun("ucl", filepath.Join(root, "fts-ucl"), n)
		uw, uc, urss = append(uw, w), append(uc, c), append(urss, float64(m)/1e6)
		w2, c2, m2 := childRun("fts5", filepath.Join(root, "fts-sqlite"), n)
		pw, pc, prss = append(pw, w2), append(pc, c2), append(prss, float64(m2)/1e6)
		rt, rc = append(rt, w/w2), append(rc, c/c2)
	}
	fmt.Printf("\nfull-text build of %d documents, %s chunk ids (own process each, alternating):\n", n, ftsIDs)
	fmt.Printf("%-10s %9s %9s %10s\n", "", "wall s", "cpu s", "peak RSS")
	fmt.Printf("%-10s %9.2f %9.2f %7.0f MB\n", "ucl fts", median(uw), median(uc), median(urss))
	fmt.Printf("%-10s %9.2f %9.2f %7.0f MB\n", "FTS5", median(pw), median(pc), median(prss))
	fmt.Printf("ucl/FTS5: wall %.2f [%.2f-%.2f], cpu %.2f [%.2f-%.2f], peak RSS %.1f\n", median(rt), minOf(rt), maxOf(rt),
		median(rc), minOf(rc), maxOf(rc), median(urss)/median(prss))
	summaryRow("full-text build, %d documents, %s chunk ids | CPU %.1f s, peak RSS %.0f MB | FTS5: CPU %.1f s, peak RSS %.0f MB | CPU %.2f [%.2f–%.2f] (target ≤ 2), RSS %.1f× (target ≤ 4)",
		n, ftsIDs, median(uc), median(urss), median(pc), median(prss), median(rc), minOf(rc), maxOf(rc), median(urss)/median(prss))
}

// sampleRSS samples the process's anonymous and file-backed resident
// memory and the Go heap (objects, collector goal, live after the last
// collection) every 50 ms until the returned func is called, which prints
// the largest of each to stderr: where a build child's peak RSS comes
// from (PEERS_RSS=1). With PEERS_HEAPPROFILE=FILE it also writes a heap
// profile each time the live heap reaches a new high, so FILE holds the
// largest live heap's allocations. With PEERS_RSS=files it also prints
// which files the file-backed part of the largest total was (mapped
// segment files, the executable).
func sampleRSS() func() {
	stop := make(chan struct{})
	done := make(chan struct{})
	var maxAnon, maxFile, maxTotal int64
	var peakFiles string
	ms := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/goal:bytes"}, {Name: "/memory/classes/total:bytes"}, {Name: "/gc/heap/live:bytes"}}
	var maxMS [4]uint64
	read := func() {
		metrics.Read(ms)
		if p := os.Getenv("PEERS_HEAPPROFILE"); p != "" && ms[3].Value.Uint64() > maxMS[3] {
			if f, err := os.Create(p); err == nil {
				pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
			}
		}
		for i := range ms {
			maxMS[i] = max(maxMS[i], ms[i].Value.Uint64())
		}
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return
		}
		var anon, file int64
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			if len(f) < 2 {
				continue
			}
			v, _ := strconv.ParseInt(f[1], 10, 64)
			switch f[0] {
			case "RssAnon:":
				anon = v
			case "RssFile:", "RssShmem:":
				file += v
			}
		}
		if anon+file > maxTotal && os.Getenv("PEERS_RSS") == "files" {
			peakFiles = residentFiles()
		}
		maxAnon, maxFile, maxTotal = max(maxAnon, anon), max(maxFile, file), max(maxTotal, anon+file)
	}
	go func() {
		defer close(done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				read()
			}
		}
	}()
	return func() {
		close(stop)
		<-done
		fmt.Fprintf(os.Stderr, "rss peak sampled: anon %d MB, file %d MB, total %d MB; heap objects %d MB, goal %d MB, runtime total %d MB, live %d MB\n",
			maxAnon>>10, maxFile>>10, maxTotal>>10, maxMS[0]>>20, maxMS[1]>>20, maxMS[2]>>20, maxMS[3]>>20)
		if peakFiles != "" {
			fmt.Fprintf(os.Stderr, "file-backed resident memory at the peak, by kind:\n%s", peakFiles)
		}
	}
}

// residentFiles sums /proc/self/smaps's resident memory of file mappings
// by file name suffix (the executable, .zap segments, bbolt files, ...):
// which files a peak's file-backed RSS is (PEERS_RSS=files).
func residentFiles() string {
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return ""
	}
	kinds := map[string]int64{}
	var cur string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			cur = ""
			if len(f) >= 6 {
				cur = filepath.Ext(f[5])
				if cur == "" {
					cur = filepath.Base(f[5])
				}
			}
			continue
		}
		if len(f) >= 2 && f[0] == "Rss:" && cur != "" {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			kinds[cur] += v
		}
	}
	var out strings.Builder
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		if v := kinds[k]; v >= 1024 {
			fmt.Fprintf(&out, "  %-20s %d MB\n", k, v>>10)
		}
	}
	return out.String()
}
