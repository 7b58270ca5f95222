package test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The store footprint and command benchmarks of issue 17 ("a lighter store
// and cheaper commands") and issue 9 (a 1M-event store): conversation
// turns appended through the built binary, projections caught up by one
// `ucl project` process, then each command timed as a fresh process with no
// owner running (wall time, and peak RSS from the kernel's rusage).
//
//	go test -run '^$' -bench BenchmarkCommands -benchtime 1x ./test/
//
// 10K and 50K turns by default: LoCoMo's when
// ../../shared/eval/locomo-dev.json (UCL_BENCH_LOCOMO) is there, repeated
// with other names, sessions and times; otherwise synthetic turns of the
// same shape. UCL_BENCH_1M=1 adds the 1M-event stores of issue 9 (target:
// a `ucl query` process in ≤ 100 ms), ~300-byte contents built with
// durability none, one per corpus of UCL_BENCH_CORPUS (corpus_bench_test.go;
// default "locomo,words100"). Each takes 10-50 minutes and up to ~9 GB of
// memory to build on a 2-core machine; with UCL_BENCH_1M_DIR=DIR they are
// built once under DIR and reused (`make bench-1m`). For issue 26's table
// (scale_bench_test.go): UCL_BENCH_BUILD=1 times the first build of a copy
// of a reused store's log too; UCL_BENCH_FTS5=BIN puts each locomo store's
// query processes beside a Go FTS5 query process (BIN:
// bench/peers/cmd/fts5corpus); UCL_BENCH_SUMMARY=FILE appends the figures
// to FILE as markdown table rows.

// benchTurn is one conversation turn as `ucl append` reads it.
type benchTurn struct {
	Type    string            `json:"type"`
	Session string            `json:"session"`
	Role    string            `json:"role"`
	Kind    string            `json:"kind"`
	Content string            `json:"content"`
	Time    string            `json:"time"`
	Meta    map[string]string `json:"meta,omitempty"`
}

type locomoTurn struct{ session, speaker, text, dia string }

// locomoTurns reads the turns of the LoCoMo development set, in order, or
// nil when it is not there.
func locomoTurns() []locomoTurn {
	path := os.Getenv("UCL_BENCH_LOCOMO")
	if path == "" {
		path = "../../shared/eval/locomo-dev.json"
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var convs []struct {
		Conversation map[string]json.RawMessage `json:"conversation"`
	}
	if json.Unmarshal(raw, &convs) != nil {
		return nil
	}
	sess := regexp.MustCompile(`^session_(\d+)$`)
	var out []locomoTurn
	for ci, c := range convs {
		var keys []int
		for k := range c.Conversation {
			if m := sess.FindStringSubmatch(k); m != nil {
				n, _ := strconv.Atoi(m[1])
				keys = append(keys, n)
			}
		}
		sort.Ints(keys)
		for _, k := range keys {
			var turns []struct {
				Speaker string `json:"speaker"`
				Text    string `json:"text"`
				Dia     string `json:"dia_id"`
			}
			if json.Unmarshal(c.Conversation[fmt.Sprintf("session_%d", k)], &turns) != nil {
				return nil
			}
			for _, t := range turns {
				out = append(out, locomoTurn{fmt.Sprintf("c%d-s%d", ci, k), t.Speaker, t.Text, t.Dia})
			}
		}
	}
	return out
}

var benchNames = strings.Fields(`Ana Bruno Carla Dmitri Elena Farid Greta Hugo Ines Jonas Kaori Luis Maya Nils Olga Pedro
Quinn Rosa Samir Tara Umar Vera Wim Xenia Yusuf Zoe`)

// benchTurns writes n turns as JSONL and returns them. Repetition r of the
// source renames its two speakers (so a repeated turn is other text), moves
// its sessions and shifts its times by r weeks; contentLen > 0 pads or cuts
// synthetic contents to that length instead (the 1M store).
func benchTurns(n, contentLen int) []byte {
	src := locomoTurns()
	if contentLen > 0 || len(src) == 0 {
		src = nil
		r := rand.New(rand.NewSource(1))
		if contentLen == 0 {
			contentLen = 140
		}
		for i := 0; i < 5000; i++ {
			src = append(src, locomoTurn{fmt.Sprintf("s%d", i/50), []string{"Ana", "Bruno"}[i%2], benchSentence(r, contentLen), fmt.Sprintf("D%d:%d", i/50, i%50)})
		}
	}
	speakers := map[string]int{}
	for _, t := range src {
		if _, ok := speakers[t.speaker]; !ok {
			speakers[t.speaker] = len(speakers)
		}
	}
	base := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	for i := 0; i < n; i++ {
		rep, t := i/len(src), src[i%len(src)]
		content, speaker := t.speaker+": "+t.text, t.speaker
		if rep > 0 {
			for name, k := range speakers {
				other := benchNames[(rep*7+k)%len(benchNames)]
				content = strings.ReplaceAll(content, name, other)
				if name == t.speaker {
					speaker = other
				}
			}
		}
		at := base.Add(time.Duration(rep)*7*24*time.Hour + time.Duration(i%len(src))*30*time.Second)
		if err := enc.Encode(benchTurn{Type: "store", Session: fmt.Sprintf("r%d-%s", rep, t.session), Role: "user",
			Kind: "conversation", Content: content, Time: at.Format(time.RFC3339),
			Meta: map[string]string{"dia_id": t.dia, "speaker": speaker}}); err != nil {
			panic(err)
		}
	}
	return out.Bytes()
}

// procRun is one process's wall time and peak resident set.
type procRun struct {
	wall time.Duration
	cpu  time.Duration // user + system
	rss  int64         // bytes
}

// runProc runs the ucl binary on dir and fails the benchmark on a non-zero
// exit.
func runProc(b *testing.B, dir string, stdin []byte, args ...string) procRun {
	b.Helper()
	r, _, errOut, err := measureProc(append(os.Environ(), "UCL_DIR="+dir, "UCL_VAULT_KEY="), stdin, uclBin, args...)
	if err != nil {
		b.Fatalf("ucl %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
	return r
}

// gnuTime is GNU time's path, or "" when it is not installed.
var gnuTime = func() string {
	p, err := exec.LookPath("/usr/bin/time")
	if err != nil {
		return ""
	}
	return p
}()

// measureProc runs bin with env and stdin: its wall and CPU time, peak
// RSS, stdout and stderr. The peak comes from GNU time, when it is
// installed, which starts bin with fork: Go starts a child with vfork
// (CLONE_VM), and Linux carries the parent's peak RSS into the child's
// rusage at exec, so a child's own Maxrss is at least this benchmark
// process's peak (which holds a million-event input while it builds a
// store, and ~40 MB at any size). Without GNU time, rusage is all there
// is: a peak below this process's own is not measured (logged once).
func measureProc(env []string, stdin []byte, bin string, args ...string) (procRun, string, string, error) {
	var rssFile string
	if gnuTime != "" {
		f, err := os.CreateTemp("", "ucl-bench-rss-*")
		if err != nil {
			return procRun{}, "", "", err
		}
		f.Close()
		rssFile = f.Name()
		defer os.Remove(rssFile)
		args = append([]string{"-f", "%M", "-o", rssFile, bin}, args...)
		bin = gnuTime
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	t0 := time.Now()
	err := cmd.Run()
	wall := time.Since(t0)
	if err != nil {
		return procRun{}, o.String(), e.String(), err
	}
	// CPU: time's own rusage includes the child it waited for.
	r := procRun{wall: wall, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	if rssFile != "" {
		raw, err := os.ReadFile(rssFile)
		if err != nil {
			return r, o.String(), e.String(), err
		}
		f := strings.Fields(string(raw))
		if len(f) == 0 {
			return r, o.String(), e.String(), fmt.Errorf("GNU time wrote no peak RSS to %s", rssFile)
		}
		kb, err := strconv.ParseInt(f[len(f)-1], 10, 64) // its last line: after "Command exited ..." if any
		if err != nil {
			return r, o.String(), e.String(), fmt.Errorf("GNU time's peak RSS %q: %w", f[len(f)-1], err)
		}
		r.rss = kb * 1024
	} else if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		warnNoGNUTime.Do(func() {
			fmt.Fprintln(os.Stderr, "bench: /usr/bin/time (GNU time) not found: a child's peak RSS is at least this process's own")
		})
		r.rss = ru.Maxrss * 1024 // Linux: kilobytes
	}
	return r, o.String(), e.String(), nil
}

var warnNoGNUTime sync.Once

// dirSize is the apparent size of the regular files under dir, and the
// bytes the file system allocated to them (bbolt files have holes: their
// size is their mmap size).
func dirSize(dir string) (size, alloc int64) {
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				size += fi.Size()
				if st, ok := fi.Sys().(*syscall.Stat_t); ok {
					alloc += st.Blocks * 512
				}
			}
		}
		return nil
	})
	return size, alloc
}

func BenchmarkCommands(b *testing.B) {
	type size struct {
		name       string
		n, content int
		corpus     string // "" for the LoCoMo repetitions of benchTurns
	}
	sizes := []size{{"turns=10K", 10_000, 0, ""}, {"turns=50K", 50_000, 0, ""}}
	if os.Getenv("UCL_BENCH_1M") != "" {
		// UCL_BENCH_1M_SIZES: the store sizes, a comma-separated list of
		// event counts with K or M (default 1M; `make bench-1m` adds 100K
		// and 2M for the build figure); UCL_BENCH_1M_N overrides them
		// with one count (a quick check of the wiring).
		for _, name := range strings.Split(cmp.Or(os.Getenv("UCL_BENCH_1M_SIZES"), "1M"), ",") {
			n, err := benchCount(name)
			if err != nil {
				b.Fatalf("UCL_BENCH_1M_SIZES: %v", err)
			}
			if v, err := strconv.Atoi(os.Getenv("UCL_BENCH_1M_N")); err == nil && v > 0 {
				n, name = v, strconv.Itoa(v)
			}
			for _, c := range strings.Split(bench1MCorpora(), ",") {
				sizes = append(sizes, size{"events=" + name + "/corpus=" + c, n, 300, c})
			}
		}
	}
	for _, sz := range sizes {
		b.Run(sz.name, func(b *testing.B) {
			dir, built := benchStoreDir(b, sz.n, sz.corpus)
			src := "LoCoMo development-set turns, repeated with other names, sessions and times"
			switch {
			case sz.corpus == corpusWords100:
				src = fmt.Sprintf("synthetic %d-byte contents, every word uniform over 100 words (each query term in ~1/3 of the chunks)", sz.content)
			case sz.corpus == corpusLoCoMo:
				src = fmt.Sprintf("%d-byte contents written by a bigram model of LoCoMo's turns (real words at real frequencies, no repetition)", sz.content)
			case locomoTurns() == nil:
				src = "synthetic turns (LoCoMo data not found)"
			}
			b.Logf("%s: %s; store built with durability none", sz.name, src)
			if !built {
				var input []byte
				switch sz.corpus {
				case corpusLoCoMo:
					if input = locomoBenchTurns(sz.n, sz.content); input == nil {
						b.Skip("corpus locomo: LoCoMo data not found (UCL_BENCH_LOCOMO)")
					}
				case corpusWords100:
					input = benchTurns(sz.n, sz.content)
				case "":
					input = benchTurns(sz.n, 0)
				default:
					b.Fatalf("unknown corpus %q (UCL_BENCH_CORPUS: %s, %s)", sz.corpus, corpusLoCoMo, corpusWords100)
				}
				runProc(b, dir, nil, "init", "--durability", "none")
				app := runProc(b, dir, input, "append", "-")
				// append keeps the dedup projection as it goes: drop it so
				// the timed catch-up is the first build of a log with no
				// projections, as on a copy of a kept store's log below.
				if err := os.RemoveAll(filepath.Join(dir, "projections")); err != nil {
					b.Fatal(err)
				}
				load0 := loadAvg()
				cu := runProc(b, dir, nil, "project")
				if err := os.WriteFile(filepath.Join(dir, benchBuiltMark), fmt.Appendf(nil, "%d", len(input)), 0o600); err != nil {
					b.Fatal(err)
				}
				b.Logf("%s: input %d bytes of JSONL; append %.2fs", sz.name, len(input), app.wall.Seconds())
				reportBuild(b, sz.name, sz.n, cu, load0)
			} else {
				// A store built by an older ucl may hold projections of
				// another format: bring them up to date here, untimed, so
				// no timed command below rebuilds them.
				cu := runProc(b, dir, nil, "project")
				b.Logf("%s: reusing the store built before in %s (catch-up %.1fs)", sz.name, dir, cu.wall.Seconds())
				if os.Getenv("UCL_BENCH_BUILD") != "" {
					// The build figure of today's binary: the first build
					// of a copy of the kept store's log.
					cu, load0 := firstBuildOfCopy(b, dir)
					reportBuild(b, sz.name, sz.n, cu, load0)
				}
			}
			raw, err := os.ReadFile(filepath.Join(dir, benchBuiltMark))
			if err != nil {
				b.Fatal(err)
			}
			in, err := strconv.ParseFloat(strings.TrimSpace(string(raw)), 64)
			if err != nil {
				b.Fatalf("%s: %v", benchBuiltMark, err)
			}
			ratio := func(path string) string {
				size, alloc := dirSize(path)
				return fmt.Sprintf("%.2f (allocated %.2f)", float64(size)/in, float64(alloc)/in)
			}
			parts := []string{"log " + ratio(filepath.Join(dir, "log"))}
			ents, _ := os.ReadDir(filepath.Join(dir, "projections"))
			for _, e := range ents {
				if e.IsDir() {
					parts = append(parts, e.Name()+" "+ratio(filepath.Join(dir, "projections", e.Name())))
				}
			}
			projB, projA := dirSize(filepath.Join(dir, "projections"))
			b.Logf("%s footprint, bytes per input byte: %s; projections %s = %d MB (allocated %d MB); whole store %s",
				sz.name, strings.Join(parts, ", "), ratio(filepath.Join(dir, "projections")), projB>>20, projA>>20, ratio(dir))
			b.ReportMetric(float64(projB)/in, "proj-bytes/input-byte")
			b.ReportMetric(float64(projA)/in, "proj-alloc/input-byte")

			const q = "when did she go to the support group"
			cmds := []struct {
				name string
				args []string
			}{
				{"query-bm25", []string{"query", "--mode", "bm25", q}},
				{"query", []string{"query", q}},
				{"query-vector", []string{"query", "--mode", "vector", q}},
				{"session-list", []string{"session", "list"}},
				{"status", []string{"status"}},
				{"project-status", []string{"project", "status"}},
			}
			if sz.corpus == corpusWords100 {
				// The LoCoMo question matches nothing in 100 words; these
				// three each match about a third of the chunks.
				cmds = append(cmds, struct {
					name string
					args []string
				}{"query-bm25-3", []string{"query", "--mode", "bm25", "cello rosin practice"}}, struct {
					name string
					args []string
				}{"query-3", []string{"query", "cello rosin practice"}})
			}
			b.Logf("%s: load average %s (2 cores here; wall times grow with it, CPU times much less)", sz.name, loadAvg())
			for _, c := range cmds {
				var runs []procRun
				for i := 0; i < 5; i++ {
					runs = append(runs, runProc(b, dir, nil, c.args...))
				}
				sort.Slice(runs, func(i, j int) bool { return runs[i].wall < runs[j].wall })
				var rss int64
				for _, r := range runs {
					rss = max(rss, r.rss)
				}
				med := runs[len(runs)/2]
				b.Logf("%s ucl %-12s p50 %4.0f ms (min %4.0f, max %4.0f; CPU %4.0f ms), peak RSS %4.0f MB",
					sz.name, c.name, float64(med.wall.Microseconds())/1e3, float64(runs[0].wall.Microseconds())/1e3,
					float64(runs[len(runs)-1].wall.Microseconds())/1e3, float64(med.cpu.Microseconds())/1e3, float64(rss)/1e6)
				b.ReportMetric(float64(med.wall.Microseconds())/1e3, c.name+"-ms")
				b.ReportMetric(float64(med.cpu.Microseconds())/1e3, c.name+"-cpu-ms")
				b.ReportMetric(float64(rss)/1e6, c.name+"-MB")
				if c.name == "query-vector" && sz.corpus != "" {
					benchSummary(b, "one `ucl query --mode vector` process, %s events | CPU %.0f ms (median of 5 processes), peak RSS %.0f MB (their highest) | — | target ≤ 100 MB",
						benchSizeName(sz.n), float64(med.cpu.Microseconds())/1e3, float64(rss)/1e6)
				}
				if c.name == "project-status" && sz.corpus != "" {
					benchSummary(b, "`ucl project status`, %s events | %.0f ms wall, CPU %.0f ms (medians of 5 processes), peak RSS %.0f MB | — | target ≤ 100 ms at 1M",
						benchSizeName(sz.n), float64(med.wall.Microseconds())/1e3, float64(med.cpu.Microseconds())/1e3, float64(rss)/1e6)
				}
			}
			if fts5 := os.Getenv("UCL_BENCH_FTS5"); fts5 != "" && sz.corpus == corpusLoCoMo {
				fts5Beside(b, fts5, dir, sz.n, sz.content, q)
			}
		})
	}
}

// benchBuiltMark is written into a bench store once it is built (its
// content is the input's size in bytes), so a kept store is reused.
const benchBuiltMark = "bench-built"

// benchStoreDir returns the directory of a bench store and whether it is
// built already: under UCL_BENCH_1M_DIR for the 1M stores (kept between
// runs: building one takes 10-50 minutes here), else a temporary one.
func benchStoreDir(b *testing.B, n int, corpus string) (string, bool) {
	keep := os.Getenv("UCL_BENCH_1M_DIR")
	if keep == "" || corpus == "" {
		return filepath.Join(b.TempDir(), "store"), false
	}
	dir := filepath.Join(keep, fmt.Sprintf("events%d-%s", n, corpus))
	if _, err := os.Stat(filepath.Join(dir, benchBuiltMark)); err == nil {
		return dir, true
	}
	if err := os.RemoveAll(dir); err != nil { // a build that did not finish
		b.Fatal(err)
	}
	return dir, false
}

// benchCount reads an event count such as 100K or 2M.
func benchCount(s string) (int, error) {
	digits, mult := s, 1
	switch {
	case strings.HasSuffix(s, "K"):
		digits, mult = strings.TrimSuffix(s, "K"), 1_000
	case strings.HasSuffix(s, "M"):
		digits, mult = strings.TrimSuffix(s, "M"), 1_000_000
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("size %q: want a count such as 100K or 2M", s)
	}
	return n * mult, nil
}

// bench1MCorpora is UCL_BENCH_CORPUS, a comma-separated list: both by
// default.
func bench1MCorpora() string {
	if c := os.Getenv("UCL_BENCH_CORPUS"); c != "" {
		return c
	}
	return corpusLoCoMo + "," + corpusWords100
}

// loadAvg is the 1, 5 and 15 minute load averages, or "unknown".
func loadAvg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(raw)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

// TestWriteBenchTurns writes the benchmark's turns to UCL_BENCH_WRITE (a
// helper for measuring by hand; skipped otherwise).
func TestWriteBenchTurns(t *testing.T) {
	t.Parallel()
	path := os.Getenv("UCL_BENCH_WRITE")
	if path == "" {
		t.Skip("UCL_BENCH_WRITE not set")
	}
	n, _ := strconv.Atoi(os.Getenv("UCL_BENCH_N"))
	c, _ := strconv.Atoi(os.Getenv("UCL_BENCH_CONTENT"))
	turns := benchTurns(n, c)
	if c > 0 && os.Getenv("UCL_BENCH_CORPUS") == corpusLoCoMo {
		if turns = locomoBenchTurns(n, c); turns == nil {
			t.Fatal("UCL_BENCH_CORPUS=locomo: LoCoMo data not found (UCL_BENCH_LOCOMO)")
		}
	}
	if err := os.WriteFile(path, turns, 0o600); err != nil {
		t.Fatal(err)
	}
}
