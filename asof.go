package ucl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections/projstd"
	"github.com/unlimitedcontext/ucl/query"
)

// Memory as of a moment (SearchRequest.AsOf, SessionRequest.AsOf,
// GetRequest.AsOf): what retrieval, a session or an item read
// when the log ended at a given seq — items stored later left out,
// tombstones, edits and supersedes made later not yet applied.
//
// Costs. The fts projection records the seq of every event that changed
// or hid an item already stored (fts.Index.ChangedAfter: one bbolt seek).
// When no such event follows the seq, everything after it only added
// items, and the live projections answer with chunks of seq ≤ SEQ only
// (query.Request.AsOf): a query costs what any filtered query costs (the
// channels fetch four times the candidates, filtered here). Otherwise
// the live projections no longer hold what was then memory (a tombstoned
// chunk has left them, an edited one holds its new text): the projections
// of the log up to the seq are built in a temporary directory inside the
// store, queried and removed, which costs a rebuild of that prefix (the
// log read and decrypted, every projection applied; `ucl project
// rebuild` of a store that size). Content a tombstone shredded (its key
// destroyed) cannot come back: such events read as they are now.
// Shared chunks (ucl share pull) are not part of the log and are left
// out of an as-of answer. A session (Store.Session) is read from the live
// projections only when none of its chunks is of a later seq (it is then
// as it was, summary included), else from the rebuilt prefix; Store.Get
// reads items as retrieval does (one of a later seq was not there yet).

// resolveAsOf turns SEQ (digits) or a TIME (RFC 3339 or a date) into a
// log seq: the time's is the last event appended at or before it (binary
// search over the append times, which the log keeps in order). 0: none.
func (s *Store) resolveAsOf(ctx context.Context, v string) (uint64, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	head, _ := s.st.Log.Head()
	if n, err := strconv.ParseUint(v, 10, 64); err == nil && !strings.ContainsAny(v, "-:T") {
		if n == 0 || n > head {
			return 0, badRequest("as-of seq %d: the log holds seqs 1..%d", n, head)
		}
		return n, nil
	}
	t, err := ParseTime(v)
	if err != nil {
		return 0, badRequest("as-of %q: want a seq or a time (RFC 3339 or a date)", v)
	}
	timeAt := func(seq uint64) (int64, error) {
		var tm int64
		err := s.st.Log.Events(ctx, seq, seq, func(ev *log.Event) error {
			tm = ev.Time
			return nil
		})
		return tm, err
	}
	lo, hi := uint64(0), head // the answer is in [lo, hi]; lo 0 is "before every event"
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		tm, err := timeAt(mid)
		if err != nil {
			return 0, fmt.Errorf("read event %d: %w", mid, err)
		}
		if tm <= t {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if lo == 0 {
		return 0, badRequest("as-of %s: before the first event of the log", v)
	}
	return lo, nil
}

// prefixSource is the log ending at seq to: what a projection built from
// it holds is memory as it stood then.
type prefixSource struct {
	l  *log.Log
	to uint64
}

func (p prefixSource) Head() (uint64, log.Hash) {
	h, err := p.l.HashAt(p.to)
	if err != nil {
		return 0, log.Hash{}
	}
	return p.to, h
}

func (p prefixSource) HashAt(seq uint64) (log.Hash, error) {
	if seq > p.to {
		return log.Hash{}, fmt.Errorf("hash at %d: past the as-of seq %d", seq, p.to)
	}
	return p.l.HashAt(seq)
}

func (p prefixSource) Events(ctx context.Context, from, to uint64, fn func(*log.Event) error) error {
	if to == 0 || to > p.to {
		to = p.to
	}
	if from > to {
		return nil
	}
	return p.l.Events(ctx, from, to, fn)
}

// errAsOfRebuild says the live projections cannot answer as of a seq.
var errAsOfRebuild = errors.New("as-of needs a rebuild")

// queryAsOf runs fn with an engine answering as of seq (see the comment
// at the top of this file); q.AsOf is set by the caller.
func (s *Store) queryAsOf(ctx context.Context, p Progress, seq uint64, fn func(e *query.Engine) error) error {
	return s.readAsOf(ctx, p, seq, func(set *projstd.Set, _ bool) error { return fn(s.engine(set)) })
}

// readAsOf runs fn over projections that hold memory as of seq: the live
// ones (live true: fn leaves out chunks of a later seq, or returns
// errAsOfRebuild when that does not give what memory held) when no event
// after seq changed or hid an item stored by then; else the projections
// of the log prefix, built in a temporary directory (live false).
func (s *Store) readAsOf(ctx context.Context, p Progress, seq uint64, fn func(set *projstd.Set, live bool) error) error {
	err := s.readProj(ctx, p, func(set *projstd.Set, _ bool) error {
		if set.FTS == nil {
			return errAsOfRebuild // no record of changes: rebuild
		}
		changed, err := set.FTS.ChangedAfter(seq)
		if err != nil {
			return err
		}
		if changed {
			return errAsOfRebuild
		}
		return fn(set, true)
	})
	if !errors.Is(err, errAsOfRebuild) {
		return err
	}
	s.lockProj()
	o, err := s.projOptionsLocked()
	s.projMu.Unlock()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp(s.st.Path(""), ".asof-")
	if err != nil {
		return fmt.Errorf("as-of projections: %w", err)
	}
	defer os.RemoveAll(dir)
	set, err := projstd.Open(dir, prefixSource{s.st.Log, seq}, o)
	if err != nil {
		return fmt.Errorf("as-of projections: %w", err)
	}
	defer set.Close()
	if err := set.CatchUp(ctx, p.stage("project as of")); err != nil {
		return fmt.Errorf("as-of projections: %w", err)
	}
	return fn(set, false)
}

// readAt is readProj, or readAsOf when asOf names a moment (SEQ or TIME);
// seq is then the moment's seq, else 0.
func (s *Store) readAt(ctx context.Context, p Progress, asOf string) (seq uint64, read func(fn func(set *projstd.Set, live bool) error) error, err error) {
	if asOf == "" {
		return 0, func(fn func(*projstd.Set, bool) error) error {
			return s.readProj(ctx, p, func(set *projstd.Set, _ bool) error { return fn(set, false) })
		}, nil
	}
	if seq, err = s.resolveAsOf(ctx, asOf); err != nil {
		return 0, nil, err
	}
	return seq, func(fn func(*projstd.Set, bool) error) error { return s.readAsOf(ctx, p, seq, fn) }, nil
}

// runner returns how to run a query for r: over the live projections, or
// as of r.AsOf (resolved into q.AsOf).
func (s *Store) runner(ctx context.Context, r SearchRequest, q *query.Request) (func(context.Context, Progress, func(*query.Engine) error) error, error) {
	if r.AsOf == "" {
		return s.query, nil
	}
	seq, err := s.resolveAsOf(ctx, r.AsOf)
	if err != nil {
		return nil, err
	}
	q.AsOf = seq
	return func(ctx context.Context, p Progress, fn func(*query.Engine) error) error {
		return s.queryAsOf(ctx, p, seq, fn)
	}, nil
}

// EventAt reads the event at seq for the timelines' content (a chunk of
// the prefix never names a later seq).
func (p prefixSource) EventAt(seq uint64) (*log.Event, error) {
	if seq > p.to {
		return nil, fmt.Errorf("event %d: past the as-of seq %d", seq, p.to)
	}
	return p.l.EventAt(seq)
}
