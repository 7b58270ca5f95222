package log

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/fsutil"
	"github.com/unlimitedcontext/ucl/log/eventhash"
)

// Durability says when an append is acknowledged.
type Durability int

const (
	// Sync (the default) fsyncs before each Append/AppendBatch call returns;
	// each call is its own write.
	Sync Durability = iota
	// Group also fsyncs before returning, but concurrent appenders share one
	// WriteBatch and one fsync. As durable as Sync, faster under concurrency.
	Group
	// None never fsyncs. THIS IS UNSAFE: an OS crash or power loss can lose
	// acknowledged events (the log stays consistent: a torn tail is cut on
	// Open). For bulk imports that can be redone.
	None
)

func (d Durability) String() string {
	switch d {
	case Sync:
		return "sync"
	case Group:
		return "group"
	case None:
		return "none"
	}
	return fmt.Sprintf("durability(%d)", int(d))
}

// ParseDurability parses "sync", "group" or "none".
func ParseDurability(s string) (Durability, error) {
	for _, d := range []Durability{Sync, Group, None} {
		if d.String() == s {
			return d, nil
		}
	}
	return 0, fmt.Errorf("parse durability %q: want sync, group or none", s)
}

// Options configure Open. The zero value is valid: Sync durability, 64 MiB
// segment files, tail repair on, no keys (raw reads only).
type Options struct {
	// Keys encrypt new events and decrypt old ones. Without keys the log
	// can be verified and read raw, not appended to or decrypted.
	Keys       *crypto.Keyring
	Durability Durability
	// SegmentSize is the size at which a WAL file is closed and a new one
	// started (default 8 MiB).
	SegmentSize int
	// NoRepair makes Open refuse a torn tail instead of cutting it.
	NoRepair bool
	// CorruptDir receives bytes cut from a torn tail (default dir/../corrupt).
	CorruptDir string
	// MaxBatch caps how many events one group commit writes (default 4096).
	MaxBatch int
	// Now returns append times (default time.Now); tests pin it.
	Now func() time.Time
	// MinHead is the newest seq that something derived from this log has
	// seen (a projection checkpoint, the mirror state, a snapshot). Open
	// refuses with ErrLost rather than repair or accept a log that ends
	// before it. The log's own head mark gives the same guarantee for what
	// it acknowledged; MinHead covers a mark that was lost with the files.
	MinHead uint64
	// Warn receives what Open repaired or could not trust, for the user to
	// see (default: printed to standard error). Repairs are never silent.
	Warn func(msg string)
	// Replicate, when set, is called after each commit of appended events
	// (not of imported ones) with the seq of the first and the sealed
	// events (as Raw returns them), before the appends return: a cluster
	// acknowledges an append only once it is also in its replicated
	// stream. An error fails the appends with ErrNotReplicated and stops
	// the log taking appends (the events stay in the WAL; reconciling them
	// is the caller's job on the next open).
	Replicate func(first uint64, raws [][]byte) error
}

// Entry is one event to append.
type Entry struct {
	ID   ID    // zero: a random id is generated
	Time int64 // append time, unix ms; 0: now
	Body Body
}

// Result is an appended (or, for an idempotent re-append, found) event.
type Result struct {
	Seq     uint64
	ID      ID
	Hash    Hash
	Existed bool // the id was already in the log with the same content
}

// Log is an open event log. It is safe for concurrent use.
type Log struct {
	dir  string
	opts Options
	tw   *tailWriter // opened on first append (segwrite.go)
	lock *os.File
	idx  *segIndex // random reads by seq (segidx.go)

	mu       sync.RWMutex // guards head, headHash, ids, tw (swapped by a rollback)
	head     uint64
	headHash Hash
	// ids indexes event ids. Open does not read the whole log, so the index
	// is built on first use (an append with a client id, Lookup); until
	// then commits do not maintain it. Loading holds chainMu and commitMu.
	ids       map[ID]uint64
	idsLoaded atomic.Bool
	// appending counts the AppendBatch calls under way: a request
	// prepared while others are under way is prepared beside them, on
	// the other cores, and takes no helpers (startPrepare).
	appending atomic.Int32

	rekeys rekeyCache // the rekey events' DEKs, built on demand

	headf    *os.File // the head mark, rewritten after each commit
	repaired *RepairReport

	// Group commit (LevelDB's writer queue): appenders enqueue under qmu
	// and sleep on their own condition variable until they are done or at
	// the front of the queue. The front request's goroutine is the leader:
	// it commits everything queued (only itself in Sync mode), marks those
	// requests done and wakes exactly them. A lone writer commits its own
	// request with no hand-off, and followers never convoy through a mutex.
	//
	// A commit has two stages: under chainMu it chains its events (header,
	// hash, CRC; the bodies were sealed and hashed when prepared) after the
	// last ones built (the head, or the end of the batch being written:
	// flight); under commitMu it writes and fsyncs them. It takes commitMu
	// before it lets chainMu go, and wakes the next front then, so the next
	// commit chains while this one writes and fsyncs, and the writes stay
	// in chain order. Whatever must see no commit at all (Close, Import,
	// a key swap, loading the id index) takes both, chainMu first
	// (exclusive).
	qmu      sync.Mutex
	queue    []*appendReq
	chainMu  sync.Mutex
	commitMu sync.Mutex
	closed   bool
	failed   error
	segBytes int // bytes in the current WAL file, mirroring the writer's cycle rule
	// flight is the end of the batch built and being written (nil: none);
	// guarded by mu, set under chainMu, cleared by its own commit.
	flight *chainEnd
	// pend are the commits' event lists, reused: one for the batch being
	// written, one for the batch being built (pendIdx, chainMu).
	pend    [2][]pending
	pendIdx int
	hasher  eventhash.Hasher // finishes the hashes of the batch being built (chainMu)
	// chainSc is the scratch of the pieces a commit prepares itself
	// (prepFeed.wait; chainMu).
	chainSc prepScratch

	// write writes a commit's entries with one WAL batch; it is the seam
	// for fault injection in tests.
	write func(ps []pending) error
}

type appendReq struct {
	entries []Entry
	preps   []prepared // entries[i]'s chain-independent part
	mem     *reqMem    // the memory preps and their event bytes are in
	feed    *prepFeed  // nil: every entry was prepared before the request queued
	res     []Result
	err     error
	done    bool // guarded by qmu
	wake    *sync.Cond
}

// Open opens (creating if needed) the log in dir.
func Open(dir string, opts Options) (*Log, error) {
	if opts.SegmentSize <= 0 {
		opts.SegmentSize = 8 << 20
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 4096
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.CorruptDir == "" {
		opts.CorruptDir = filepath.Join(filepath.Dir(filepath.Clean(dir)), "corrupt")
	}
	if err := fsutil.MkdirAllSync(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	if opts.Warn == nil {
		opts.Warn = func(msg string) { fmt.Fprintln(os.Stderr, "ucl: "+msg) }
	}
	l := &Log{dir: dir, opts: opts, lock: lock, ids: map[ID]uint64{}, idx: newSegIndex(dir)}
	if err := l.open(); err != nil {
		if l.headf != nil {
			l.headf.Close()
		}
		unlock(lock)
		return nil, err
	}
	l.write = l.writeWAL
	return l, nil
}

// Repaired returns what Open cut from the log's tail (nil: nothing).
func (l *Log) Repaired() *RepairReport { return l.repaired }

func (l *Log) open() error {
	mark, haveMark, err := readHeadMark(l.dir)
	if err != nil {
		// Without a mark the log is verified in full and nothing it lost can
		// be detected by it: say so rather than trust silently.
		l.opts.Warn(fmt.Sprintf("log: head mark unreadable (%v); verifying the whole log", err))
		haveMark = false
	}
	minHead := tailMinHead(mark, haveMark, l.opts.MinHead)
	rep, err := recoverTail(l.dir, l.opts.CorruptDir, l.opts.NoRepair, minHead)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	if rep != nil {
		l.repaired = rep
		l.opts.Warn(rep.String())
	}
	n, prev, headRaw, err := l.verifyTail(mark, haveMark)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	if n < minHead {
		return fmt.Errorf("open log: %w", &CorruptionError{Seq: n + 1, Offset: -1,
			Err: fmt.Errorf("%w: the log ends at seq %d, and seq %d was acknowledged", ErrLost, n, minHead)})
	}
	l.head, l.headHash = n, prev
	if n > 0 && l.opts.Keys != nil {
		if err := l.checkKey(n, headRaw); err != nil {
			return err
		}
	}
	// The writer is opened on first use (tail). An empty log opens it
	// now, creating the first file.
	if n == 0 {
		if _, err := l.tail(); err != nil {
			return fmt.Errorf("open log: %w", err)
		}
	}
	l.segBytes = l.lastSegmentSize(n)
	if l.headf, err = os.OpenFile(filepath.Join(l.dir, headMarkFile), os.O_CREATE|os.O_RDWR, 0o600); err != nil {
		return errors.Join(fmt.Errorf("open log: %w", err), l.closeWAL())
	}
	// A log found as it was left (nothing cut, the mark already saying
	// this head) is opened without a write or a sync: a process that only
	// reads (a query) changes nothing on disk.
	if n > 0 && haveMark && rep == nil && mark == l.headMark() {
		return nil
	}
	if err := l.writeHeadMark(); err != nil {
		return errors.Join(fmt.Errorf("open log: %w", err), l.closeWAL())
	}
	return syncDir(l.dir) // the first file, or the mark, may have been created
}

// tail returns the segment writer, opening it on first use after the
// head Open verified (no write happens before it is open, so the head is
// still that).
func (l *Log) tail() (*tailWriter, error) {
	l.mu.RLock()
	w := l.tw
	l.mu.RUnlock()
	if w != nil {
		return w, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tw != nil {
		return l.tw, nil
	}
	w, err := openTail(l.dir, l.head, l.opts.SegmentSize, l.opts.Durability == None)
	if err != nil {
		return nil, fmt.Errorf("open wal: %w", err)
	}
	l.tw = w
	return w, nil
}

// closeWAL closes the segment writer if it was opened.
func (l *Log) closeWAL() error {
	l.mu.Lock()
	w := l.tw
	l.tw = nil
	l.mu.Unlock()
	return w.close()
}

func (l *Log) verifyTail(mark headMark, haveMark bool) (uint64, Hash, []byte, error) {
	if haveMark && mark.Seq > 0 {
		var n uint64
		var prev Hash
		var last []byte
		found := false
		err := scanFiles(l.dir, mark.Seq, 0, func(seq uint64, raw []byte) error {
			if seq == mark.Seq {
				h := HashRaw(raw)
				if h != mark.Hash {
					return fmt.Errorf("%w: seq %d is not the event this log acknowledged (hash %s, acknowledged %s)", ErrLost, seq, short(h), short(mark.Hash))
				}
				found, n, prev, last = true, seq, h, raw
				return nil
			}
			r, err := verifyRaw(seq, raw, prev)
			if err != nil {
				return err
			}
			n, prev, last = seq, r.Hash, raw
			return nil
		})
		switch {
		case err != nil && mark.Durable:
			return 0, Hash{}, nil, err
		case err == nil && found:
			return n, prev, bytes.Clone(last), nil
		case mark.Durable:
			return 0, Hash{}, nil, nil // shorter than the mark: the caller refuses
		}
		// A mark written without fsync may be ahead of what the disk kept.
		l.opts.Warn(fmt.Sprintf("log: head mark seq %d (written with durability none) is not on disk; verifying the whole log", mark.Seq))
	}
	var n uint64
	var prev Hash
	var last []byte
	ids := map[ID]uint64{}
	err := scanFiles(l.dir, 1, 0, func(seq uint64, raw []byte) error {
		r, err := verifyRaw(seq, raw, prev)
		if err != nil {
			return err
		}
		prev, n, last = r.Hash, seq, raw
		ids[r.Header.ID] = seq
		return nil
	})
	if err != nil {
		return 0, Hash{}, nil, err
	}
	// The index came free with the scan. Not for an empty log: kept loaded
	// from the start, it costs every append a map insert (12% of an
	// append's CPU at batches of 256) though most logs never see a
	// client-supplied id; ensureIDs builds it on first need, as for a log
	// opened from its head mark.
	if n > 0 {
		l.ids = ids
		l.idsLoaded.Store(true)
	}
	return n, prev, bytes.Clone(last), nil
}

// ensureIDs builds the id index on first use: one pass over the headers of
// the whole log, with commits held off so none is missed.
func (l *Log) ensureIDs() error {
	if l.idsLoaded.Load() {
		return nil
	}
	defer l.exclusive()()
	if l.idsLoaded.Load() {
		return nil
	}
	head, _ := l.Head()
	ids := make(map[ID]uint64, head)
	if head > 0 {
		err := scanFiles(l.dir, 1, head, func(seq uint64, raw []byte) error {
			h, err := DecodeHeader(raw)
			if err != nil {
				return err
			}
			ids[h.ID] = seq
			return nil
		})
		if err != nil {
			return fmt.Errorf("index event ids: %w", err)
		}
	}
	l.mu.Lock()
	l.ids = ids
	l.mu.Unlock()
	l.idsLoaded.Store(true)
	return nil
}

// lastSegmentSize returns the bytes of entries in the last segment file
// (without a preallocated zero tail), the head being seq head.
func (l *Log) lastSegmentSize(head uint64) int {
	segs, err := listSegments(l.dir)
	if err != nil || len(segs) == 0 {
		return 0
	}
	s := segs[len(segs)-1]
	path := filepath.Join(l.dir, s.name)
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	end, err := entriesEnd(path, s, head, fi)
	if err != nil {
		return int(fi.Size())
	}
	return int(end)
}

// headMark is the mark of the current head.
func (l *Log) headMark() headMark {
	head, hash := l.Head()
	return headMark{Seq: head, Hash: hash, Durable: l.opts.Durability != None}
}

// writeHeadMark records the head as acknowledged. It is not fsynced: it
// follows the WAL's fsync, so a crash can only leave it older than the
// disk, never newer (under None durability it is marked as a hint).
func (l *Log) writeHeadMark() error {
	if _, err := l.headf.WriteAt(l.headMark().encode(), 0); err != nil {
		return fmt.Errorf("write head mark: %w", err)
	}
	return nil
}

// checkKey makes sure the keyring can unwrap the newest event's data key, so
// a wrong vault key is refused before anything is written with it.
func (l *Log) checkKey(seq uint64, data []byte) error {
	h, err := DecodeHeader(data)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	w, err := l.opts.Keys.Wrapper(h.KeyEpoch)
	if err == nil {
		var dek [crypto.KeySize]byte
		err = w.Unwrap(dek[:], h.WrappedDEK[:])
	}
	if err != nil {
		return fmt.Errorf("open log: the vault key does not match this log (seq %d, epoch %d): %w; use the vault key this store was created with (ucl keys import)", seq, h.KeyEpoch, err)
	}
	return nil
}

func short(h Hash) string { return h.String()[:12] }

// Dir returns the log's directory.
func (l *Log) Dir() string { return l.dir }

// Durability returns the log's durability mode.
func (l *Log) Durability() Durability { return l.opts.Durability }

// HasKeys reports whether the log can encrypt and decrypt.
func (l *Log) HasKeys() bool { return l.opts.Keys != nil }

// Head returns the last seq (0 for an empty log) and its hash.
func (l *Log) Head() (uint64, Hash) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.head, l.headHash
}

// Lookup returns the seq of an event id, if present. The first call on a
// log reads every header to build the index.
func (l *Log) Lookup(id ID) (uint64, bool, error) {
	if err := l.ensureIDs(); err != nil {
		return 0, false, err
	}
	s, ok := l.lookup(id)
	return s, ok, nil
}

// LookupLoaded is Lookup without building the index: loaded is false (and
// nothing is read) when no append or Lookup has built it yet in this
// process. Checks that must stay cheap use it.
func (l *Log) LookupLoaded(id ID) (seq uint64, ok, loaded bool) {
	if !l.idsLoaded.Load() {
		return 0, false, false
	}
	seq, ok = l.lookup(id)
	return seq, ok, true
}

// lookup is Lookup on a loaded index.
func (l *Log) lookup(id ID) (uint64, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	s, ok := l.ids[id]
	return s, ok
}

// exclusive waits until no commit is in progress and keeps new ones
// out until the returned function is called.
func (l *Log) exclusive() func() {
	l.chainMu.Lock()
	l.commitMu.Lock()
	return func() {
		l.commitMu.Unlock()
		l.chainMu.Unlock()
	}
}

// Close waits for appends in progress and closes the files.
func (l *Log) Close() error {
	defer l.exclusive()()
	l.qmu.Lock()
	if l.closed {
		l.qmu.Unlock()
		return nil
	}
	l.closed = true
	l.qmu.Unlock()
	err := l.closeWAL()
	l.idx.close()
	if cerr := l.headf.Close(); err == nil {
		err = cerr
	}
	unlock(l.lock)
	return err
}

// Append appends one event and returns when it is durable (per the
// durability mode).
func (l *Log) Append(ctx context.Context, e Entry) (Result, error) {
	rs, err := l.AppendBatch(ctx, []Entry{e})
	if err != nil {
		return Result{}, err
	}
	return rs[0], nil
}

// AppendBatch appends events atomically: all are written, or none (an
// invalid entry fails the whole call, naming its index). One write, one
// fsync.
func (l *Log) AppendBatch(ctx context.Context, es []Entry) ([]Result, error) {
	if len(es) == 0 {
		return nil, nil
	}
	if l.opts.Keys == nil {
		return nil, fmt.Errorf("append: %w", ErrNoKeys)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, e := range es {
		if !e.ID.IsZero() {
			if err := l.ensureIDs(); err != nil {
				return nil, fmt.Errorf("append: %w", err)
			}
			break
		}
	}
	var r *appendReq
	l.appending.Add(1)
	defer l.appending.Add(-1)
	if len(es) >= pipelineMin && runtime.GOMAXPROCS(0) > 1 {
		// Large requests are prepared in pieces on all cores, the commit
		// chaining the pieces already prepared.
		feed, preps, mem, err := l.startPrepare(es)
		if err != nil {
			return nil, err
		}
		r = &appendReq{entries: es, preps: preps, mem: mem, feed: feed, wake: sync.NewCond(&l.qmu)}
	} else {
		preps, mem, err := l.prepareAll(es)
		if err != nil {
			return nil, err
		}
		r = &appendReq{entries: es, preps: preps, mem: mem, wake: sync.NewCond(&l.qmu)}
	}
	defer l.recycle(r)
	l.qmu.Lock()
	if f := r.feed; f != nil && (f.helpers == 0 || len(l.queue) > 0) {
		// Not the next leader, or no helper: prepare the request's pieces
		// now, beside the commits ahead of it, not in its own commit's
		// serial build. The next leader with helpers goes to its commit
		// at once and chains each piece as it is ready (prepFeed.wait).
		l.qmu.Unlock()
		sc := new(prepScratch)
		for l.preparePiece(f, sc) {
		}
		l.qmu.Lock()
	}
	if l.closed {
		l.qmu.Unlock()
		return nil, ErrClosed
	}
	l.queue = append(l.queue, r)
	// A request of the batch being written is out of the queue, not done.
	for !r.done && (len(l.queue) == 0 || l.queue[0] != r) {
		r.wake.Wait()
	}
	if r.done {
		l.qmu.Unlock()
		return r.res, r.err
	}
	// r is at the front: lead one commit.
	if l.closed {
		l.queue = l.queue[1:]
		l.wakeFront()
		l.qmu.Unlock()
		return nil, ErrClosed
	}
	// The batch stays at the front of the queue while it is built, so
	// appenders arriving meanwhile wait instead of leading; it leaves the
	// queue when its write starts, and the next front leads the next
	// commit's build.
	batch := l.nextBatch()
	l.qmu.Unlock()
	l.commit(batch, func() {
		l.qmu.Lock()
		l.queue = l.queue[len(batch):]
		if len(l.queue) == 0 {
			l.queue = nil
		}
		l.wakeFront()
		l.qmu.Unlock()
	})
	l.qmu.Lock()
	for _, b := range batch {
		b.done = true
		if b != r {
			b.wake.Signal()
		}
	}
	l.qmu.Unlock()
	return r.res, r.err
}

// wakeFront wakes the request now at the front of the queue to lead the
// next commit. Called with qmu held.
func (l *Log) wakeFront() {
	if len(l.queue) > 0 {
		l.queue[0].wake.Signal()
	}
}

// nextBatch returns the requests to commit next from the front of the
// queue: one in Sync mode, else as many as fit in MaxBatch events (at least
// one). Called with qmu held; the queue is not empty.
func (l *Log) nextBatch() []*appendReq {
	n, take := 0, 0
	for take < len(l.queue) && (take == 0 || (l.opts.Durability != Sync && n+len(l.queue[take].entries) <= l.opts.MaxBatch)) {
		n += len(l.queue[take].entries)
		take++
	}
	return l.queue[:take:take]
}

// pending is an event built for the batch being committed.
type pending struct {
	data []byte
	id   ID
	seq  uint64
	hash Hash
}

// chainEnd is where a built batch leaves the chain.
type chainEnd struct {
	seq  uint64
	hash Hash
}

// errEarlierWrite is the error of the requests of a batch built on one
// whose write then failed (the two overlap): nothing of it was written.
var errEarlierWrite = fmt.Errorf("%w: the batch before it failed to write, so nothing of it was written; append it again", ErrNotWritten)

// commit builds the batch (chainMu) and writes it (commitMu); handOff is
// called between, when the next commit may start building.
func (l *Log) commit(batch []*appendReq, handOff func()) {
	l.chainMu.Lock()
	// Close takes chainMu before it marks the log closed: a leader woken
	// before it (while the batch before was written) checks again here.
	l.qmu.Lock()
	closed := l.closed
	l.qmu.Unlock()
	if closed {
		for _, r := range batch {
			r.err = ErrClosed
		}
		l.chainMu.Unlock()
		handOff()
		return
	}
	// An id given by a client is looked up in the log (the index is
	// maintained by writes): such a batch is built after every batch
	// before it is written, as before the two stages overlapped.
	writing := false
	for _, r := range batch {
		for _, e := range r.entries {
			if !e.ID.IsZero() && !writing {
				l.commitMu.Lock()
				writing = true
			}
		}
	}
	l.mu.RLock()
	seq, prev := l.head, l.headHash
	if l.flight != nil {
		seq, prev = l.flight.seq, l.flight.hash
	}
	l.mu.RUnlock()
	base := chainEnd{seq, prev}
	n := 0
	for _, r := range batch {
		n += len(r.entries)
	}
	// The commit's list is reused from the last but one (the last one's
	// may still be being written); cleared after, so it pins no
	// request's slab.
	idx := l.pendIdx
	all := l.pend[idx][:0]
	if cap(all) < n {
		all = make([]pending, 0, n)
	}
	newIDs := map[ID]int{} // id → index in all
	var ok []*appendReq
	for _, r := range batch {
		mark, markSeq, markPrev := len(all), seq, prev
		r.res = make([]Result, len(r.entries))
		for i, e := range r.entries {
			if r.feed != nil {
				if err := r.feed.wait(i, l); err != nil {
					r.err = err
					break
				}
			}
			res, p, added, err := l.build(e, &r.preps[i], seq, prev, all, newIDs)
			if err != nil {
				r.err = fmt.Errorf("append event %d of %d: %w", i+1, len(r.entries), err)
				break
			}
			r.res[i] = res
			if added {
				all = append(all, p)
				if !e.ID.IsZero() {
					// Only a client-supplied id can come again in the
					// batch; a random one is new by construction.
					newIDs[p.id] = len(all) - 1
				}
				seq, prev = p.seq, p.hash
			}
		}
		if r.err != nil {
			for _, p := range all[mark:] {
				delete(newIDs, p.id)
			}
			all, seq, prev = all[:mark], markSeq, markPrev
			r.res = nil
			continue
		}
		ok = append(ok, r)
	}
	var fl *chainEnd
	if len(all) > 0 {
		fl = &chainEnd{seq, prev}
		l.mu.Lock()
		l.flight = fl
		l.mu.Unlock()
	}
	if !writing {
		l.commitMu.Lock()
	}
	l.pendIdx = 1 - idx
	l.chainMu.Unlock()
	handOff()
	l.write2(all, ok, base, fl)
	clear(all[:cap(all)])
	if cap(all) <= maxKeptEntries {
		l.pend[idx] = all[:0]
	} else {
		l.pend[idx] = nil
	}
	l.mu.RLock()
	w := l.tw
	l.mu.RUnlock()
	if l.failed == nil && w.zeroAhead() {
		// The space for the next write is reserved and zeroed now, while
		// the appenders of this batch go on and the next batch is built,
		// holding commitMu until done: the next write comes after it.
		go func() {
			w.topUp()
			l.commitMu.Unlock()
		}()
		return
	}
	l.commitMu.Unlock()
}

// write2 is a commit's second stage (commitMu held): write and fsync the
// built events all of the requests ok, built after base, publish them.
func (l *Log) write2(all []pending, ok []*appendReq, base chainEnd, fl *chainEnd) {
	fail := func(err error) {
		for _, r := range ok {
			r.err, r.res = err, nil
		}
	}
	defer func() {
		l.mu.Lock()
		if l.flight == fl { // not the next batch's
			l.flight = nil
		}
		l.mu.Unlock()
	}()
	if l.failed != nil {
		fail(l.failed)
		return
	}
	if len(all) == 0 {
		return
	}
	if head, hash := l.Head(); head != base.seq || hash != base.hash {
		fail(fmt.Errorf("append: %w", errEarlierWrite))
		return
	}
	if err := l.writeAll(all); err != nil {
		fail(fmt.Errorf("append: %w", err))
		return
	}
	l.advance(all, fl.seq, fl.hash)
	if l.opts.Replicate != nil {
		raws := make([][]byte, len(all))
		for i, p := range all {
			raws[i] = p.data[:len(p.data)-crcSize]
		}
		if err := l.opts.Replicate(all[0].seq, raws); err != nil {
			l.failed = fmt.Errorf("%w: %v", ErrNotReplicated, err)
			fail(fmt.Errorf("append: %w", l.failed))
		}
	}
	for _, r := range ok {
		for _, p := range r.preps {
			if p.typ == TypeRekey {
				l.forgetRekeys()
				return
			}
		}
	}
}

// writeAll writes one commit's entries as one WAL batch, its last entry
// marked final, and fsyncs the directory when the writer started a
// segment file. On failure it rolls the files back to the head before the batch,
// so an error means nothing of the batch is in the log; if even that
// fails, the log refuses appends until reopened (and Open drops the
// unfinished batch). Called with commitMu held.
func (l *Log) writeAll(all []pending) error {
	last := all[len(all)-1].data
	c := binary.LittleEndian.Uint32(last[len(last)-crcSize:])
	binary.LittleEndian.PutUint32(last[len(last)-crcSize:], ^c) // built non-final
	cycled := l.segBytes > l.opts.SegmentSize
	if cycled {
		l.segBytes = 0
	}
	for _, p := range all {
		l.segBytes += uvarintLen(len(p.data)) + len(p.data)
		if l.segBytes >= l.opts.SegmentSize {
			cycled, l.segBytes = true, 0
		}
	}
	err := l.write(all)
	if err == nil && cycled {
		err = syncDir(l.dir) // the writer created a segment file; make it durable
	}
	if err == nil {
		return nil
	}
	head, _ := l.Head()
	if rerr := l.rollback(head); rerr != nil {
		l.failed = fmt.Errorf("%w: %v; rolling back failed too: %v", ErrFailed, err, rerr)
		return fmt.Errorf("write wal: %w (the unfinished batch is dropped when the store is next opened)", err)
	}
	return fmt.Errorf("write wal: %w (nothing of it was written)", err)
}

// writeWAL is the production write.
func (l *Log) writeWAL(ps []pending) error {
	w, err := l.tail()
	if err != nil {
		return err
	}
	return w.write(ps)
}

// rollback undoes a failed write: the writer's file state is unknown
// after an error, so it is closed, the files are cut back to seq head, and
// the writer reopened on them. Called with commitMu held.
func (l *Log) rollback(head uint64) error {
	cerr := l.closeWAL()
	err := truncateAfter(l.dir, head)
	l.idx.reset()
	if err != nil {
		return err
	}
	w, err := openTail(l.dir, head, l.opts.SegmentSize, l.opts.Durability == None)
	if err != nil {
		return fmt.Errorf("reopen wal: %w (close: %v)", err, cerr)
	}
	l.mu.Lock()
	l.tw = w
	l.mu.Unlock()
	l.segBytes = l.lastSegmentSize(head)
	return nil
}

// advance makes a written batch visible: index, head, head mark. Called
// with commitMu held.
func (l *Log) advance(all []pending, seq uint64, prev Hash) {
	l.mu.Lock()
	if l.idsLoaded.Load() {
		for _, p := range all {
			l.ids[p.id] = p.seq
		}
	}
	l.head, l.headHash = seq, prev
	l.mu.Unlock()
	if err := l.writeHeadMark(); err != nil {
		// The events are durable; only the guard against losing them later
		// is stale. Open falls back to a full check if the mark is bad.
		l.opts.Warn(err.Error())
	}
}

func uvarintLen(n int) int {
	c := 1
	for n >= 0x80 {
		n >>= 7
		c++
	}
	return c
}

// prepared is the part of an event that does not depend on its place in
// the chain: id, append time, the sealed body and the event's hash state
// after it, the batch key's wrap. Appenders make it before they queue (a
// large request: on all cores, startPrepare, its pieces chained as they
// are done when it leads the next commit), concurrently, so the serial
// commit only writes the header, finishes the hash with it (format 4: two
// or three SHA-256 blocks) and chains.
type prepared struct {
	id      ID
	time    int64
	typ     Type
	epoch   uint32
	wrapped [WrappedKeySize]byte // the request's batch key, wrapped under epoch
	batch   *batchSeal
	hs      eventhash.State // the event's hash after its sealed body
	// buf is HeaderSize bytes of room for the header, then the sealed
	// body, with capacity for the CRC; build writes the header and takes
	// it (nil after).
	buf []byte
}

// batchSeal is the key of one append request (formats 2 and 3): one random batch
// key, wrapped once, from which each event's DEK is derived with its id
// (crypto.BatchKey).
type batchSeal struct {
	bk      [crypto.KeySize]byte
	keys    *crypto.BatchKey
	epoch   uint32
	wrapped [WrappedKeySize]byte
}

// newBatchSeal makes a request's batch key, wrapped under the current epoch.
func (l *Log) newBatchSeal() (*batchSeal, error) {
	kr := l.opts.Keys
	b := &batchSeal{epoch: kr.Current()}
	w, err := kr.Wrapper(b.epoch)
	if err != nil {
		return nil, err
	}
	if _, err := rand.Read(b.bk[:]); err != nil {
		return nil, err
	}
	if b.keys, err = crypto.NewBatchKey(b.bk[:]); err != nil {
		return nil, err
	}
	if err := w.Wrap(b.wrapped[:], b.bk[:]); err != nil {
		return nil, err
	}
	return b, nil
}

// MaxEventSize bounds the encoded body of a store or edit event: the
// content, session, role, meta and tool fields of one chunk together. It
// is the one size rule of the engine (see the package doc): every face
// refuses or truncates before it, and the projections that read a chunk's
// text (full-text, vectors, summaries) then never hold more than this of
// one event. Key-carrying events (share grants, rekeys) and tombstones
// are not bound by it: their size follows the number of chunks they
// name, and projections read only ids from them.
const MaxEventSize = 1 << 20

// CheckSize returns ErrTooLarge when b is a store or edit body whose
// encoding is over MaxEventSize, so that a face can refuse it before it
// asks to append.
func CheckSize(b Body) error {
	if t := b.Type(); t != TypeStore && t != TypeEdit {
		return nil
	}
	h := Header{Version: FormatVersion, Type: b.Type()}
	plain, err := EncodeBody(b, &h)
	if err != nil {
		return err
	}
	return checkSize(h.Type, plain)
}

// MaxDocumentSize bounds the text of one item that is split into chunks
// (a document's content, a tool call's arguments and result), checked
// before it is split: each chunk is far under MaxEventSize, but one
// request's chunks are appended, projected and read back together, and
// the full-text index analyses them in one batch whose memory follows the
// distinct words of the whole text. Measured with never-repeating words
// beside a 1 MiB turn, the next session list peaked at 221-263 MB (4
// runs) with a 2 MiB document, 305 MB with 3 MiB, 345-370 MB with 4 MiB.
// 2 MiB is about half a million tokens; longer text is several documents.
const MaxDocumentSize = 2 << 20

// CheckDocumentSize returns ErrDocumentTooLarge (and ErrTooLarge) when s
// is an item ucl splits into chunks whose text is over MaxDocumentSize.
func CheckDocumentSize(s *Store) error {
	n := len(s.Content)
	if s.Tool != nil {
		n += len(s.Tool.Args)
	}
	if n > MaxDocumentSize {
		return fmt.Errorf("%w: %w: %d bytes of text; one document holds at most %d (2 MiB)", ErrTooLarge, ErrDocumentTooLarge, n, MaxDocumentSize)
	}
	return nil
}

// checkSize applies MaxEventSize to an encoded body of type t.
func checkSize(t Type, plain []byte) error {
	if (t == TypeStore || t == TypeEdit) && len(plain) > MaxEventSize {
		return fmt.Errorf("%w: a %s event of %d bytes (its content, session, meta and tool fields); one event holds at most %d", ErrTooLarge, t, len(plain), MaxEventSize)
	}
	return nil
}

// prepScratch is what one preparing goroutine reuses from entry to entry:
// the event's key, the cipher value it seals with and the header the body
// encoding reads (passed through the Body interface, a header of the
// call's own would be allocated for every event).
type prepScratch struct {
	dek [crypto.KeySize]byte
	h   Header
	// now is the append time (ms) of the entries without one, read from
	// the clock for every nowEvery-th such entry: the clock read was 3-5%
	// of an append's CPU, and nowEvery entries are prepared in a few
	// microseconds, well inside the time's millisecond.
	now    int64
	nows   int
	aad    [aadSize]byte
	hasher eventhash.Hasher
	seal   crypto.Opener // seals every body the goroutine prepares
}

// nowEvery is how many entries share one clock read (prepScratch.now).
const nowEvery = 16

// prepare encodes and keys one entry into mem (empty, with the capacity
// eventBufSize(e)); rnd is IDSize random bytes, its id when the entry has
// none; sc is the caller's scratch.
func (l *Log) prepare(e Entry, p *prepared, b *batchSeal, rnd []byte, mem []byte, sc *prepScratch) error {
	if e.Body == nil {
		return fmt.Errorf("%w: no body", ErrMalformed)
	}
	p.id, p.time, p.typ = e.ID, e.Time, e.Body.Type()
	if p.time == 0 {
		if sc.nows%nowEvery == 0 {
			sc.now = l.opts.Now().UnixMilli()
		}
		sc.nows++
		p.time = sc.now
	}
	if p.id.IsZero() {
		copy(p.id[:], rnd)
	}
	// Body encodings read only the id and time from the header. The body
	// is encoded where the event's bytes will be, after room for the
	// header, and sealed there in place (build): one buffer an event.
	sc.h = Header{Version: FormatVersion, Type: p.typ, Time: p.time, ID: p.id}
	buf, err := e.Body.appendTo(mem[:HeaderSize], &sc.h)
	if err != nil {
		return err
	}
	if err := checkSize(p.typ, buf[HeaderSize:]); err != nil {
		return err
	}
	buf = slices.Grow(buf, crypto.TagSize+crcSize)
	p.batch, p.epoch, p.wrapped = b, b.epoch, b.wrapped
	// The DEK is derived into the caller's reused scratch from p.id,
	// which is on the heap already (EventKey's arguments escape).
	b.keys.EventKey(sc.dek[:], p.id[:])
	// Sealed in place (the ciphertext overwrites the plaintext it starts
	// at) with what of the header is known now (sealAAD), and hashed:
	// the two costs of an event that format 3 paid in chain order. The
	// scratch's cipher value takes each key (a new one an event was an
	// allocation an event).
	sc.h.Encode(buf[:HeaderSize])
	body, err := sc.seal.Seal(cipherOf(FormatVersion), buf[HeaderSize:HeaderSize], sc.dek[:], sealAAD(buf, &sc.aad), buf[HeaderSize:])
	clear(sc.dek[:])
	if err != nil {
		return err
	}
	p.buf = buf[:HeaderSize+len(body)]
	sc.hasher.Body(body, &p.hs)
	return nil
}

// reqMems keeps the memory of committed append requests for the next
// ones: the bytes of a request's events are carved from one slab (one
// allocation a request, not one an event), and once the request is
// written nothing points into it (recycle); its per-event state and
// scratch come back with it. What a request allocates anew is what the
// garbage collector works for: it was a quarter to a third of an
// append's CPU (issue 26).
var reqMems sync.Pool

// reqMem is one request's reusable memory.
type reqMem struct {
	slab []byte
	ps   []prepared
	errs []error
	rnd  []byte
	offs []int
}

// getReqMem returns memory for a request of n entries whose event bytes
// take size bytes.
func getReqMem(n int) *reqMem {
	m, _ := reqMems.Get().(*reqMem)
	if m == nil {
		m = &reqMem{}
	}
	m.ps = grown(m.ps, n)
	m.errs = grown(m.errs, n)
	m.rnd = grown(m.rnd, IDSize*n)
	m.offs = grown(m.offs, n+1)
	return m
}

// grown returns s with length n, reallocated when too short (contents
// not kept).
func grown[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// maxSlab bounds a kept slab: a rare huge request does not pin its memory.
const maxSlab = 4 << 20

// eventBufSize is the room prepare needs for the event of e: header, the
// body's size hint, tag and CRC.
func eventBufSize(e Entry) int {
	if e.Body == nil {
		return 0
	}
	return HeaderSize + bodySizeHint(e.Body) + crypto.TagSize + crcSize
}

// recycle keeps r's memory for the next request once r is done: its
// slab only if every event carved from it was sealed (no plaintext is
// left in it) and no replication hook was handed its bytes (the hook may
// keep them).
func (l *Log) recycle(r *appendReq) {
	if f := r.feed; f != nil {
		// Its preparing goroutines may still be writing into the memory
		// (a commit that failed before it reached the request's end).
		f.stopWait()
	}
	m := r.mem
	if m == nil {
		return
	}
	r.mem = nil
	if l.opts.Replicate != nil || cap(m.slab) > maxSlab {
		m.slab = nil
	}
	for i := range r.preps {
		if r.preps[i].buf != nil {
			m.slab = nil
		}
	}
	clear(m.ps) // batch keys, sealers and buffers of this request
	putReqMem(m)
}

// putReqMem returns m to the pool unless its per-event parts grew past
// what a usual request needs (a rare huge one does not pin them).
func putReqMem(m *reqMem) {
	if cap(m.ps) > maxKeptEntries {
		return
	}
	clear(m.errs)
	reqMems.Put(m)
}

// maxKeptEntries bounds the per-event state kept between requests.
const maxKeptEntries = 8192

// prepareAll prepares a request's entries before it queues. The first
// invalid entry fails the request.
func (l *Log) prepareAll(es []Entry) ([]prepared, *reqMem, error) {
	b, m, mem, err := l.prepMem(es)
	if err != nil {
		return nil, nil, err
	}
	sc := new(prepScratch)
	for i := range es {
		if err := l.prepareAt(es, i, b, m, mem, sc); err != nil {
			// Plaintext may be left in the slab: it goes to the collector.
			return nil, nil, err
		}
	}
	return m.ps, m, nil
}

// prepMem makes a request's batch key and memory: random ids, the offsets
// of each event's part of the slab, the slab.
func (l *Log) prepMem(es []Entry) (*batchSeal, *reqMem, []byte, error) {
	b, err := l.newBatchSeal()
	if err != nil {
		return nil, nil, nil, err
	}
	m := getReqMem(len(es))
	// The random ids of the request in one read (one getrandom call, not
	// one an event).
	if _, err := rand.Read(m.rnd); err != nil {
		return nil, nil, nil, err
	}
	// The events' bytes: one slab, each event its own capped part of it
	// (a body longer than its hint grows out of its part, never into the
	// next).
	offs := m.offs
	offs[0] = 0
	for i, e := range es {
		offs[i+1] = offs[i] + eventBufSize(e)
	}
	if cap(m.slab) < offs[len(es)] {
		m.slab = make([]byte, offs[len(es)])
	}
	return b, m, m.slab[:cap(m.slab)], nil
}

// prepareAt prepares entry i of es into m.ps[i].
func (l *Log) prepareAt(es []Entry, i int, b *batchSeal, m *reqMem, mem []byte, sc *prepScratch) error {
	offs := m.offs
	if err := l.prepare(es[i], &m.ps[i], b, m.rnd[i*IDSize:(i+1)*IDSize], mem[offs[i]:offs[i]:offs[i+1]], sc); err != nil {
		return fmt.Errorf("append event %d of %d: %w", i+1, len(es), err)
	}
	return nil
}

// pipelineMin is the request size from which entries are prepared on
// all cores (startPrepare). Preparing (encoding, the data key, the seal
// and the body's digest) is most of an event's CPU, ~1.1 µs; the commit,
// in chain order, ~0.3 µs.
const pipelineMin = 128

// feedStep is how many entries are prepared as one piece of work: the
// appender and the helping goroutines take the pieces of a request in
// order from one counter, so a helper that starts late (waking an idle
// core took ~110 µs on the machine of issue 26, a third of preparing 256
// events) takes what is left instead of a fixed half that the commit
// would then wait for.
const feedStep = nowEvery

// prepFeed hands a request's prepared pieces to the commit.
type prepFeed struct {
	es      []Entry
	b       *batchSeal
	m       *reqMem
	mem     []byte
	n       int          // pieces
	claim   atomic.Int32 // the next piece to take
	state   []atomic.Int32
	errs    []error       // of a piece that failed (read after its state says so)
	sig     chan struct{} // a helper finished a piece (room for all)
	stop    atomic.Bool   // set: take no more pieces (the request is over)
	helps   sync.WaitGroup
	helpers int // goroutines started to prepare pieces
	ready   int // entries the commit knows are prepared (chainMu)
}

// Piece states.
const (
	pieceOpen int32 = iota
	pieceDone
	pieceFailed
)

// errPrepareStopped: the request ended before all its entries were
// prepared (never seen by a caller: the commit that stopped it failed).
var errPrepareStopped = errors.New("append: preparation stopped")

// startPrepare starts preparing es on all cores: helper goroutines take
// pieces of feedStep entries until none is left, and so does the calling
// goroutine (AppendBatch): before it queues, or, leading the next commit,
// in the commit, which chains the pieces in order as they are done and
// prepares a piece none has taken rather than wait for one a helper has
// not finished (prepFeed.wait). An invalid entry fails the request when
// the commit reaches it.
func (l *Log) startPrepare(es []Entry) (*prepFeed, []prepared, *reqMem, error) {
	n := (len(es) + feedStep - 1) / feedStep
	f := &prepFeed{es: es, n: n, state: make([]atomic.Int32, n),
		errs: make([]error, n), sig: make(chan struct{}, n)}
	helpers := min(runtime.GOMAXPROCS(0)-1, n-1)
	if l.appending.Load() > 1 {
		// Other requests keep the cores busy: helpers would only add
		// their hand-offs (4 writers of batches of 256: +10-25% CPU).
		helpers = 0
	}
	f.helpers = helpers
	f.helps.Add(helpers)
	// The helpers start before the request's memory and batch key are
	// made, and wait for them (ready): a helper that wakes an idle core
	// starts late, and the set-up is that much of its delay gone.
	ready := make(chan struct{})
	for range helpers {
		go func() {
			defer f.helps.Done()
			<-ready
			sc := new(prepScratch)
			for l.preparePiece(f, sc) {
				f.sig <- struct{}{} // never blocks: room for every piece
			}
		}()
	}
	b, m, mem, err := l.prepMem(es)
	if err != nil {
		f.stop.Store(true) // the helpers take no piece
		close(ready)
		f.helps.Wait()
		return nil, nil, nil, err
	}
	f.b, f.m, f.mem = b, m, mem
	close(ready)
	return f, m.ps, m, nil
}

// preparePiece takes the next piece of f and prepares it; false when
// none is left or the request is over.
func (l *Log) preparePiece(f *prepFeed, sc *prepScratch) bool {
	if f.stop.Load() {
		return false
	}
	k := int(f.claim.Add(1)) - 1
	if k >= f.n {
		return false
	}
	// Each piece reads the clock afresh (prepScratch.now): feedStep is
	// nowEvery.
	sc.nows = 0
	for i := k * feedStep; i < min((k+1)*feedStep, len(f.es)); i++ {
		if err := l.prepareAt(f.es, i, f.b, f.m, f.mem, sc); err != nil {
			f.errs[k] = err
			f.state[k].Store(pieceFailed)
			f.stop.Store(true) // the commit stops at it: prepare nothing after
			return true
		}
	}
	f.state[k].Store(pieceDone)
	return true
}

// wait returns once entry i is prepared, or the error of the piece that
// failed at or before it. Called by the commit of l (chainMu) in entry
// order. While the piece of i is not done, the commit prepares the next
// piece not taken, if any, rather than wait: a lone writer's commit
// chains the first pieces while a helper prepares the next ones (a
// helper that wakes an idle core starts ~110 µs late, and the chain is
// ~0.3 µs an event, in order).
func (f *prepFeed) wait(i int, l *Log) error {
	for f.ready <= i {
		k := f.ready / feedStep
		switch f.state[k].Load() {
		case pieceDone:
			f.ready = min((k+1)*feedStep, len(f.es))
		case pieceFailed:
			return f.errs[k]
		default:
			if f.stop.Load() && int(f.claim.Load()) <= k {
				return errPrepareStopped // never taken: a piece before failed
			}
			if !l.preparePiece(f, &l.chainSc) {
				<-f.sig // every piece is taken: a helper has k
			}
		}
	}
	return nil
}

// stopWait stops the helpers and returns when none is left writing into
// the request's memory.
func (f *prepFeed) stopWait() {
	f.stop.Store(true)
	f.helps.Wait()
}

// build chains one prepared entry at seq+1: header, hash, CRC. Or it
// resolves the entry to an existing event (added false) when its client id is
// already used with equal content.
func (l *Log) build(e Entry, pr *prepared, seq uint64, prev Hash, batch []pending, inBatch map[ID]int) (Result, pending, bool, error) {
	if !e.ID.IsZero() {
		if i, ok := inBatch[e.ID]; ok {
			if err := l.sameContent(batch[i].data, e); err != nil {
				return Result{}, pending{}, false, err
			}
			return Result{Seq: batch[i].seq, ID: e.ID, Hash: batch[i].hash, Existed: true}, pending{}, false, nil
		}
		if s, ok := l.lookup(e.ID); ok {
			data, err := l.readEntry(s)
			if err != nil {
				return Result{}, pending{}, false, fmt.Errorf("read event %d: %w", s, err)
			}
			if err := l.sameContent(data, e); err != nil {
				return Result{}, pending{}, false, err
			}
			raw, _, err := checkEntry(data)
			if err != nil {
				return Result{}, pending{}, false, &CorruptionError{Seq: s, Offset: -1, Err: err}
			}
			return Result{Seq: s, ID: e.ID, Hash: HashRaw(raw), Existed: true}, pending{}, false, nil
		}
	}
	if cur := l.opts.Keys.Current(); pr.epoch != cur {
		// A key rotation switched epochs after this entry was prepared:
		// wrap its batch key under the new epoch, so no event after the
		// switch depends on the epoch being shredded.
		w, err := l.opts.Keys.Wrapper(cur)
		if err != nil {
			return Result{}, pending{}, false, err
		}
		if err := w.Wrap(pr.wrapped[:], pr.batch.bk[:]); err != nil {
			return Result{}, pending{}, false, err
		}
		pr.epoch = cur
	}
	if pr.buf == nil {
		return Result{}, pending{}, false, errors.New("append: a prepared entry was built twice")
	}
	h := Header{Version: FormatVersion, Type: pr.typ, Seq: seq + 1, Time: pr.time, ID: pr.id,
		KeyEpoch: pr.epoch, WrappedDEK: pr.wrapped, Prev: prev}
	raw := pr.buf
	h.Encode(raw[:HeaderSize])
	pr.buf = nil
	hash := Hash(l.hasher.Finish(&pr.hs, raw[:HeaderSize]))
	return Result{Seq: h.Seq, ID: h.ID, Hash: hash}, pending{data: appendCRC(raw, false), id: h.ID, seq: h.Seq, hash: hash}, true, nil
}

// sealWith wraps dek with w into the header, then seals (sealRaw).
func sealWith(h *Header, plain, dek []byte, w *crypto.Wrapper) ([]byte, error) {
	if err := w.Wrap(h.WrappedDEK[:], dek); err != nil {
		return nil, err
	}
	return sealRaw(h, plain, dek)
}

// sealRaw builds raw = header ‖ AEAD(dek, plain, aad = header) under the
// cipher of h's version, with room left for the CRC.
func sealRaw(h *Header, plain, dek []byte) ([]byte, error) {
	buf := make([]byte, HeaderSize, HeaderSize+len(plain)+crypto.TagSize+crcSize)
	h.Encode(buf)
	var aad [aadSize]byte
	return crypto.SealWith(h.Cipher(), buf, dek, sealAAD(buf, &aad), plain)
}

// sameContent compares a new entry with an existing event's entry data.
func (l *Log) sameContent(data []byte, e Entry) error {
	raw, _, err := checkEntry(data)
	if err != nil {
		return err
	}
	ev, err := l.Decrypt(raw)
	if err != nil {
		return err
	}
	if ev.Type != e.Body.Type() {
		return fmt.Errorf("%w: id %s is seq %d, a %s event", ErrIDConflict, e.ID, ev.Seq, ev.Type)
	}
	body := e.Body
	if s, ok := body.(*Store); ok && s.Time == 0 {
		c := *s
		c.Time = ev.Header.Time
		body = &c
	}
	want, err := EncodeBody(body, &ev.Header)
	if err != nil {
		return err
	}
	got, _ := EncodeBody(ev.Body, &ev.Header)
	if !bytes.Equal(want, got) {
		return fmt.Errorf("%w: id %s is seq %d", ErrIDConflict, e.ID, ev.Seq)
	}
	return nil
}

// Decrypt verifies nothing but the seal: it parses raw (header ‖ body),
// unwraps the DEK and decrypts the body.
func (l *Log) Decrypt(raw []byte) (*Event, error) {
	if l.opts.Keys == nil {
		return nil, ErrNoKeys
	}
	return l.decrypt(raw)
}

// DecryptWith is Decrypt with an explicit keyring and without the log's
// rekey events: an event of a rotated-away epoch fails with
// crypto.ErrUnknownEpoch.
func DecryptWith(kr *crypto.Keyring, raw []byte) (*Event, error) {
	return decryptResolved(kr, raw, nil)
}

// Raw returns the raw bytes (header ‖ body) of one event, CRC-checked. It
// reads the entry at its offset (segidx.go) and falls back to parsing the
// whole segment, which reports damage, when the index cannot serve it.
func (l *Log) Raw(seq uint64) ([]byte, error) {
	head, _ := l.Head()
	if seq == 0 || seq > head {
		return nil, fmt.Errorf("read seq %d: %w (head is %d)", seq, ErrNotFound, head)
	}
	data, err := l.readEntry(seq)
	if err != nil {
		return nil, fmt.Errorf("read seq %d: %w", seq, err)
	}
	raw, _, err := checkEntry(data)
	if err != nil {
		return nil, &CorruptionError{Seq: seq, Offset: -1, Err: err}
	}
	return raw, nil
}

// readEntry returns the entry data (raw ‖ crc) of seq: through the offset
// index (checked), or by walking the framing of the segment file holding it
// when the index cannot serve it.
func (l *Log) readEntry(seq uint64) ([]byte, error) {
	if data, ok := l.idx.read(seq); ok {
		return data, nil
	}
	l.qmu.Lock()
	closed := l.closed
	l.qmu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	segs, err := listSegments(l.dir)
	if err != nil {
		return nil, err
	}
	i := sort.Search(len(segs), func(i int) bool { return segs[i].first > seq }) - 1
	if i < 0 {
		return nil, fmt.Errorf("%w: no segment holds it", ErrNotFound)
	}
	b, err := os.ReadFile(filepath.Join(l.dir, segs[i].name))
	if err != nil {
		return nil, err
	}
	// Walk the framing only, as tidwall's Read did: a damaged entry before
	// seq does not hide seq (the caller checks seq's own CRC).
	off := 0
	for k := seq - segs[i].first; ; k-- {
		n, w := binary.Uvarint(b[off:])
		if w <= 0 || n > uint64(len(b)-off-w) {
			return nil, &CorruptionError{Seq: seq, Segment: segs[i].name, Offset: int64(off), Err: fmt.Errorf("%w: entry framing", ErrMalformed)}
		}
		if k == 0 {
			return b[off+w : off+w+int(n)], nil
		}
		off += w + int(n)
	}
}

// HashAt returns the hash of event seq.
func (l *Log) HashAt(seq uint64) (Hash, error) {
	raw, err := l.Raw(seq)
	if err != nil {
		return Hash{}, err
	}
	return HashRaw(raw), nil
}

// Record is a verified raw event.
type Record struct {
	Header Header
	Raw    []byte // header ‖ body; valid only during the callback
	Hash   Hash
}

// Records calls fn for events from..to (inclusive; to 0 means the head) in
// order, after checking each one's CRC, header and place in the chain. The
// chain is checked from from-1's hash, so a range read proves the range
// continues the log.
func (l *Log) Records(ctx context.Context, from, to uint64, fn func(*Record) error) error {
	from, to, prev, err := l.bounds(from, to)
	if err != nil || from > to {
		return err
	}
	return scanFiles(l.dir, from, to, func(seq uint64, raw []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := verifyRaw(seq, raw, prev)
		if err != nil {
			return err
		}
		prev = r.Hash
		return fn(r)
	})
}

func verifyRaw(seq uint64, raw []byte, prev Hash) (*Record, error) {
	h, err := DecodeHeader(raw)
	if err != nil {
		return nil, err
	}
	if h.Seq != seq {
		return nil, fmt.Errorf("%w: header says seq %d", ErrChainBroken, h.Seq)
	}
	if h.Prev != prev {
		return nil, fmt.Errorf("%w: prev %s is not the hash of seq %d (%s)", ErrChainBroken, short(h.Prev), seq-1, short(prev))
	}
	return &Record{Header: h, Raw: raw, Hash: HashRaw(raw)}, nil
}

func (l *Log) bounds(from, to uint64) (uint64, uint64, Hash, error) {
	head, _ := l.Head()
	if from == 0 {
		from = 1
	}
	if to == 0 || to > head {
		to = head
	}
	var prev Hash
	if from > 1 && from <= to {
		var err error
		if prev, err = l.HashAt(from - 1); err != nil {
			return 0, 0, prev, err
		}
	}
	return from, to, prev, nil
}

// Events calls fn for the decrypted events from..to (inclusive; to 0 means
// the head) in order, verifying the chain as Records does. Hashing and
// decryption run on all cores; the chain (seq and prev) is checked in order
// before fn sees an event; fn is called from one goroutine, in seq order.
// An error (damage, fn's, the context's) ends the replay: fn is not
// called again, and on damage it has seen every event before the damaged
// one.
func (l *Log) Events(ctx context.Context, from, to uint64, fn func(*Event) error) error {
	if l.opts.Keys == nil {
		return ErrNoKeys
	}
	from, to, prev, err := l.bounds(from, to)
	if err != nil || from > to {
		return err
	}
	next := from
	work := func(raw []byte, st *decState, _ *Event) (*Event, error) {
		ev, err := l.decryptReuse(raw, st)
		if errors.Is(err, ErrShredded) {
			ev, err = shreddedEvent(raw)
		}
		if err != nil {
			return nil, err
		}
		return ev, nil
	}
	return pipeline(ctx, l.dir, from, to, false, work, func(ev *Event, _ *scanEntry, _ error) error {
		if ev.Seq != next {
			return &CorruptionError{Seq: next, Offset: -1, Err: fmt.Errorf("%w: header says seq %d", ErrChainBroken, ev.Seq)}
		}
		if ev.Prev != prev {
			return &CorruptionError{Seq: next, Offset: -1, Err: fmt.Errorf("%w: prev %s is not the hash of seq %d (%s)", ErrChainBroken, short(ev.Prev), next-1, short(prev))}
		}
		next, prev = next+1, ev.Hash
		return fn(ev)
	})
}

func isFormatErr(err error) bool {
	for _, e := range []error{ErrMalformed, ErrUnknownType, ErrUnsupportedVersion, ErrChainBroken, ErrChecksum, crypto.ErrWrongKey} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func syncDir(dir string) error { return fsutil.SyncDir(dir) }

func saveAside(dir, name string, b []byte) error {
	if err := fsutil.MkdirAllSync(dir, 0o700); err != nil {
		return fmt.Errorf("save torn bytes: %w", err)
	}
	return fsutil.WriteFileAtomic(filepath.Join(dir, name), b, 0o600)
}

func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w (%s); stop the other ucl process or wait for it", ErrLocked, dir)
		}
		return nil, fmt.Errorf("lock store: %w", err)
	}
	return f, nil
}

func unlock(f *os.File) {
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	f.Close()
}

// Check validates entries as AppendBatch would, without writing anything:
// every body, and every client id against the log and against the entries
// before it (ErrIDConflict when the content differs). A caller that must
// split a large input into several batches checks it whole first, so a bad
// entry late in the input fails before the first batch is written.
func (l *Log) Check(es []Entry) error {
	if l.opts.Keys == nil {
		return fmt.Errorf("check: %w", ErrNoKeys)
	}
	type first struct {
		i     int
		plain []byte
	}
	seen := map[ID]first{}
	now := l.opts.Now().UnixMilli() // one time for all, so duplicates compare equal
	for i, e := range es {
		if e.Body == nil {
			return fmt.Errorf("append event %d of %d: %w: no body", i+1, len(es), ErrMalformed)
		}
		t := e.Time
		if t == 0 {
			t = now
		}
		h := Header{Version: FormatVersion, Type: e.Body.Type(), Time: t, ID: e.ID}
		plain, err := EncodeBody(e.Body, &h)
		if err == nil {
			err = checkSize(h.Type, plain)
		}
		if err != nil {
			return fmt.Errorf("append event %d of %d: %w", i+1, len(es), err)
		}
		if e.ID.IsZero() {
			continue
		}
		if f, ok := seen[e.ID]; ok {
			if !bytes.Equal(f.plain, plain) {
				return fmt.Errorf("append event %d of %d: %w: id %s is also event %d of the input", i+1, len(es), ErrIDConflict, e.ID, f.i+1)
			}
			continue
		}
		seen[e.ID] = first{i, plain}
		if err := l.ensureIDs(); err != nil {
			return fmt.Errorf("check: %w", err)
		}
		if s, ok := l.lookup(e.ID); ok {
			data, err := l.readEntry(s)
			if err != nil {
				return fmt.Errorf("read event %d: %w", s, err)
			}
			if err := l.sameContent(data, e); err != nil {
				return fmt.Errorf("append event %d of %d: %w", i+1, len(es), err)
			}
		}
	}
	return nil
}
