// Command peers measures ucl's log beside its peers, etcd's WAL (the
// write-ahead log of etcd 3.7, go.etcd.io/etcd/server/v3/storage/wal) and
// SQLite (modernc.org/sqlite, WAL mode, synchronous=FULL), in one run on
// one disk, alternating rounds, and prints each figure of DESIGN.md §10
// that names a peer with the ratio ucl ÷ peer as median [min–max] over the
// rounds; then the full-text build of ucl's fts projection beside SQLite
// FTS5 (fts.go). With -summary each figure is also appended to a file as
// a markdown table row, where make bench-1m gathers issue 26's table. It is a separate module so the product depends on
// neither; `make bench-peers` runs it.
//
//	go run . -rounds 3 -replay 200000 -paired 300 -fts 100000,1000000 -ftsquery 1000000 -summary FILE   (make bench-1m)
//
// Workloads (512-byte contents, DESIGN.md §10):
//
//   - batches of 256, durable: ucl AppendBatch (group durability: one
//     fsync a batch) vs etcd Save of 256 entries (one fsync);
//   - one writer, durable: ucl Append (sync durability) vs etcd Save of one
//     entry, each fsynced;
//   - replay: ucl Events over the whole log (CRC, hash chain, SHA-256 and
//     ChaCha20-Poly1305 decrypt of every event, both cores) vs etcd ReadAll (CRC
//     chain, decode) vs SQLite reading every row in seq order;
//   - SQLite: one transaction per batch (or per event for the single
//     writer) of INSERTs into a (seq INTEGER PRIMARY KEY, data BLOB) table;
//   - with -paired N, the durable appends again, op by op in lockstep
//     (paired.go): on a shared disk the only fair comparison of fsync-bound
//     writes.
//
// ucl also pays per-event keys (log format 3: a data key per event derived
// from one batch key per request, wrapped under the vault key), encryption
// and the hash chain; etcd stores plaintext.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/log"
)

// ftsIDs is -ftsids: the chunk ids of the full-text build (uclFTS).
var ftsIDs string

var content512 = strings.Repeat("memory log benchmark text ", 20)[:512]

func main() {
	rounds := flag.Int("rounds", 5, "alternating rounds per figure")
	batches := flag.Int("batches", 100, "batches of 256 per round")
	singles := flag.Int("singles", 300, "single durable appends per round")
	replay := flag.Int("replay", 20000, "events replayed per round")
	ftsList := flag.String("fts", "20000", "documents of the full-text build figure, a comma-separated list of counts, one figure each (0: skip it)")
	logFigs := flag.Bool("log", true, "run the log figures (appends, replay)")
	ftsQ := flag.Int("ftsquery", 0, "documents of the full-text query figure (0: skip it); its indexes are built once into -dir and reused")
	child := flag.String("child", "", "internal: run one full-text build (ucl, fts5) or query (uclq, fts5q) in this process")
	q := flag.String("q", "", "internal: the query of a query child")
	dir := flag.String("dir", "", "directory for the logs (default: a temp dir; put it on the disk you measure)")
	paired := flag.Int("paired", 0, "writes of the lockstep durable-append figures, 1 writer and batches of 256 (0: skip them)")
	uclProfile := flag.String("uclprofile", "", "write a CPU profile of ucl's timed workloads of figure i (all rounds) to this path + \".i\"")
	flag.StringVar(&ftsIDs, "ftsids", cmp.Or(os.Getenv("PEERS_FTS_IDS"), "random"), "chunk ids of the full-text build figure: random (as a store's) or counting (1, 2, ...; the figure of earlier stops); default $PEERS_FTS_IDS, else random")
	summary := flag.String("summary", "", "append each figure to this file as a markdown table row (figure | ucl | peer | ratio), as make bench-1m does")
	flag.Parse()
	if ftsIDs != "random" && ftsIDs != "counting" {
		fail(fmt.Errorf("-ftsids %q: want random or counting", ftsIDs))
	}
	summaryPath = *summary
	ftsSizes, err := counts(*ftsList)
	if err != nil {
		fail(fmt.Errorf("-fts: %w", err))
	}
	ftsN := &ftsSizes[0] // a child builds one index
	if *child != "" {
		defer writePeak()
		if p := os.Getenv("PEERS_CPUPROFILE"); p != "" {
			f, err := os.Create(p)
			if err != nil {
				fail(err)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				fail(err)
			}
			defer pprof.StopCPUProfile()
		}
		if strings.HasSuffix(*child, "q") {
			queryChild(*child, *dir, *q)
			return
		}
		runChild(*child, *dir, *ftsN)
		return
	}
	root := *dir
	if root == "" {
		var err error
		if root, err = os.MkdirTemp("", "ucl-peers-*"); err != nil {
			fail(err)
		}
		defer os.RemoveAll(root)
	}
	kr, err := crypto.NewKeyring()
	if err != nil {
		fail(err)
	}
	figs := []figure{
		{name: "durable append, batches of 256", ucl: func(d string) result { return uclBatches(d, kr, *batches) },
			peers: []func(string) result{func(d string) result { return etcdBatches(d, *batches) }, func(d string) result { return sqliteBatches(d, *batches) }}},
		{name: "durable append, 1 writer", ucl: func(d string) result { return uclSingles(d, kr, *singles) },
			peers: []func(string) result{func(d string) result { return etcdSingles(d, *singles) }, func(d string) result { return sqliteSingles(d, *singles) }}},
		{name: fmt.Sprintf("replay %d (verify + decrypt)", *replay), ucl: func(d string) result { return uclReplay(d, kr, *replay) },
			peers: []func(string) result{func(d string) result { return etcdReplay(d, *replay) }, func(d string) result { return sqliteReplay(d, *replay) }}},
	}
	if !*logFigs {
		figs = nil
	} else {
		fmt.Printf("%-34s %9s %9s %9s  %-22s %-22s %8s %8s %8s\n", "figure (events/s)", "ucl", "etcd WAL", "SQLite", "ucl/etcd med [min-max]", "ucl/SQLite med [min-max]", "ucl cpu", "etcd cpu", "SQL cpu")
	}
	for fi, f := range figs {
		var us []float64
		var uc []float64
		ps := make([][]float64, len(f.peers))
		rs := make([][]float64, len(f.peers))
		pc := make([][]float64, len(f.peers))
		for r := 0; r < *rounds; r++ {
			u := profiled(*uclProfile, fi, func() result { return f.ucl(filepath.Join(root, fmt.Sprintf("ucl-%d", r))) })
			us, uc = append(us, u.rate), append(uc, u.cpuPerEvent)
			for k, peer := range f.peers {
				p := peer(filepath.Join(root, fmt.Sprintf("peer%d-%d", k, r)))
				ps[k], rs[k], pc[k] = append(ps[k], p.rate), append(rs[k], u.rate/p.rate), append(pc[k], p.cpuPerEvent)
			}
		}
		fmt.Printf("%-34s %9.0f %9.0f %9.0f  %5.2f [%.2f-%.2f]%6s %5.2f [%.2f-%.2f]%6s %5.1f µs %5.1f µs %5.1f µs\n", f.name, median(us), median(ps[0]), median(ps[1]),
			median(rs[0]), minOf(rs[0]), maxOf(rs[0]), "", median(rs[1]), minOf(rs[1]), maxOf(rs[1]), "", median(uc), median(pc[0]), median(pc[1]))
		summaryRow("%s | %.0f events/s, CPU %.2f µs an event | etcd WAL %.0f events/s, %.2f µs; SQLite %.0f events/s, %.2f µs | rate ÷ etcd %.2f [%.2f–%.2f], ÷ SQLite %.2f [%.2f–%.2f]; CPU ÷ etcd %.2f (%d rounds)",
			f.name, median(us), median(uc), median(ps[0]), median(pc[0]), median(ps[1]), median(pc[1]),
			median(rs[0]), minOf(rs[0]), maxOf(rs[0]), median(rs[1]), minOf(rs[1]), maxOf(rs[1]), median(uc)/median(pc[0]), *rounds)
	}
	if len(figs) > 0 {
		fmt.Println("(cpu: the process's user+system CPU time per event over the timed part; on a shared machine the rates measure the queue for a core and the disk, the CPU what the work costs)")
	}
	if *paired > 0 {
		pairedFigure(root, kr, *paired, 1)
		pairedFigure(root, kr, max(1, *paired/10), 256)
	}
	for _, n := range ftsSizes {
		if n > 0 {
			ftsFigure(root, *rounds, n)
		}
	}
	if *ftsQ > 0 {
		ftsQueryFigure(root, *rounds, *ftsQ)
	}
}

// counts reads a comma-separated list of counts.
func counts(list string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q: want counts such as 100000,1000000", list)
		}
		out = append(out, n)
	}
	return out, nil
}

// summaryPath is -summary: the file summaryRow appends to.
var summaryPath string

// summaryRow appends one row to the -summary file, when there is one;
// format holds the row's cells separated by " | ".
func summaryRow(format string, args ...any) {
	if summaryPath == "" {
		return
	}
	f, err := os.OpenFile(summaryPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fail(err)
	}
	if _, err := fmt.Fprintf(f, "| "+format+" |\n", args...); err != nil {
		fail(err)
	}
	if err := f.Close(); err != nil {
		fail(err)
	}
}

// profiled runs fn, under a CPU profile appended to path.i when path is
// set (one file per figure; pprof merges the rounds' files).
func profiled(path string, i int, fn func() result) result {
	if path == "" {
		return fn()
	}
	f, err := os.CreateTemp(filepath.Dir(path), fmt.Sprintf("%s.%d.*", filepath.Base(path), i))
	if err != nil {
		fail(err)
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		fail(err)
	}
	defer pprof.StopCPUProfile()
	return fn()
}

// result is one timed workload: events per second and CPU µs per event.
type result struct {
	rate, cpuPerEvent float64
}

// timer times a workload's measured part, wall and CPU.
type timer struct {
	t0  time.Time
	cpu time.Duration
}

func start() timer { return timer{time.Now(), cpuTime()} }

func (t timer) done(n int) result {
	el, cpu := time.Since(t.t0), cpuTime()-t.cpu
	return result{float64(n) / el.Seconds(), float64(cpu.Nanoseconds()) / 1000 / float64(n)}
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type figure struct {
	name  string
	ucl   func(dir string) result
	peers []func(dir string) result // etcd WAL, SQLite
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "peers:", err)
	os.Exit(1)
}

func entries(n int) []log.Entry {
	es := make([]log.Entry, n)
	for i := range es {
		es[i] = log.Entry{Body: &log.Store{Kind: log.KindConversation, Session: "bench-1", Role: "user", Content: content512}}
	}
	return es
}

func openUCL(dir string, kr *crypto.Keyring, d log.Durability) *log.Log {
	os.RemoveAll(dir)
	l, err := log.Open(dir, log.Options{Keys: kr, Durability: d})
	if err != nil {
		fail(err)
	}
	return l
}

func uclBatches(dir string, kr *crypto.Keyring, batches int) result {
	l := openUCL(dir, kr, log.Group)
	defer os.RemoveAll(dir)
	defer l.Close()
	es := entries(256)
	t := start()
	for i := 0; i < batches; i++ {
		if _, err := l.AppendBatch(context.Background(), es); err != nil {
			fail(err)
		}
	}
	return t.done(batches * 256)
}

func uclSingles(dir string, kr *crypto.Keyring, n int) result {
	l := openUCL(dir, kr, log.Sync)
	defer os.RemoveAll(dir)
	defer l.Close()
	e := entries(1)[0]
	t := start()
	for i := 0; i < n; i++ {
		if _, err := l.Append(context.Background(), e); err != nil {
			fail(err)
		}
	}
	return t.done(n)
}

func uclReplay(dir string, kr *crypto.Keyring, n int) result {
	l := openUCL(dir, kr, log.None)
	defer os.RemoveAll(dir)
	defer l.Close()
	es := entries(1000)
	for i := 0; i < n; i += len(es) {
		if _, err := l.AppendBatch(context.Background(), es[:min(len(es), n-i)]); err != nil {
			fail(err)
		}
	}
	got := 0
	t := start()
	if err := l.Events(context.Background(), 0, 0, func(*log.Event) error { got++; return nil }); err != nil {
		fail(err)
	}
	res := t.done(n)
	if got != n {
		fail(fmt.Errorf("ucl replay: %d events, want %d", got, n))
	}
	return res
}

func createEtcd(dir string) *wal.WAL {
	os.RemoveAll(dir)
	w, err := wal.Create(zap.NewNop(), dir, nil)
	if err != nil {
		fail(err)
	}
	return w
}

func etcdEntries(first uint64, n int) []*raftpb.Entry {
	es := make([]*raftpb.Entry, n)
	for i := range es {
		es[i] = &raftpb.Entry{Term: proto.Uint64(1), Index: proto.Uint64(first + uint64(i)), Type: raftpb.EntryType_EntryNormal.Enum(), Data: []byte(content512)}
	}
	return es
}

// etcdSave saves es with the hard state committing them: Save fsyncs when
// it writes entries.
func etcdSave(w *wal.WAL, es []*raftpb.Entry) {
	last := es[len(es)-1].GetIndex()
	if err := w.Save(&raftpb.HardState{Term: proto.Uint64(1), Commit: proto.Uint64(last)}, es); err != nil {
		fail(err)
	}
}

func etcdBatches(dir string, batches int) result {
	w := createEtcd(dir)
	defer os.RemoveAll(dir)
	defer w.Close()
	t := start()
	for i := 0; i < batches; i++ {
		etcdSave(w, etcdEntries(uint64(i*256+1), 256))
	}
	return t.done(batches * 256)
}

func etcdSingles(dir string, n int) result {
	w := createEtcd(dir)
	defer os.RemoveAll(dir)
	defer w.Close()
	t := start()
	for i := 0; i < n; i++ {
		etcdSave(w, etcdEntries(uint64(i+1), 1))
	}
	return t.done(n)
}

func etcdReplay(dir string, n int) result {
	w := createEtcd(dir)
	defer os.RemoveAll(dir)
	for i := 0; i < n; i += 1000 {
		etcdSave(w, etcdEntries(uint64(i+1), min(1000, n-i)))
	}
	w.Close()
	t := start()
	r, err := wal.Open(zap.NewNop(), dir, &walpb.Snapshot{})
	if err != nil {
		fail(err)
	}
	defer r.Close()
	_, _, es, err := r.ReadAll()
	if err != nil {
		fail(err)
	}
	res := t.done(n)
	if len(es) != n {
		fail(fmt.Errorf("etcd replay: %d entries, want %d", len(es), n))
	}
	return res
}

func median(x []float64) float64 {
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func minOf(x []float64) float64 {
	m := x[0]
	for _, v := range x {
		m = min(m, v)
	}
	return m
}

func maxOf(x []float64) float64 {
	m := x[0]
	for _, v := range x {
		m = max(m, v)
	}
	return m
}
