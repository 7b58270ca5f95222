package projections_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
	"github.com/unlimitedcontext/ucl/projections/timelines"
)

// recorder is an in-memory projection that remembers which seqs it was
// given and what it committed. Its "disk" (committed) survives reopen by
// reusing the struct.
type recorder struct {
	name      string
	version   int
	stored    int // StoredVersion; 0 means not reported
	applied   []uint64
	commits   []uint64
	cp        projections.Checkpoint
	state     [32]byte // running hash of applied (seq, hash)
	committed [32]byte
	resets    int
	failAt    uint64
}

func (r *recorder) Name() string { return r.name }
func (r *recorder) Version() int {
	if r.version == 0 {
		return 1
	}
	return r.version
}
func (r *recorder) StoredVersion() (int, error) { return r.stored, nil }
func (r *recorder) Checkpoint() (projections.Checkpoint, error) {
	return r.cp, nil
}
func (r *recorder) Apply(ev *log.Event) error {
	if ev.Seq == r.failAt {
		return errors.New("boom")
	}
	r.applied = append(r.applied, ev.Seq)
	r.state = sha256.Sum256(append(r.state[:], ev.Hash[:]...))
	return nil
}
func (r *recorder) Commit(cp projections.Checkpoint) error {
	r.cp = cp
	r.committed = r.state
	r.commits = append(r.commits, cp.Seq)
	return nil
}
func (r *recorder) Digest() ([32]byte, error) { return r.state, nil }
func (r *recorder) Reset() error {
	r.resets++
	r.cp = projections.Checkpoint{}
	r.state, r.committed = [32]byte{}, [32]byte{}
	r.stored = r.Version()
	return nil
}
func (r *recorder) Close() error { return nil }

// reopen simulates a restart: uncommitted state is lost.
func (r *recorder) reopen() {
	r.state = r.committed
	r.applied, r.commits = nil, nil
}

// countingSource counts Events calls and delivered events.
type countingSource struct {
	projections.Source
	calls, delivered int
	skip             uint64 // a seq to drop (to fake a gap)
}

func (c *countingSource) Events(ctx context.Context, from, to uint64, fn func(*log.Event) error) error {
	c.calls++
	return c.Source.Events(ctx, from, to, func(ev *log.Event) error {
		if ev.Seq == c.skip {
			return nil
		}
		c.delivered++
		return fn(ev)
	})
}

func newProjector(t *testing.T, src projections.Source, opt projections.Options, ps ...projections.Projection) *projections.Projector {
	t.Helper()
	pr, err := projections.NewProjector(src, ps, opt)
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

func openTL(t *testing.T, dir string, events projections.EventReader) *timelines.Timelines {
	t.Helper()
	tl, err := timelines.Open(dir, events)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// oneShot is the timelines digest of evs applied in one pass.
func oneShot(t *testing.T, evs []*log.Event) [32]byte {
	t.Helper()
	tl := openTL(t, t.TempDir(), projtest.NewMemSource(evs))
	defer tl.Close()
	for _, ev := range evs {
		if err := tl.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	d, err := tl.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func digestOf(t *testing.T, p projections.Projection) [32]byte {
	t.Helper()
	d, err := p.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestCatchUpIncrementalAndResume(t *testing.T) {
	evs := projtest.Events(3, 1200)
	src := projtest.NewMemSource(evs[:1000])
	cs := &countingSource{Source: src}
	dir := t.TempDir()
	tl := openTL(t, dir, src)
	rec := &recorder{name: "rec"}
	pr := newProjector(t, cs, projections.Options{CommitEvery: 100}, tl, rec)

	var last, total uint64
	err := pr.CatchUp(t.Context(), func(d, n uint64) {
		if d < last {
			t.Errorf("progress went back: %d after %d", d, last)
		}
		last, total = d, n
	})
	if err != nil {
		t.Fatal(err)
	}
	if last != 1000 || total != 1000 {
		t.Fatalf("final progress %d/%d, want 1000/1000", last, total)
	}
	if cs.calls != 1 || cs.delivered != 1000 {
		t.Fatalf("read log %d times, %d events; want once, 1000", cs.calls, cs.delivered)
	}
	if len(rec.commits) != 10 || rec.commits[9] != 1000 {
		t.Fatalf("commits at %v, want every 100 up to 1000", rec.commits)
	}
	if got, want := digestOf(t, tl), oneShot(t, evs[:1000]); got != want {
		t.Fatalf("timelines digest %x, want one-pass %x", got, want)
	}

	// Grow the log: only the new events are read and applied.
	src.Set(evs)
	rec.applied = nil
	cs.calls, cs.delivered = 0, 0
	if err := pr.CatchUp(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if cs.calls != 1 || cs.delivered != 200 || len(rec.applied) != 200 || rec.applied[0] != 1001 {
		t.Fatalf("incremental: %d reads, %d events, recorder got %d from %v", cs.calls, cs.delivered, len(rec.applied), rec.applied[:1])
	}
	if got, want := digestOf(t, tl), oneShot(t, evs); got != want {
		t.Fatalf("incremental digest %x, want one-pass %x", got, want)
	}

	// Restart: timelines reopened from disk, nothing to do.
	if err := pr.Close(); err != nil {
		t.Fatal(err)
	}
	tl = openTL(t, dir, src)
	rec.reopen()
	cs.calls, cs.delivered = 0, 0
	pr = newProjector(t, cs, projections.Options{}, tl, rec)
	defer pr.Close()
	if err := pr.CatchUp(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if cs.delivered != 0 || len(rec.applied) != 0 {
		t.Fatalf("after restart at head: %d events read, %d applied", cs.delivered, len(rec.applied))
	}
	if got, want := digestOf(t, tl), oneShot(t, evs); got != want {
		t.Fatalf("digest after restart %x, want %x", got, want)
	}
}

func TestCatchUpReadsOnceFromLowestStart(t *testing.T) {
	evs := projtest.Events(4, 600)
	src := projtest.NewMemSource(evs)
	a := &recorder{name: "a"}
	b := &recorder{name: "b", cp: projections.Checkpoint{Seq: 400, Hash: evs[399].Hash}}
	c := &recorder{name: "c", cp: projections.Checkpoint{Seq: 400, Hash: evs[399].Hash}}
	cs := &countingSource{Source: src}
	pr := newProjector(t, cs, projections.Options{}, b, a, c)
	if err := pr.CatchUp(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if cs.calls != 1 || cs.delivered != 600 {
		t.Fatalf("%d reads of %d events, want 1 of 600", cs.calls, cs.delivered)
	}
	if len(a.applied) != 600 || len(b.applied) != 200 || b.applied[0] != 401 || len(c.applied) != 200 {
		t.Fatalf("applied a=%d b=%d c=%d", len(a.applied), len(b.applied), len(c.applied))
	}
	for i, r := range []*recorder{a, b, c} {
		wantResets := 0
		if i == 0 {
			wantResets = 1 // starting from 1 always starts from empty
		}
		if r.cp.Seq != 600 || r.cp.Hash != evs[599].Hash || r.resets != wantResets {
			t.Fatalf("%s: cp %d, resets %d", r.name, r.cp.Seq, r.resets)
		}
	}
}

func TestCatchUpRebuildsOffChain(t *testing.T) {
	evs := projtest.Events(5, 300)
	other := projtest.Events(6, 300)
	for _, tc := range []struct {
		name string
		cp   projections.Checkpoint
		rec  recorder
	}{
		{"hash mismatch", projections.Checkpoint{Seq: 200, Hash: other[199].Hash}, recorder{}},
		{"ahead of log", projections.Checkpoint{Seq: 301, Hash: other[299].Hash}, recorder{}},
		{"zero seq with hash", projections.Checkpoint{Hash: other[0].Hash}, recorder{}},
		{"version change", projections.Checkpoint{Seq: 200, Hash: evs[199].Hash}, recorder{version: 2, stored: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.rec
			r.name, r.cp = "r", tc.cp
			pr := newProjector(t, projtest.NewMemSource(evs), projections.Options{}, &r)
			if err := pr.CatchUp(t.Context(), nil); err != nil {
				t.Fatal(err)
			}
			if r.resets != 1 || len(r.applied) != 300 || r.applied[0] != 1 || r.cp.Seq != 300 {
				t.Fatalf("resets %d, applied %d from %v, cp %d", r.resets, len(r.applied), r.applied[:1], r.cp.Seq)
			}
		})
	}

	// With a real projection: a store that followed another chain ends
	// at the digest of the new chain.
	dir := t.TempDir()
	src := projtest.NewMemSource(other)
	tl := openTL(t, dir, src)
	pr := newProjector(t, src, projections.Options{}, tl)
	defer pr.Close()
	if err := pr.CatchUp(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	src.Set(evs)
	st, err := pr.Status()
	if err != nil {
		t.Fatal(err)
	}
	if st[0].OnChain || st[0].Behind != 300 {
		t.Fatalf("status after fork = %+v, want off chain, 300 behind", st[0])
	}
	if err := pr.CatchUp(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if got, want := digestOf(t, tl), oneShot(t, evs); got != want {
		t.Fatalf("digest after fork %x, want %x", got, want)
	}
}

func TestApplyErrorAndCancel(t *testing.T) {
	evs := projtest.Events(8, 500)
	src := projtest.NewMemSource(evs)
	bad := &recorder{name: "bad", failAt: 257}
	good := &recorder{name: "good"}
	pr := newProjector(t, src, projections.Options{CommitEvery: 100}, good, bad)
	err := pr.CatchUp(t.Context(), nil)
	var ae *projections.ApplyError
	if !errors.As(err, &ae) || ae.Projection != "bad" || ae.Seq != 257 {
		t.Fatalf("error %v, want ApplyError for bad at 257", err)
	}
	if bad.cp.Seq != 200 {
		t.Fatalf("failing projection committed at %d, want its last commit 200", bad.cp.Seq)
	}
	// Projections run concurrently: the good one goes on independently until
	// the failure cancels the read, and commits exactly what it applied.
	if good.cp.Seq < 256 || good.cp.Hash != evs[good.cp.Seq-1].Hash {
		t.Fatalf("good projection committed at %d, want at least 256 with a matching hash", good.cp.Seq)
	}

	// Cancel after the first commit: progress so far is committed.
	ctx, cancel := context.WithCancel(t.Context())
	r := &recorder{name: "r"}
	pr = newProjector(t, src, projections.Options{CommitEvery: 100}, r)
	err = pr.CatchUp(ctx, func(done, _ uint64) {
		if done >= 100 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if r.cp.Seq < 100 || r.cp.Seq >= 500 || r.cp.Hash != evs[r.cp.Seq-1].Hash {
		t.Fatalf("after cancel cp %d", r.cp.Seq)
	}

	// A source that skips an event is caught.
	gap := &countingSource{Source: src, skip: 10}
	pr = newProjector(t, gap, projections.Options{}, &recorder{name: "g"})
	if err := pr.CatchUp(t.Context(), nil); !errors.Is(err, projections.ErrSourceGap) {
		t.Fatalf("gap: %v, want ErrSourceGap", err)
	}
}

func TestRebuildStatusDigests(t *testing.T) {
	evs := projtest.Events(9, 400)
	src := projtest.NewMemSource(evs)
	tl := openTL(t, t.TempDir(), src)
	rec := &recorder{name: "rec"}
	pr := newProjector(t, src, projections.Options{}, tl, rec)
	defer pr.Close()
	if err := pr.CatchUp(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	before := digestOf(t, tl)
	rec.resets = 0
	if err := pr.Rebuild(t.Context(), []string{"rec", "nope"}, nil); !errors.Is(err, projections.ErrUnknownProjection) {
		t.Fatalf("rebuild unknown: %v", err)
	}
	if rec.resets != 0 {
		t.Fatal("an unknown name still reset something")
	}
	rec.applied = nil
	if err := pr.Rebuild(t.Context(), []string{"rec"}, nil); err != nil {
		t.Fatal(err)
	}
	if rec.resets != 1 || len(rec.applied) != 400 {
		t.Fatalf("rebuild rec: resets %d, applied %d", rec.resets, len(rec.applied))
	}
	if err := pr.Rebuild(t.Context(), nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := digestOf(t, tl); got != before {
		t.Fatalf("digest after full rebuild %x, before %x", got, before)
	}

	st, err := pr.Status()
	if err != nil {
		t.Fatal(err)
	}
	ds, err := pr.Digests()
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 2 || st[0].Name != timelines.Name || st[1].Name != "rec" {
		t.Fatalf("status names %+v", st)
	}
	if s := st[0]; s.Checkpoint.Seq != 400 || !s.OnChain || s.Behind != 0 || s.Size <= 0 || s.Version != timelines.Version || s.StoredVersion != timelines.Version || s.Digest != fmt.Sprintf("%x", before) {
		t.Fatalf("timelines status %+v", s)
	}
	if st[1].Size != -1 {
		t.Fatalf("size of a projection without Size() = %d, want -1", st[1].Size)
	}
	if ds[timelines.Name] != st[0].Digest || ds["rec"] != st[1].Digest || len(ds) != 2 {
		t.Fatalf("digests %v vs status", ds)
	}
	if _, err := projections.NewProjector(src, []projections.Projection{rec, &recorder{name: "rec"}}, projections.Options{}); !errors.Is(err, projections.ErrDuplicateName) {
		t.Fatalf("duplicate names: %v", err)
	}
}

func TestVerify(t *testing.T) {
	evs := projtest.Events(10, 400)
	src := projtest.NewMemSource(evs[:300])
	tl := openTL(t, t.TempDir(), src)
	pr := newProjector(t, src, projections.Options{TempDir: t.TempDir()}, tl)
	defer pr.Close()
	if err := pr.CatchUp(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	build := func(dir string) ([]projections.Projection, error) {
		tl, err := timelines.Open(dir, src)
		if err != nil {
			return nil, err
		}
		return []projections.Projection{tl}, nil
	}
	src.Set(evs) // verify catches the live side up first
	mm, err := pr.Verify(t.Context(), build, nil)
	if err != nil || len(mm) != 0 {
		t.Fatalf("verify = %v, %v; want no mismatch", mm, err)
	}
	if cp, _ := tl.Checkpoint(); cp.Seq != 400 {
		t.Fatalf("live not caught up: %d", cp.Seq)
	}
	// Damage the live state behind the projector's back.
	extra, err := projtest.Chain(&log.Store{ChunkID: "intruder", Kind: log.KindKnowledge, Content: "Not in the log."})
	if err != nil {
		t.Fatal(err)
	}
	if err := tl.Apply(extra[0]); err != nil {
		t.Fatal(err)
	}
	if err := tl.Commit(projections.Checkpoint{Seq: 400, Hash: evs[399].Hash}); err != nil {
		t.Fatal(err)
	}
	mm, err = pr.Verify(t.Context(), build, nil)
	if err != nil || len(mm) != 1 || mm[0].Name != timelines.Name || mm[0].Live == mm[0].Rebuilt || mm[0].Rebuilt == "" {
		t.Fatalf("verify after damage = %+v, %v; want one timelines mismatch", mm, err)
	}
}

func TestTombstoneMatches(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ts      log.Tombstone
		id, ses string
		tm      int64
		want    bool
	}{
		{"listed id", log.Tombstone{Chunks: []string{"x", "y"}}, "y", "S", 5, true},
		{"unlisted id", log.Tombstone{Chunks: []string{"x"}}, "y", "S", 5, false},
		{"session", log.Tombstone{Session: "S"}, "y", "S", 5, true},
		{"other session", log.Tombstone{Session: "S"}, "y", "T", 5, false},
		{"range start inclusive", log.Tombstone{From: 5, To: 10}, "y", "", 5, true},
		{"range end exclusive", log.Tombstone{From: 5, To: 10}, "y", "", 10, false},
		{"range from zero", log.Tombstone{To: 10}, "y", "", -3, false},
		{"session and range", log.Tombstone{Session: "S", From: 5, To: 10}, "y", "S", 7, true},
		{"session and range, outside range", log.Tombstone{Session: "S", From: 5, To: 10}, "y", "S", 11, false},
		{"session and range, other session", log.Tombstone{Session: "S", From: 5, To: 10}, "y", "T", 7, false},
		{"ids are a union", log.Tombstone{Chunks: []string{"y"}, Session: "S"}, "y", "T", 7, true},
		{"empty tombstone", log.Tombstone{}, "y", "", 0, false},
	} {
		if got := projections.TombstoneMatches(&tc.ts, tc.id, tc.ses, tc.tm); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestRealLog runs the projector over a real encrypted log and checks it
// ends where the same events applied directly end.
func TestRealLog(t *testing.T) {
	kr, err := crypto.NewKeyring()
	if err != nil {
		t.Fatal(err)
	}
	l, err := log.Open(t.TempDir(), log.Options{Keys: kr})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var entries []log.Entry
	for _, ev := range projtest.Events(11, 400) {
		entries = append(entries, log.Entry{ID: ev.ID, Body: ev.Body})
	}
	if _, err := l.AppendBatch(t.Context(), entries[:250]); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tl := openTL(t, dir, l)
	rec := &recorder{name: "rec"}
	pr := newProjector(t, l, projections.Options{CommitEvery: 64}, tl, rec)
	if err := pr.CatchUp(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendBatch(t.Context(), entries[250:]); err != nil {
		t.Fatal(err)
	}
	rec.applied = nil
	if err := pr.CatchUp(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	head, headHash := l.Head()
	if cp, _ := tl.Checkpoint(); cp.Seq != head || cp.Hash != headHash || head != 400 {
		t.Fatalf("checkpoint %d/%s, head %d/%s", cp.Seq, cp.Hash, head, headHash)
	}
	var read []*log.Event
	if err := l.Events(t.Context(), 1, 0, func(ev *log.Event) error { read = append(read, ev); return nil }); err != nil {
		t.Fatal(err)
	}
	if got, want := digestOf(t, tl), oneShot(t, read); got != want {
		t.Fatalf("digest over real log %x, direct %x", got, want)
	}
	if len(rec.applied) != 150 || rec.applied[0] != 251 {
		t.Fatalf("second catch-up applied %d events from %v (resets %d, commits %v)", len(rec.applied), rec.applied[:1], rec.resets, rec.commits)
	}
	mm, err := pr.Verify(t.Context(), func(dir string) ([]projections.Projection, error) {
		tl, err := timelines.Open(dir, l)
		return []projections.Projection{tl}, err
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// rec has no rebuilt twin: reported as live-only.
	if len(mm) != 1 || mm[0].Name != "rec" || mm[0].Rebuilt != "" {
		t.Fatalf("verify over real log = %+v", mm)
	}
	if err := pr.Close(); err != nil {
		t.Fatal(err)
	}
}

// limitProbe is a recorder that notes the process's memory limit while
// it applies events.
type limitProbe struct {
	recorder
	during int64
}

func (p *limitProbe) Apply(ev *log.Event) error {
	p.during = debug.SetMemoryLimit(-1)
	return p.recorder.Apply(ev)
}

// A bulk catch-up bounds the Go heap whoever runs it (an owner daemon's
// or a query's catch-up, not only `ucl project`, which sets its own
// limit), lifts the bound afterwards, and keeps a limit already set.
func TestBulkCatchUpBoundsHeap(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	prev := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	evs := projtest.StoreEvents(5, projections.CompactAfter)
	p := &limitProbe{recorder: recorder{name: "probe"}}
	pr := newProjector(t, projtest.NewMemSource(evs), projections.Options{}, p)
	if err := pr.CatchUp(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if p.during == math.MaxInt64 || p.during < projections.BulkMemHeadroom || p.during > 4*projections.BulkMemHeadroom {
		t.Fatalf("memory limit during a bulk catch-up: %d, want the live heap + %d", p.during, projections.BulkMemHeadroom)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("memory limit after the catch-up: %d, want none", got)
	}
	// A limit already there (GOMEMLIMIT, a program's own) is kept.
	debug.SetMemoryLimit(3 << 30)
	p2 := &limitProbe{recorder: recorder{name: "probe"}}
	pr2 := newProjector(t, projtest.NewMemSource(evs), projections.Options{}, p2)
	if err := pr2.CatchUp(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if p2.during != 3<<30 || debug.SetMemoryLimit(-1) != 3<<30 {
		t.Fatalf("a limit set before: %d during, %d after, want %d", p2.during, debug.SetMemoryLimit(-1), 3<<30)
	}
}

// turnProbe is a recorder whose commits note whether another projection
// was committing at the same time; the first projection's first commit
// waits until the other has applied its commit's worth of events (so,
// without turns, it would be committing too).
type turnProbe struct {
	recorder
	shared  *turnState
	first   bool
	applied int
}

type turnState struct {
	mu         sync.Mutex
	committing int
	compacting int
	compacted  int
	overlapped bool
	otherReady chan struct{}
	once       sync.Once
}

func (p *turnProbe) Apply(ev *log.Event) error {
	p.applied++
	if !p.first && p.applied == 100 {
		p.shared.once.Do(func() { close(p.shared.otherReady) })
	}
	return p.recorder.Apply(ev)
}

func (p *turnProbe) Commit(cp projections.Checkpoint) error {
	s := p.shared
	s.mu.Lock()
	s.committing++
	if s.committing > 1 || s.compacting > 0 {
		s.overlapped = true
	}
	s.mu.Unlock()
	if p.first && len(p.commits) == 0 {
		<-s.otherReady
		// Give the other projection every chance to start its commit.
		for i := 0; i < 200 && !p.sawOverlap(); i++ {
			time.Sleep(time.Millisecond)
		}
	}
	s.mu.Lock()
	s.committing--
	s.mu.Unlock()
	return p.recorder.Commit(cp)
}

// Compact waits for another projection's compaction to start (which
// it never does while this one runs, when compactions take turns).
func (p *turnProbe) Compact() error {
	s := p.shared
	s.mu.Lock()
	s.compacting++
	if s.compacting > 1 || s.committing > 0 {
		s.overlapped = true
	}
	s.mu.Unlock()
	for i := 0; i < 200 && !p.sawOverlap(); i++ {
		time.Sleep(time.Millisecond)
	}
	s.mu.Lock()
	s.compacting--
	s.compacted++
	s.mu.Unlock()
	return nil
}

func (p *turnProbe) sawOverlap() bool {
	p.shared.mu.Lock()
	defer p.shared.mu.Unlock()
	return p.shared.overlapped
}

// Projections commit one at a time during a catch-up (Options.Commits),
// at staggered points (so the slowest does not wait for the others' turns
// at every commit), and compact one at a time after it: a commit's memory
// grows with the projection, and five at once held five.
func TestCatchUpCommitsTakeTurns(t *testing.T) {
	evs := projtest.StoreEvents(6, projections.CompactAfter)
	s := &turnState{otherReady: make(chan struct{})}
	a := &turnProbe{recorder: recorder{name: "a"}, shared: s, first: true}
	b := &turnProbe{recorder: recorder{name: "b"}, shared: s}
	pr := newProjector(t, projtest.NewMemSource(evs), projections.Options{CommitEvery: 100}, a, b)
	if err := pr.CatchUp(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if s.overlapped {
		t.Fatal("two projections committed or compacted at the same time")
	}
	// Staggered: a commits half an interval before b, then every 100.
	n := projections.CompactAfter / 100
	if len(a.commits) != n+1 || len(b.commits) != n || a.commits[0] != 50 || a.commits[1] != 150 || b.commits[0] != 100 ||
		a.cp.Seq != uint64(len(evs)) || b.cp.Seq != uint64(len(evs)) || s.compacted != 2 {
		t.Fatalf("commits a %v, b %v; %d compacted", a.commits, b.commits, s.compacted)
	}
}

// slowProbe is a recorder whose last event waits (up to 30 s, for what
// takes milliseconds) until another projection has compacted.
type slowProbe struct {
	recorder
	last      uint64
	compacted chan struct{}
	sawIt     bool
}

func (p *slowProbe) Apply(ev *log.Event) error {
	if ev.Seq == p.last {
		select {
		case <-p.compacted:
			p.sawIt = true
		case <-time.After(30 * time.Second):
		}
	}
	return p.recorder.Apply(ev)
}

// compactProbe is a recorder that is a Compacter.
type compactProbe struct {
	recorder
	compacted chan struct{}
}

func (p *compactProbe) Compact() error {
	close(p.compacted)
	return nil
}

// A projection that has committed the whole stream of a bulk catch-up
// compacts while a slower one is still applying its events, instead of
// after every projection is done (one rewrite after another at the end,
// on one core).
func TestCatchUpCompactsBeforeTheSlowestEnds(t *testing.T) {
	evs := projtest.StoreEvents(8, projections.CompactAfter)
	done := make(chan struct{})
	fast := &compactProbe{recorder: recorder{name: "fast"}, compacted: done}
	slow := &slowProbe{recorder: recorder{name: "slow"}, last: uint64(len(evs)), compacted: done}
	pr := newProjector(t, projtest.NewMemSource(evs), projections.Options{CommitEvery: 1000}, slow, fast)
	if err := pr.CatchUp(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if !slow.sawIt {
		t.Fatal("the fast projection compacted only after the slow one had applied its last event")
	}
	if slow.cp.Seq != uint64(len(evs)) || fast.cp.Seq != uint64(len(evs)) {
		t.Fatalf("checkpoints slow %d, fast %d, want %d", slow.cp.Seq, fast.cp.Seq, len(evs))
	}
}

// bulkProbe is a recorder that notes the order of BeginBulk, applies,
// commits and EndBulk (projections.BulkBuilder).
type bulkProbe struct {
	recorder
	calls []string
}

func (p *bulkProbe) BeginBulk() { p.calls = append(p.calls, "begin") }
func (p *bulkProbe) EndBulk() error {
	p.calls = append(p.calls, "end")
	return nil
}
func (p *bulkProbe) Apply(ev *log.Event) error {
	if n := len(p.calls); n == 0 || p.calls[n-1] != "apply" {
		p.calls = append(p.calls, "apply")
	}
	return p.recorder.Apply(ev)
}
func (p *bulkProbe) Commit(cp projections.Checkpoint) error {
	p.calls = append(p.calls, "commit")
	return p.recorder.Commit(cp)
}

// A bulk catch-up begins a bulk build before the first event and ends
// it after the last commit, also when a projection fails; a small
// catch-up does neither.
func TestCatchUpBulkBuild(t *testing.T) {
	evs := projtest.StoreEvents(7, projections.CompactAfter)
	src := projtest.NewMemSource(evs)
	p := &bulkProbe{recorder: recorder{name: "p"}}
	pr := newProjector(t, src, projections.Options{CommitEvery: 2000}, p)
	if err := pr.CatchUp(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	want := "[begin apply commit apply commit apply commit end]"
	if got := fmt.Sprint(p.calls); got != want {
		t.Fatalf("bulk catch-up calls %s, want %s", got, want)
	}
	small := &bulkProbe{recorder: recorder{name: "p"}}
	pr = newProjector(t, projtest.NewMemSource(evs[:10]), projections.Options{}, small)
	if err := pr.CatchUp(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(small.calls); got != "[apply commit]" {
		t.Fatalf("small catch-up calls %s, want [apply commit]", got)
	}
	failing := &bulkProbe{recorder: recorder{name: "p", failAt: 3000}}
	pr = newProjector(t, src, projections.Options{CommitEvery: 2000}, failing)
	if err := pr.CatchUp(t.Context(), nil); err == nil {
		t.Fatal("catch-up with a failing apply succeeded")
	}
	if got := fmt.Sprint(failing.calls); got != "[begin apply commit apply end]" {
		t.Fatalf("failed bulk catch-up calls %s, want [begin apply commit apply end]", got)
	}
}

// releaseProbe is a recorder that releases its memory
// (projections.MemoryReleaser) and notes the most events it applied
// between two releases.
type releaseProbe struct {
	recorder
	since, most, releases int
}

func (p *releaseProbe) Apply(ev *log.Event) error {
	p.since++
	p.most = max(p.most, p.since)
	return p.recorder.Apply(ev)
}
func (p *releaseProbe) ReleaseMemory() {
	p.releases++
	p.since = 0
}

// A bulk catch-up releases a projection's mapped pages every few
// thousand events, not only after each commit (lookups between two
// commits made whole buckets resident); a small one does not release.
func TestBulkCatchUpReleasesBetweenCommits(t *testing.T) {
	evs := projtest.StoreEvents(9, 3*projections.CompactAfter)
	p := &releaseProbe{recorder: recorder{name: "p"}}
	pr := newProjector(t, projtest.NewMemSource(evs), projections.Options{CommitEvery: len(evs)}, p)
	if err := pr.CatchUp(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	// Releases come between batches (256 events).
	if p.most > 2048+256 {
		t.Fatalf("%d events applied without a release (%d releases, one commit of %d events)", p.most, p.releases, len(evs))
	}
	small := &releaseProbe{recorder: recorder{name: "p"}}
	pr = newProjector(t, projtest.NewMemSource(evs[:projections.CompactAfter-1]), projections.Options{}, small)
	if err := pr.CatchUp(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if small.releases != 0 {
		t.Fatalf("a small catch-up released %d times", small.releases)
	}
}
