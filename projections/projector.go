package projections

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/unlimitedcontext/ucl/log"
)

// Source is the part of *log.Log the projector reads: the head, the hash at
// a seq (to check a checkpoint is still on the chain) and a verified,
// decrypted range of events (from..to inclusive, to = 0 meaning the head).
type Source interface {
	Head() (uint64, log.Hash)
	HashAt(seq uint64) (log.Hash, error)
	Events(ctx context.Context, from, to uint64, fn func(*log.Event) error) error
}

// Sizer is implemented by projections that can report their size on disk.
type Sizer interface {
	Size() int64
}

// Compacter is implemented by projections whose files a bulk load leaves
// larger than their content: bbolt splits pages half full and keeps the
// pages every commit freed, and never gives them back. Compact rewrites
// them tight. The projector calls it after a catch-up that applied at
// least CompactAfter events to the projection, once the projection has
// committed the whole stream (while slower projections may still be
// applying theirs); it must not change what the projection holds (its
// digest).
type Compacter interface {
	Compact() error
}

// CompactAfter is how many events a catch-up must apply to a projection
// before the projector compacts it (Compacter). Smaller catch-ups leave
// the files as they are: a rewrite costs a pass over the whole file.
const CompactAfter = 5000

// BulkBuilder is implemented by projections that keep a part of their
// state that is cheaper built once from the rest at the end of a bulk
// catch-up than kept current at each of its commits (summary's session
// search index: every commit rewrote the whole postings list of every
// term its sessions hold, so a bulk build's cost grew with the square of
// the store). The projector calls BeginBulk before a bulk catch-up
// (CompactAfter events or more) applies its first event, and EndBulk after
// its last commit, whether the catch-up succeeded or not. Commits between
// them may leave that part behind; the projection must then record so in
// the same transaction as the checkpoint, bring it current in EndBulk and,
// when it finds the record on open (a crash before EndBulk), there. What
// the part holds never depends on whether it was deferred.
type BulkBuilder interface {
	BeginBulk()
	EndBulk() error
}

// StoredVersioner is implemented by projections whose state on disk records
// the format version it was built with. When it differs from Version() (and
// is not 0, meaning "no state"), the projector resets and rebuilds.
// Projections that do not implement it must reset themselves on open when
// they find state of another version.
type StoredVersioner interface {
	StoredVersion() (int, error)
}

var (
	// ErrUnknownProjection is returned when a name given to Rebuild is not
	// one of the projector's projections.
	ErrUnknownProjection = errors.New("projections: unknown projection")
	// ErrDuplicateName is returned by NewProjector when two projections
	// share a name.
	ErrDuplicateName = errors.New("projections: duplicate projection name")
	// ErrSourceGap is returned when the source delivers an event whose seq
	// is not the next one expected.
	ErrSourceGap = errors.New("projections: source skipped or repeated an event")
)

// ApplyError is returned when a projection fails to apply an event. The
// projection's checkpoint stays at its last commit; the others are committed
// up to the last event they applied.
type ApplyError struct {
	Projection string
	Seq        uint64
	Err        error
}

func (e *ApplyError) Error() string {
	return fmt.Sprintf("apply event %d to projection %s: %v", e.Seq, e.Projection, e.Err)
}

func (e *ApplyError) Unwrap() error { return e.Err }

// DefaultCommitEvery is how many events a projection applies between two
// commits during a catch-up.
const DefaultCommitEvery = 10000

// Options configure a Projector. The zero value is usable.
type Options struct {
	// CommitEvery is the number of applied events between commits
	// (default DefaultCommitEvery). Smaller loses less work on a crash;
	// larger is faster.
	CommitEvery int
	// TempDir is where Verify builds its throw-away projections (default
	// os.TempDir()). Put it on a disk with room for a full rebuild.
	TempDir string
	// DigestCache is the file where StatusCached keeps computed digests
	// (digestcache.go; empty: in memory only, for this projector's life).
	DigestCache string
	// Commits is how many projections may commit at once during a
	// catch-up (default DefaultCommits). The others go on applying
	// events meanwhile.
	Commits int
}

// DefaultCommits is how many projections commit at once during a
// catch-up. A commit's memory (bbolt's dirty nodes and page buffers,
// bleve's segment being built) grows with the projection's files, and the
// projections reached their commit points together: five at once held
// five of those. One at a time keeps one; the other projections apply
// events meanwhile. So that the projection that sets the pace does not
// wait behind the others' commits, a bulk catch-up staggers the commit
// points (stagger) and a freed turn goes to the projection furthest
// behind (turns).
const DefaultCommits = 1

// Projector keeps a set of projections caught up with a Source. It owns the
// projections given to it: Close closes them. Its methods are safe for
// concurrent use; they run one at a time.
//
// Resume rule: a projection resumes after its checkpoint (seq, hash) when
// seq <= head and HashAt(seq) == hash, and its stored format version (if it
// reports one) is its current Version(); otherwise it is Reset and rebuilt
// from seq 1. The log is read once per catch-up, from the lowest start
// among the projections; each projection sees only the events after its own
// checkpoint.
type Projector struct {
	mu    sync.Mutex
	src   Source
	ps    []Projection
	opt   Options
	names map[string]int
	dc    *digestCache
}

// NewProjector returns a projector over src for ps (names must be unique).
func NewProjector(src Source, ps []Projection, opt Options) (*Projector, error) {
	if src == nil {
		return nil, fmt.Errorf("new projector: nil source")
	}
	if opt.CommitEvery <= 0 {
		opt.CommitEvery = DefaultCommitEvery
	}
	if opt.Commits <= 0 {
		opt.Commits = DefaultCommits
	}
	names := make(map[string]int, len(ps))
	for i, p := range ps {
		if p == nil {
			return nil, fmt.Errorf("new projector: projection %d is nil", i)
		}
		if _, dup := names[p.Name()]; dup {
			return nil, fmt.Errorf("new projector: %w: %q", ErrDuplicateName, p.Name())
		}
		names[p.Name()] = i
	}
	return &Projector{src: src, ps: append([]Projection(nil), ps...), opt: opt, names: names, dc: loadDigestCache(opt.DigestCache)}, nil
}

// Projections returns the projections in the order given to NewProjector.
func (pr *Projector) Projections() []Projection { return append([]Projection(nil), pr.ps...) }

// Projection returns the projection with the given name.
func (pr *Projector) Projection(name string) (Projection, bool) {
	i, ok := pr.names[name]
	if !ok {
		return nil, false
	}
	return pr.ps[i], true
}

// Replace puts p in the place of the projection with the same name (used
// after reopening a projection that was reset). The old one is not closed.
func (pr *Projector) Replace(p Projection) error {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	i, ok := pr.names[p.Name()]
	if !ok {
		return fmt.Errorf("replace %q: %w", p.Name(), ErrUnknownProjection)
	}
	// A replacement (a damaged projection reopened empty) is digested
	// afresh once rebuilt, not taken from what the old one reported.
	pr.dc.drop(p.Name())
	pr.ps[i] = p
	return nil
}

// Close closes every projection and returns the first error.
func (pr *Projector) Close() error {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	var first error
	for _, p := range pr.ps {
		if err := p.Close(); err != nil && first == nil {
			first = fmt.Errorf("close projection %s: %w", p.Name(), err)
		}
	}
	return first
}

// CatchUp brings every projection to the head of the source. progress, if
// not nil, is called with the number of events read so far and the number
// to read (at the start, after each commit and at the end).
func (pr *Projector) CatchUp(ctx context.Context, progress func(done, total uint64)) error {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.catchUp(ctx, pr.src, progress)
}

// Rebuild resets the named projections (all when only is empty) and
// catches everything up. Unknown names are an error and nothing is reset.
func (pr *Projector) Rebuild(ctx context.Context, only []string, progress func(done, total uint64)) error {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	force := make(map[Projection]bool, len(pr.ps))
	if len(only) == 0 {
		for _, p := range pr.ps {
			force[p] = true
		}
	}
	for _, n := range only {
		i, ok := pr.names[n]
		if !ok {
			return fmt.Errorf("rebuild %q: %w", n, ErrUnknownProjection)
		}
		force[pr.ps[i]] = true
	}
	return pr.catchUpForce(ctx, pr.src, progress, force)
}

// run is one projection's state during a catch-up.
type run struct {
	p       Projection
	start   uint64 // first seq to apply
	last    Checkpoint
	pending int // applied since the last commit
	// released is pending when the mapped pages were last released
	// (releaseEvery).
	released int
	applied  int // applied in this catch-up
	failed   bool
	err      error      // the Apply or Commit failure that stopped it
	lastErr  error      // the failure of its last commit (after the stream) or of EndBulk
	compErr  error      // the failure of its compaction (Compacter)
	bulk     bool       // a bulk catch-up: mapped pages are released after each commit and every releaseEvery events
	every    int        // events to apply before the next commit (see stagger)
	backlog  func() int // batches waiting in its channel (see turns)
	st       runStats
}

// plan finds each projection's start, resetting those that rebuild from 1
// (always those in force).
func (pr *Projector) plan(src Source, force map[Projection]bool) ([]*run, uint64, error) {
	head, _ := src.Head()
	runs := make([]*run, 0, len(pr.ps))
	for _, p := range pr.ps {
		start, reset := uint64(1), true
		var last Checkpoint
		err := Guard(p.Name(), func() error {
			if !force[p] {
				var err error
				if start, reset, err = resumePoint(src, p, head); err != nil {
					return err
				}
			}
			if reset {
				// A rebuild reaches the same checkpoint again: its digest
				// is computed afresh, not taken from before (write-ahead:
				// a crash after the reset finds no entry either).
				pr.dc.drop(p.Name())
				if err := p.Reset(); err != nil {
					return fmt.Errorf("reset projection %s: %w", p.Name(), err)
				}
			}
			if start > 1 {
				var err error
				if last, err = p.Checkpoint(); err != nil {
					return fmt.Errorf("read checkpoint of %s: %w", p.Name(), err)
				}
			}
			return nil
		})
		if err != nil {
			return nil, 0, err
		}
		runs = append(runs, &run{p: p, start: start, last: last})
	}
	return runs, head, nil
}

// resumePoint returns the first seq p needs: its checkpoint + 1 if the
// checkpoint is on the chain and its version current, else 1 with reset
// true (a rebuild from 1 always starts from an empty projection).
func resumePoint(src Source, p Projection, head uint64) (start uint64, reset bool, err error) {
	if sv, ok := p.(StoredVersioner); ok {
		// What a projection's own files say of it: an error reading
		// that is damage to them (the catch-up resets the projection).
		v, err := sv.StoredVersion()
		if err != nil {
			return 0, false, &DamagedError{Projection: p.Name(), Err: fmt.Errorf("read stored version: %w", err)}
		}
		if v != 0 && v != p.Version() {
			return 1, true, nil
		}
	}
	cp, err := p.Checkpoint()
	if err != nil {
		return 0, false, &DamagedError{Projection: p.Name(), Err: fmt.Errorf("read checkpoint: %w", err)}
	}
	if cp.Seq == 0 {
		// Nothing committed, but data may have been flushed ahead of the
		// checkpoint (from another chain, even): start from empty.
		return 1, true, nil
	}
	if cp.Seq > head {
		return 1, true, nil
	}
	h, err := src.HashAt(cp.Seq)
	if err != nil {
		if errors.Is(err, log.ErrNotFound) {
			return 1, true, nil
		}
		return 0, false, fmt.Errorf("read hash at %d for %s: %w", cp.Seq, p.Name(), err)
	}
	if h != cp.Hash {
		return 1, true, nil
	}
	return cp.Seq + 1, false, nil
}

func (pr *Projector) catchUp(ctx context.Context, src Source, progress func(done, total uint64)) error {
	return pr.catchUpForce(ctx, src, progress, nil)
}

func (pr *Projector) catchUpForce(ctx context.Context, src Source, progress func(done, total uint64), force map[Projection]bool) error {
	runs, head, err := pr.plan(src, force)
	if err != nil {
		return err
	}
	from := head + 1
	for _, r := range runs {
		from = min(from, r.start)
	}
	var total, done uint64
	if from <= head {
		total = head - from + 1
	}
	report := func() {
		if progress != nil {
			progress(done, total)
		}
	}
	report()
	if total == 0 {
		return nil
	}
	for _, r := range runs {
		r.every = pr.opt.CommitEvery
	}
	if total >= CompactAfter {
		defer bulkGC()()
		stagger(runs, pr.opt.CommitEvery)
		for _, r := range runs {
			r.bulk = true
			if b, ok := r.p.(BulkBuilder); ok {
				b.BeginBulk()
			}
		}
	} else {
		defer catchUpGC(false)()
	}
	// Each projection applies the stream on its own goroutine (they are
	// independent, and on a multi-core machine the slowest one, not the
	// sum, sets the pace). The log is read and decrypted once; batches of
	// events fan out to every projection, which skips seqs below its start.
	// Each projection still sees events strictly in seq order.
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	const batchSize = 256
	// Each channel holds a commit's worth of events: a projection busy in
	// a long Commit (bleve builds its segment there) would otherwise stop
	// the reader, and with it every other projection, after a few batches.
	// The events are shared, so the slack costs one commit's events once.
	depth := pr.opt.CommitEvery/batchSize + 1
	var wg sync.WaitGroup
	// Commits take turns (Options.Commits).
	commits := newTurns(pr.opt.Commits)
	chans := make([]chan []*log.Event, len(runs))
	// Set when the reader delivered the whole range: only then may a
	// projection that committed it compact.
	var streamed atomic.Bool
	for i, r := range runs {
		chans[i] = make(chan []*log.Event, depth)
		r.backlog = func() int { return len(chans[i]) }
		wg.Add(1)
		go func(r *run, in <-chan []*log.Event) {
			defer wg.Done()
			// A panic in a projection (damaged files) stops that projection
			// only; the channel is drained so the reader never blocks on it.
			defer func() {
				for range in {
				}
			}()
			pprof.Do(rctx, pprof.Labels("projection", r.p.Name()), func(context.Context) {
				if err := Guard(r.p.Name(), func() error { r.apply(pr, in, commits, cancel); return nil }); err != nil {
					r.failed = true
					r.err = err
					cancel()
				}
				// Commit what was applied, even after an error: every
				// projection that did not fail holds exactly the events up
				// to its last checkpoint. Here, not after every projection
				// is done: the others' last commits overlap the last
				// events of the slowest.
				if !r.failed && r.pending > 0 {
					r.lastErr = Guard(r.p.Name(), func() error { return commitTurn(r, commits) })
				}
				r.lastErr = errors.Join(r.lastErr, endBulk(r, commits))
				// Compacted here, as soon as its own stream is committed:
				// the slowest projection goes on applying meanwhile, where
				// compacting after every projection was done ran one
				// file's rewrite after another on one core at the end.
				if streamed.Load() && rctx.Err() == nil && !r.failed && r.lastErr == nil {
					r.compErr = compactTurn(r, commits)
				}
			})
		}(r, chans[i])
	}
	next := from
	var batch []*log.Event
	var rs runStats
	var readT, sendT time.Duration
	t0 := rs.now()
	var c0 []metrics.Sample
	if statsOn {
		c0 = cpuClasses()
	}
	tr := t0
	flush := func() error {
		tr = rs.add(&readT, tr)
		for _, ch := range chans {
			select {
			case ch <- batch:
			case <-rctx.Done():
				return rctx.Err()
			}
		}
		tr = rs.add(&sendT, tr)
		batch = nil
		return nil
	}
	readErr := src.Events(rctx, from, head, func(ev *log.Event) error {
		if ev.Seq != next {
			return fmt.Errorf("read event: %w: got seq %d, want %d", ErrSourceGap, ev.Seq, next)
		}
		next++
		batch = append(batch, ev)
		done++
		if len(batch) == batchSize {
			if err := flush(); err != nil {
				return err
			}
			report()
		}
		return nil
	})
	if readErr == nil && len(batch) > 0 {
		readErr = flush()
	}
	streamed.Store(readErr == nil && next == head+1)
	for _, ch := range chans {
		close(ch)
	}
	wg.Wait()
	if statsOn {
		printStats(runs, readT, sendT, time.Since(t0), c0)
	}
	var applyErr error // the first projection's Apply or Commit failure, in run order
	for _, r := range runs {
		if r.err != nil {
			applyErr = r.err
			break
		}
	}
	var commitErr error // the first last-commit failure, in run order
	for _, r := range runs {
		if r.lastErr != nil {
			commitErr = r.lastErr
			break
		}
	}
	if applyErr != nil {
		return applyErr
	}
	if readErr != nil {
		if ctx.Err() != nil {
			readErr = ctx.Err()
		}
		return fmt.Errorf("read log %d..%d: %w", from, head, readErr)
	}
	if commitErr != nil {
		return commitErr
	}
	if next != head+1 {
		return fmt.Errorf("read log %d..%d: %w: stopped before seq %d", from, head, ErrSourceGap, next)
	}
	var compErrs []error
	for _, r := range runs {
		compErrs = append(compErrs, r.compErr)
	}
	if err := errors.Join(compErrs...); err != nil {
		return err
	}
	report()
	return nil
}

// stagger spreads the projections' first commits of a bulk catch-up
// over the first commit interval (the i-th of n after (i+1)/n of it),
// and with them every later one. Commits take turns (Options.Commits):
// when all reached their commit point at the same event, the projection
// that sets the pace (the slowest to apply) waited for the others'
// commits at every one of them, with nothing else left to run (the
// reader waits for it) — at 400K events 46% of its time, while the
// process used 85% of its two cores. Staggered, a commit mostly finds
// the turn free, and the others apply events meanwhile. Where the
// commits fall changes no projection's content.
func stagger(runs []*run, every int) {
	for i, r := range runs {
		r.every = max(1, every*(i+1)/len(runs))
	}
}

// endBulk ends r's bulk build if it began one (BulkBuilder), taking a
// commit turn: bringing the deferred part current is a commit's worth of
// memory. A projection that failed ends it too, so that it does not go
// on deferring; its error is already the one reported.
func endBulk(r *run, commits *turns) error {
	b, ok := r.p.(BulkBuilder)
	if !ok || !r.bulk {
		return nil
	}
	err := Guard(r.p.Name(), func() error {
		commits.acquire(r.backlog)
		defer commits.release()
		return b.EndBulk()
	})
	if err != nil && !r.failed {
		return fmt.Errorf("end bulk build of projection %s: %w", r.p.Name(), err)
	}
	return nil
}

// compactTurn compacts r's projection if it is a Compacter and this
// catch-up applied CompactAfter events or more to it, holding a commit
// turn: a compaction reads its whole file through a mapping and holds a
// transaction's pages, a commit's worth of memory, so it does not run
// beside another projection's commit. The turn goes first to projections
// with events waiting (turns), and a compacting one has none.
func compactTurn(r *run, commits *turns) error {
	c, ok := r.p.(Compacter)
	if !ok || r.applied < CompactAfter {
		return nil
	}
	t := r.st.now()
	commits.acquire(r.backlog)
	defer commits.release()
	t = r.st.add(&r.st.turn, t)
	defer r.st.add(&r.st.compact, t)
	if err := Guard(r.p.Name(), c.Compact); err != nil {
		return fmt.Errorf("compact projection %s: %w", r.p.Name(), err)
	}
	return nil
}

// apply feeds the batches from in to r's projection until in is closed
// or the projection fails; each commit holds a place in commits.
func (r *run) apply(pr *Projector, in <-chan []*log.Event, commits *turns, cancel func()) {
	t := r.st.now()
	for batch := range in {
		t = r.st.add(&r.st.wait, t)
		if r.failed {
			continue
		}
		for _, ev := range batch {
			if ev.Seq < r.start {
				continue
			}
			if err := r.p.Apply(ev); err != nil {
				r.failed = true
				r.err = &ApplyError{Projection: r.p.Name(), Seq: ev.Seq, Err: err}
				cancel()
				break
			}
			r.last = Checkpoint{Seq: ev.Seq, Hash: ev.Hash}
			r.pending++
			r.applied++
			if r.pending >= r.every {
				r.every = pr.opt.CommitEvery
				t = r.st.add(&r.st.apply, t)
				if err := commitTurn(r, commits); err != nil {
					r.err = err
					cancel()
					break
				}
				t = r.st.now()
			}
		}
		t = r.st.add(&r.st.apply, t)
		if r.bulk && r.pending-r.released >= releaseEvery {
			t = r.releaseMemory(t)
		}
	}
}

// releaseEvery is how many events a projection of a bulk catch-up
// applies between two releases of its mapped pages (MemoryReleaser),
// besides the release after each commit. Lookups of random ids between
// two commits map a page of the file for nearly every event, and the
// kernel maps the cached pages around each fault with it (fault-around,
// 64 KiB): within one commit interval the pages of a whole bucket became
// resident. At 2M events fts's side.db and summary.db held ~300 MB of the
// 1.03 GB peak between commits, beside a heap at its limit.
const releaseEvery = 2048

// releaseMemory drops r's projection's mapped pages (MemoryReleaser)
// and counts the time from t as release; it returns the time it ended.
func (r *run) releaseMemory(t time.Time) time.Time {
	r.released = r.pending
	if m, ok := r.p.(MemoryReleaser); ok {
		m.ReleaseMemory()
	}
	return r.st.add(&r.st.release, t)
}

// commitTurn is commitRun holding a place in commits, given back even
// if the commit panics (a damaged file: Guard above turns it into an
// error, and the other projections must still get their turns).
func commitTurn(r *run, commits *turns) error {
	t := r.st.now()
	commits.acquire(r.backlog)
	defer commits.release()
	t = r.st.add(&r.st.turn, t)
	if err := commitRun(r); err != nil {
		return err
	}
	t = r.st.add(&r.st.commit, t)
	if m, ok := r.p.(MemoryReleaser); ok && r.bulk {
		m.ReleaseMemory()
	}
	r.st.add(&r.st.release, t)
	return nil
}

func commitRun(r *run) error {
	if err := r.p.Commit(r.last); err != nil {
		r.failed = true
		return fmt.Errorf("commit projection %s at %d: %w", r.p.Name(), r.last.Seq, err)
	}
	r.pending = 0
	r.released = 0
	return nil
}

// Status describes one projection.
type Status struct {
	Name          string     `json:"name"`
	Version       int        `json:"version"`
	StoredVersion int        `json:"stored_version,omitempty"` // 0: not reported
	Checkpoint    Checkpoint `json:"checkpoint"`
	// OnChain is false when the checkpoint is not on the source's chain
	// (ahead of the head or a different hash): the next catch-up rebuilds.
	OnChain bool   `json:"on_chain"`
	Behind  uint64 `json:"behind"` // events between the checkpoint and the head
	// Digest is the hex SHA-256 of the state; empty when not computed
	// (StatusQuick without a cached digest).
	Digest string `json:"digest,omitempty"`
	Size   int64  `json:"size"` // bytes on disk, -1 when unknown
}

// Status reports every projection in the order given to NewProjector,
// computing every digest from the projection's state (snapshots record and
// check these).
func (pr *Projector) Status() ([]Status, error) {
	return pr.status(digestCompute)
}

// StatusCached is Status with each digest taken from the digest cache when
// it was computed for the projection's current checkpoint, version and
// digest key (see digestcache.go), and computed (and cached) otherwise.
// It does not see damage since the digest was computed; Verify does.
func (pr *Projector) StatusCached() ([]Status, error) {
	return pr.status(digestCachedOrCompute)
}

// StatusQuick is Status that computes no digest: a digest is reported
// only when the digest cache holds one for the projection's current state,
// and is empty otherwise (Digests, Status or StatusCached compute it and
// fill the cache). It costs a checkpoint read per projection, where a
// digest costs a pass over the whole state (seconds at a million events,
// paid again after every append since an append moves the checkpoint).
func (pr *Projector) StatusQuick() ([]Status, error) {
	return pr.status(digestCachedOnly)
}

// digestMode is how status gets a projection's digest.
type digestMode int

const (
	digestCompute         digestMode = iota // always from the state
	digestCachedOrCompute                   // from the cache, else from the state
	digestCachedOnly                        // from the cache, else none
)

func (pr *Projector) status(mode digestMode) ([]Status, error) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	defer pr.dc.save()
	head, _ := pr.src.Head()
	out := make([]Status, 0, len(pr.ps))
	for _, p := range pr.ps {
		st, err := pr.baseStatus(p)
		if err != nil {
			return nil, err
		}
		start, reset, err := resumePoint(pr.src, p, head)
		if err != nil {
			return nil, err
		}
		st.OnChain = st.Checkpoint == (Checkpoint{}) || !reset && start == st.Checkpoint.Seq+1
		st.Behind = head - (start - 1)
		key := digestKey(p, &st)
		if d, ok := pr.dc.get(st.Name, key); ok && mode != digestCompute {
			st.Digest = d
		} else if mode != digestCachedOnly {
			d, err := guardedDigest(p)
			if err != nil {
				return nil, fmt.Errorf("digest projection %s: %w", p.Name(), err)
			}
			st.Digest = hex.EncodeToString(d[:])
			pr.dc.put(st.Name, key, st.Digest)
		}
		if s, ok := p.(Sizer); ok {
			st.Size = s.Size()
		}
		out = append(out, st)
	}
	return out, nil
}

// baseStatus is p's name, versions and checkpoint.
func (pr *Projector) baseStatus(p Projection) (Status, error) {
	st := Status{Name: p.Name(), Version: p.Version(), Size: -1}
	if sv, ok := p.(StoredVersioner); ok {
		v, err := sv.StoredVersion()
		if err != nil {
			return st, fmt.Errorf("read stored version of %s: %w", p.Name(), err)
		}
		st.StoredVersion = v
	}
	cp, err := p.Checkpoint()
	if err != nil {
		return st, fmt.Errorf("read checkpoint of %s: %w", p.Name(), err)
	}
	st.Checkpoint = cp
	return st, nil
}

// Digests returns name → hex digest of every projection's current state,
// computed from the state, and keeps them in the digest cache so that a
// later StatusQuick reports them while the state is unchanged.
func (pr *Projector) Digests() (map[string]string, error) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	defer pr.dc.save()
	out, err := digests(pr.ps)
	if err != nil {
		return nil, err
	}
	if err := pr.cacheDigests(out); err != nil {
		return nil, err
	}
	return out, nil
}

// cacheDigests puts ds, just computed from the projections' current
// states, into the digest cache (the caller saves it).
func (pr *Projector) cacheDigests(ds map[string]string) error {
	for _, p := range pr.ps {
		st, err := pr.baseStatus(p)
		if err != nil {
			return err
		}
		if d, ok := ds[st.Name]; ok {
			pr.dc.put(st.Name, digestKey(p, &st), d)
		}
	}
	return nil
}

func digests(ps []Projection) (map[string]string, error) {
	out := make(map[string]string, len(ps))
	for _, p := range ps {
		d, err := guardedDigest(p)
		if err != nil {
			return nil, fmt.Errorf("digest projection %s: %w", p.Name(), err)
		}
		out[p.Name()] = hex.EncodeToString(d[:])
	}
	return out, nil
}

// guardedDigest is p.Digest with a failure turned into a *DamagedError
// naming p: a panic (a damaged file read, e.g. bit flips in a bleve
// segment) or an error (a projection that cannot be read is reset and
// rebuilt from the log, never trusted or left failing).
func guardedDigest(p Projection) (d [32]byte, err error) {
	err = Guard(p.Name(), func() error {
		var derr error
		d, derr = p.Digest()
		return derr
	})
	if _, ok := Damaged(err); err != nil && !ok {
		err = &DamagedError{Projection: p.Name(), Err: err}
	}
	return d, err
}

// Mismatch is a projection whose live digest differs from a fresh rebuild's.
// An empty Live or Rebuilt means the projection exists on one side only.
type Mismatch struct {
	Name    string `json:"name"`
	Live    string `json:"live"`
	Rebuilt string `json:"rebuilt"`
}

// Verify catches the live projections up to the current head h, builds a fresh set
// with build in a temporary directory (removed afterwards), feeds it the
// log up to h and compares digests. It returns the mismatches sorted by
// name (none: everything matches) and leaves the live digests in the
// digest cache. progress reports the rebuild.
func (pr *Projector) Verify(ctx context.Context, build func(dir string) ([]Projection, error), progress func(done, total uint64)) ([]Mismatch, error) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	head, headHash := pr.src.Head()
	pinned := boundedSource{pr.src, head, headHash}
	if err := pr.catchUp(ctx, pinned, nil); err != nil {
		return nil, fmt.Errorf("catch up live projections: %w", err)
	}
	live, err := digests(pr.ps)
	if err != nil {
		return nil, err
	}
	// A later status reports these without computing them again.
	defer pr.dc.save()
	if err := pr.cacheDigests(live); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(pr.opt.TempDir, "ucl-verify-*")
	if err != nil {
		return nil, fmt.Errorf("create verify dir: %w", err)
	}
	defer os.RemoveAll(dir)
	fresh, err := build(dir)
	if err != nil {
		return nil, fmt.Errorf("build fresh projections: %w", err)
	}
	// Not the live digest cache: the fresh set's resets must not drop the
	// live projections' entries.
	tmp := &Projector{src: pr.src, ps: fresh, opt: pr.opt, dc: loadDigestCache("")}
	defer func() {
		for _, p := range fresh {
			p.Close()
		}
	}()
	if err := tmp.catchUp(ctx, pinned, progress); err != nil {
		return nil, fmt.Errorf("rebuild fresh projections: %w", err)
	}
	rebuilt, err := digests(fresh)
	if err != nil {
		return nil, err
	}
	var out []Mismatch
	for name, d := range live {
		if rebuilt[name] != d {
			out = append(out, Mismatch{Name: name, Live: d, Rebuilt: rebuilt[name]})
		}
	}
	for name, d := range rebuilt {
		if _, ok := live[name]; !ok {
			out = append(out, Mismatch{Name: name, Rebuilt: d})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// boundedSource pins a source's head, so a verify compares both sides at
// the same log position while appends continue.
type boundedSource struct {
	Source
	head uint64
	hash log.Hash
}

func (b boundedSource) Head() (uint64, log.Hash) { return b.head, b.hash }

func (b boundedSource) HashAt(seq uint64) (log.Hash, error) {
	if seq > b.head {
		return log.Hash{}, fmt.Errorf("hash at %d: %w", seq, log.ErrNotFound)
	}
	return b.Source.HashAt(seq)
}

func (b boundedSource) Events(ctx context.Context, from, to uint64, fn func(*log.Event) error) error {
	if to == 0 || to > b.head {
		to = b.head
	}
	if from > to {
		return nil
	}
	return b.Source.Events(ctx, from, to, fn)
}

// TombstoneMatches reports whether tombstone ts removes a chunk with the
// given id, session and content time (unix ms). This is the one rule every
// projection applies:
//
//   - a chunk listed in ts.Chunks is removed;
//   - otherwise, if ts names a session and/or a time range, a chunk is
//     removed when it matches every part given: its session equals
//     ts.Session (when set) and its time is in [From, To) (when the range
//     is set, i.e. not From == To == 0).
//
// A tombstone at seq s removes only chunks stored at a seq < s; a chunk
// stored later (even re-stored under the same id) is live. Projections that
// keep counts depend on that rule to stay idempotent under re-delivery.
func TombstoneMatches(ts *log.Tombstone, id, session string, contentTime int64) bool {
	return ts.Matches(&log.Store{ChunkID: id, Session: session, Time: contentTime})
}
