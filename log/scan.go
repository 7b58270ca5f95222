package log

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
)

// scanEntry is one event a scan hands out: its seq, its raw bytes
// (header ‖ body, CRC checked), where it is, and the pooled buffer they
// are in (nil: a buffer of their own).
type scanEntry struct {
	seq uint64
	raw []byte
	seg string // segment file name
	off int64  // offset of the entry's length prefix in it
	buf *segBuf
}

// scanFiles reads the segment files directly
// and calls fn with the raw bytes of every event in from..to (to 0: all),
// CRC-checked, in order. Damage is a *CorruptionError with the position.
func scanFiles(dir string, from, to uint64, fn func(seq uint64, raw []byte) error) error {
	return scanSegs(dir, from, to, nil, func(e *scanEntry) error { return fn(e.seq, e.raw) })
}

// scanSegs is scanFiles reading whole segment files into buffers of pool
// (nil: a new buffer a file). With a pool, fn must take a reference on
// e.buf (acquire) for as long as it keeps e.raw past its return, and it
// is called as each piece of a file is read (readSegment).
func scanSegs(dir string, from, to uint64, pool *segPool, fn func(e *scanEntry) error) error {
	segs, err := listSegments(dir)
	if err != nil {
		return err
	}
	var ents []fileEntry
	for i, s := range segs {
		if to != 0 && s.first > to {
			break
		}
		if i+1 < len(segs) && segs[i+1].first <= from {
			continue
		}
		path := filepath.Join(dir, s.name)
		var st tailState
		var sb *segBuf
		k0, ok := uint64(0), false
		if from > s.first {
			k0 = from - s.first
			ents, st, ok = tailEntries(path, k0)
		}
		handed := false // the entries were handed out as the file was read
		var scanErr error
		if !ok {
			var b []byte
			if pool == nil {
				b, err = os.ReadFile(path)
				if err == nil {
					ents, st = parseSegmentInto(b, ents[:0])
				}
			} else if sb, err = pool.get(); err == nil {
				// Each piece's entries are handed out as it is read, not
				// after the whole file: the workers start on a segment at
				// once and find its bytes still in the cache.
				b, ents, st, scanErr, err = readSegment(path, sb.b[:0], ents[:0], func(ents []fileEntry, lo int) error {
					return scanEntries(s, ents[lo:], uint64(lo), from, to, sb, fn)
				})
				sb.b, handed = b, true
			}
			if err == nil && scanErr != nil && !errors.Is(scanErr, errScanDone) {
				err = scanErr // fn's: the file was not read to its end
			}
			if err != nil {
				sb.release()
				if scanErr != nil {
					return err
				}
				return fmt.Errorf("read segment %s: %w", s.name, err)
			}
			k0 = 0
			rememberEntries(path, ents, st)
			if i+1 < len(segs) && st.err == nil && !st.torn && st.goodEnd == int64(len(b)) && len(ents) > 0 {
				offs := make([]int64, len(ents))
				for k, e := range ents {
					offs[k] = e.off
				}
				writeSegIndex(dir, s.name, s.first, st.goodEnd, offs)
			}
		}
		if !handed {
			scanErr = scanEntries(s, ents, k0, from, to, sb, fn)
		}
		err := scanErr
		sb.release() // the scan's own reference; fn took its own
		if err != nil {
			if errors.Is(err, errScanDone) {
				return nil
			}
			return err
		}
		seq := s.first + k0 + uint64(len(ents))
		if st.err != nil || (st.torn && (to == 0 || seq <= to)) {
			e := st.err
			if e == nil {
				e = ErrTorn
			}
			return &CorruptionError{Seq: seq, Segment: s.name, Offset: st.goodEnd, Err: e}
		}
		if i+1 < len(segs) && segs[i+1].first != seq {
			return &CorruptionError{Seq: seq, Segment: s.name, Offset: st.goodEnd,
				Err: fmt.Errorf("%w: next segment starts at seq %d", ErrChainBroken, segs[i+1].first)}
		}
	}
	return nil
}

// errScanDone is scanEntries' mark that the scan passed to: not an error.
var errScanDone = errors.New("scan done")

// scanEntries calls fn with the entries of segment s (entry k of ents is
// seq s.first+k0+k) in from..to.
func scanEntries(s segFile, ents []fileEntry, k0, from, to uint64, sb *segBuf, fn func(e *scanEntry) error) error {
	var se scanEntry // one for the file: fn copies what it keeps
	for k, e := range ents {
		seq := s.first + k0 + uint64(k)
		if seq < from {
			continue
		}
		if to != 0 && seq > to {
			return errScanDone
		}
		se = scanEntry{seq: seq, raw: e.data[:len(e.data)-crcSize], seg: s.name, off: e.off, buf: sb} // parseSegment checked the CRC
		if err := fn(&se); err != nil {
			return positioned(err, &se)
		}
	}
	return nil
}

// positioned makes a format error found in the entry e a
// *CorruptionError naming its seq and place.
func positioned(err error, e *scanEntry) error {
	var ce *CorruptionError
	if errors.As(err, &ce) || errors.Is(err, context.Canceled) || !isFormatErr(err) {
		return err
	}
	return &CorruptionError{Seq: e.seq, Segment: e.seg, Offset: e.off, Err: err}
}

// readPiece is how much of a segment file a scan reads before it hands
// out the entries read (readSegment).
const readPiece = 256 << 10

// readSegment reads the segment file at path into buf (grown when short)
// and parses it as parseSegmentInto does, appending to ents; it hands each
// piece's entries to emit as the piece is read (ents[lo:] are the new
// ones). An error of emit stops the handing out, and, unless it is
// errScanDone, the read; it is returned as emitErr.
func readSegment(path string, buf []byte, ents []fileEntry, emit func(ents []fileEntry, lo int) error) (_ []byte, _ []fileEntry, st tailState, emitErr, err error) {
	f, err := os.Open(path)
	if err != nil {
		return buf, ents, st, nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && int64(cap(buf)) <= fi.Size() && fi.Size() < 1<<40 {
		// One byte over the size, so that EOF needs no growth; some room
		// for the next, slightly larger segment.
		buf = make([]byte, 0, fi.Size()+fi.Size()/16+512)
	}
	return readParse(f, buf, ents, readPiece, emit)
}

// readParse is readSegment of what r reads, piece bytes at a time. The
// entries handed out before the end are those that parse and check in
// full: the same as parseSegmentInto's, which alone tells how the bytes
// end (it looks at the whole tail), so the rest is parsed by it once all
// is read. An entry handed out points into a buffer that the read may
// have grown since (a file that grew while read): the bytes are the same.
func readParse(r io.Reader, buf []byte, ents []fileEntry, piece int, emit func(ents []fileEntry, lo int) error) (_ []byte, _ []fileEntry, st tailState, emitErr, err error) {
	off, sent := 0, len(ents)
	stuck := false // an entry that does not check: the end's parse classifies it
	send := func() {
		if emitErr == nil && len(ents) > sent {
			emitErr = emit(ents, sent)
			sent = len(ents)
		}
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, rerr := r.Read(buf[len(buf):min(cap(buf), len(buf)+piece)])
		buf = buf[:len(buf)+n]
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return buf, ents, st, emitErr, rerr
		}
		for !stuck && off < len(buf) {
			l, k := binary.Uvarint(buf[off:])
			end := off + k + int(l)
			if k <= 0 || l > uint64(len(buf)) || end > len(buf) {
				break // cut by the read so far (or bad: left to the end)
			}
			data := buf[off+k : end]
			_, final, err := checkEntry(data)
			if err != nil {
				stuck = true
				break
			}
			ents = append(ents, fileEntry{off: int64(off), end: int64(end), data: data, final: final})
			off = end
		}
		send()
		if emitErr != nil && !errors.Is(emitErr, errScanDone) {
			return buf, ents, st, emitErr, nil
		}
	}
	ents, st = parseSegmentFrom(buf, off, ents)
	send()
	return buf, ents, st, emitErr, nil
}

// segPool lends a replay the buffers it reads whole segment files into,
// and takes each back once the scan and every job holding its events are
// done with it: a replay reads into a few reused buffers instead of a new
// 8 MiB one a file (zeroed, then garbage). Bounded: get waits for a
// buffer to come back.
type segPool struct {
	ctx  context.Context
	free chan *segBuf
}

type segBuf struct {
	b    []byte
	refs atomic.Int32
	pool *segPool
}

// segPoolBuffers: one being read, one being decrypted. The workers lag
// the scan by the jobs in flight (a few thousand events), far less than a
// segment file (some ten thousand), so a third buffer would seldom be
// waited for; each costs 8 MiB of memory (measured: audit verify of 200K
// events peaked at 82 MB before the pool, 107-116 MB with three).
const segPoolBuffers = 2

// keptSegBufs keeps the buffers of finished replays for the next one.
var keptSegBufs sync.Pool

func newSegPool(ctx context.Context) *segPool {
	p := &segPool{ctx: ctx, free: make(chan *segBuf, segPoolBuffers)}
	for i := 0; i < segPoolBuffers; i++ {
		sb := &segBuf{pool: p}
		if b, ok := keptSegBufs.Get().(*[]byte); ok {
			sb.b = *b
		}
		p.free <- sb
	}
	return p
}

// get returns a free buffer, holding one reference.
func (p *segPool) get() (*segBuf, error) {
	select {
	case sb := <-p.free:
		sb.refs.Store(1)
		return sb, nil
	case <-p.ctx.Done():
		return nil, p.ctx.Err()
	}
}

// close hands the pool's buffers on to the next replay; call it when no
// reference is left (the scan and all jobs are done).
func (p *segPool) close() {
	for {
		select {
		case sb := <-p.free:
			if sb.b != nil && cap(sb.b) <= 2*maxSegBuf {
				b := sb.b[:0]
				keptSegBufs.Put(&b)
			}
		default:
			return
		}
	}
}

// maxSegBuf: a buffer grown past twice this (a segment of a huge last
// write) is not kept.
const maxSegBuf = 16 << 20

func (sb *segBuf) acquire() {
	if sb != nil {
		sb.refs.Add(1)
	}
}

func (sb *segBuf) release() {
	if sb != nil && sb.refs.Add(-1) == 0 {
		sb.pool.free <- sb
	}
}

// pipeline scans the events from..to of the log in dir, runs work on
// each on worker goroutines (all cores), in chunks, and calls fn with the
// results from one goroutine, in seq order. slot is an event work may
// fill and return when fn keeps nothing of it past its return: it is
// reused for a later entry once fn has seen it. work may return an event with
// its error (header and hash set): fn is then called with both, to check
// the event's place in the chain before the error is reported (werr is
// reported unless fn returns an error of its own); fn is not called for
// an entry whose work failed without an event. With wrap, work's format
// errors become *CorruptionErrors naming the entry's seq, segment and
// offset. The first error in seq order (of work, fn, or the scan) ends the
// pipeline and is returned.
func pipeline(ctx context.Context, dir string, from, to uint64, wrap bool, work func(raw []byte, st *decState, slot *Event) (*Event, error), fn func(ev *Event, e *scanEntry, werr error) error) error {
	const chunk = 256
	workers := runtime.GOMAXPROCS(0)
	type job struct {
		ents  []scanEntry
		buf   *segBuf // the buffer all of ents are in
		evs   []*Event
		slots []Event // work's slots, one an entry
		err   error   // the error of ents[len(evs)-1] (its ev may be nil)
		done  chan struct{}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pool := newSegPool(ctx)
	jobs := make(chan *job, workers*2)
	order := make(chan *job, workers*2)
	// Jobs fn is done with come back for the next entries: their slices
	// (chunk entries, events and slots: 30 KB) were a new, zeroed
	// allocation every chunk.
	free := make(chan *job, workers*4+2)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var st decState
			for j := range jobs {
				j.evs = j.evs[:0]
				for k := range j.ents {
					e := &j.ents[k]
					ev, err := work(e.raw, &st, &j.slots[k])
					j.evs = append(j.evs, ev)
					if err != nil {
						if wrap {
							err = positioned(err, e)
						}
						j.err = err
						break
					}
				}
				// Nothing of an event points into the segment buffer: its
				// header is copied, its body decrypted into memory of its own.
				j.buf.release()
				close(j.done)
			}
		}()
	}
	scanErr := make(chan error, 1)
	go func() {
		defer close(order)
		defer close(jobs)
		newJob := func() *job {
			select {
			case j := <-free:
				j.done = make(chan struct{})
				return j
			default:
				return &job{ents: make([]scanEntry, 0, chunk), evs: make([]*Event, 0, chunk), slots: make([]Event, chunk), done: make(chan struct{})}
			}
		}
		cur := newJob()
		send := func() bool {
			j := cur
			cur = newJob()
			select {
			case order <- j:
			case <-ctx.Done():
				j.buf.release()
				return false
			}
			select {
			case jobs <- j:
				return true
			case <-ctx.Done():
				// In order but no worker will see it: finish it here, so
				// the reader of order does not wait for it.
				j.err = ctx.Err()
				j.buf.release()
				close(j.done)
				return false
			}
		}
		err := scanSegs(dir, from, to, pool, func(e *scanEntry) error {
			if len(cur.ents) > 0 && (cur.buf != e.buf || len(cur.ents) == chunk) && !send() {
				return ctx.Err()
			}
			if len(cur.ents) == 0 {
				cur.buf = e.buf
				e.buf.acquire()
			}
			cur.ents = append(cur.ents, *e)
			return ctx.Err()
		})
		// The events before a scan error are handed on: the error is
		// reported after them.
		if len(cur.ents) > 0 && ctx.Err() == nil {
			send()
		} else {
			cur.buf.release()
		}
		scanErr <- err
	}()
	var err error
	recycle := func(j *job) {
		// The events fn dropped are not kept alive by a free job. Its
		// entries point into the pool's buffers, and its slots hold
		// headers and at most a small body, until overwritten: bounded
		// by the free jobs, so not cleared (16 and 50 KB a chunk).
		clear(j.evs)
		*j = job{ents: j.ents[:0], evs: j.evs[:0], slots: j.slots}
		select {
		case free <- j:
		default:
		}
	}
	for j := range order {
		<-j.done
		if err != nil {
			recycle(j)
			continue
		}
		for k, ev := range j.evs {
			var werr error
			if k == len(j.evs)-1 {
				werr = j.err
			}
			if err = ctx.Err(); err != nil {
				break
			}
			if ev != nil {
				err = fn(ev, &j.ents[k], werr)
			}
			if err == nil {
				err = werr
			}
			if err != nil {
				break
			}
		}
		recycle(j)
		if err != nil {
			cancel()
		}
	}
	wg.Wait()
	if serr := <-scanErr; err == nil && serr != nil && !errors.Is(serr, context.Canceled) {
		err = serr
	}
	if err == nil {
		err = ctx.Err()
	}
	pool.close()
	return err
}
