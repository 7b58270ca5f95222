package mirror

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// SegStatus is a mirrored segment's lifecycle state.
type SegStatus string

// Segment states. A segment is Posting from the moment its transaction id is
// fixed (signed) until the gateway accepted it; Submitted once accepted;
// Confirmed once mined.
const (
	StatusPosting   SegStatus = "posting"
	StatusSubmitted SegStatus = "submitted"
	StatusConfirmed SegStatus = "confirmed"
)

// SegmentState is the mirror's record of one uploaded segment.
type SegmentState struct {
	LogID    [16]byte  `json:"log_id"`
	FirstSeq uint64    `json:"first"`
	LastSeq  uint64    `json:"last"`
	PrevHash Hash      `json:"prev"`
	HeadHash Hash      `json:"head"`
	TxID     string    `json:"tx"`               // L1 tx id, or data item id in a bundle
	BundleID string    `json:"bundle,omitempty"` // bundle tx id when bundled
	Status   SegStatus `json:"status"`
	Height   int64     `json:"height,omitempty"` // block height when confirmed
	Size     int       `json:"size"`             // segment bytes
	Adopted  bool      `json:"adopted,omitempty"`
	Updated  time.Time `json:"updated"`
}

// StatusTxID is the id whose confirmation decides this segment's: the
// bundle's for a bundled item, else the tx's own.
func (s SegmentState) StatusTxID() string {
	if s.BundleID != "" {
		return s.BundleID
	}
	return s.TxID
}

var (
	// ErrStateNotFound is returned when a segment is not in the state.
	ErrStateNotFound = errors.New("arweave: segment not in mirror state")
	// ErrStateOverlap is returned when a segment would overlap one already
	// recorded with a different range.
	ErrStateOverlap = errors.New("arweave: segment overlaps mirror state")
	// ErrMirrorStateCorrupt is returned when the mirror state file is
	// damaged (bbolt panicked or an entry does not decode). The file is
	// derived data: deleting it is safe, the next push re-adopts what the
	// gateway holds.
	ErrMirrorStateCorrupt = errors.New("arweave: mirror state file is corrupt (it is derived data: delete it and the next push re-adopts what the gateway holds)")
)

var bucketSegments = []byte("segments")

// State is the mirror state, a bbolt file. It is derived data: deleting it
// is safe (Syncer re-adopts what GraphQL shows). Safe for concurrent use.
//
// bbolt panics on damaged pages (a zeroed page fails its page-id
// assertion). Every access recovers such a panic and returns
// ErrMirrorStateCorrupt; once that happened the State refuses further use,
// since bbolt's in-memory view can no longer be trusted.
type State struct {
	db   *bolt.DB
	path string

	mu      sync.Mutex
	corrupt error // set after bbolt panicked
}

// corruptError wraps a recovered bbolt panic (or a bad entry).
func corruptError(path string, cause any) error {
	return fmt.Errorf("%w: %s: %v", ErrMirrorStateCorrupt, path, cause)
}

// OpenState opens (creating if needed) the mirror state at path. A damaged
// file gives ErrMirrorStateCorrupt, never a panic: opening reads every entry
// once so that a bad page is found here rather than halfway through a push.
func OpenState(path string) (st *State, err error) {
	var db *bolt.DB
	defer func() {
		if r := recover(); r != nil {
			if db != nil {
				// Close may itself trip on the damage; the error is
				// already the one to report.
				func() {
					defer func() { _ = recover() }()
					_ = db.Close()
				}()
			}
			st, err = nil, fmt.Errorf("open mirror state: %w", corruptError(path, r))
		}
	}()
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		if errors.Is(err, bolterrors.ErrInvalid) || errors.Is(err, bolterrors.ErrChecksum) || errors.Is(err, bolterrors.ErrVersionMismatch) {
			err = corruptError(path, err)
		}
		return nil, fmt.Errorf("open mirror state %s: %w", path, err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketSegments)
		if err != nil {
			return err
		}
		return b.ForEach(func(k, v []byte) error {
			var seg SegmentState
			if len(k) != 24 || json.Unmarshal(v, &seg) != nil {
				return corruptError(path, fmt.Sprintf("bad entry %x", k))
			}
			return nil
		})
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("open mirror state %s: %w", path, err)
	}
	return &State{db: db, path: path}, nil
}

// Close closes the state file.
func (s *State) Close() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("close mirror state: %w", corruptError(s.path, r))
		}
	}()
	return s.db.Close()
}

// guard runs fn (one bbolt transaction), turning a bbolt panic into
// ErrMirrorStateCorrupt and refusing all use after one.
func (s *State) guard(fn func() error) (err error) {
	s.mu.Lock()
	bad := s.corrupt
	s.mu.Unlock()
	if bad != nil {
		return bad
	}
	defer func() {
		if r := recover(); r != nil {
			err = corruptError(s.path, r)
			s.mu.Lock()
			s.corrupt = err
			s.mu.Unlock()
		}
	}()
	return fn()
}

func (s *State) view(fn func(*bolt.Tx) error) error {
	return s.guard(func() error { return s.db.View(fn) })
}

func (s *State) updateTx(fn func(*bolt.Tx) error) error {
	return s.guard(func() error { return s.db.Update(fn) })
}

func segKey(logID [16]byte, first uint64) []byte {
	k := make([]byte, 24)
	copy(k, logID[:])
	binary.BigEndian.PutUint64(k[16:], first)
	return k
}

// Put records seg (replacing the entry with the same log id and first seq).
// It refuses a range that overlaps another recorded segment.
func (s *State) Put(seg SegmentState) error {
	if seg.FirstSeq == 0 || seg.LastSeq < seg.FirstSeq {
		return fmt.Errorf("put segment: bad range %d..%d", seg.FirstSeq, seg.LastSeq)
	}
	seg.Updated = time.Now().UTC()
	v2, err := json.Marshal(&seg)
	if err != nil {
		return fmt.Errorf("put segment: %w", err)
	}
	return s.updateTx(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSegments)
		c := b.Cursor()
		sameLog := func(k []byte) bool { return k != nil && string(k[:16]) == string(seg.LogID[:]) }
		overlap := func(v []byte) error {
			var o SegmentState
			if err := json.Unmarshal(v, &o); err != nil {
				return fmt.Errorf("put segment: %w", err)
			}
			if o.FirstSeq <= seg.LastSeq && seg.FirstSeq <= o.LastSeq {
				return fmt.Errorf("put segment %d..%d: %w: %d..%d", seg.FirstSeq, seg.LastSeq, ErrStateOverlap, o.FirstSeq, o.LastSeq)
			}
			return nil
		}
		key := segKey(seg.LogID, seg.FirstSeq)
		// The following segment (skipping one with the same first seq,
		// which is replaced) must start after seg.
		k, v := c.Seek(key)
		if sameLog(k) && string(k) == string(key) {
			k, v = c.Next()
		}
		if sameLog(k) {
			if err := overlap(v); err != nil {
				return err
			}
		}
		// The preceding segment must end before seg.
		if k, _ = c.Seek(key); k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
		if sameLog(k) {
			if err := overlap(v); err != nil {
				return err
			}
		}
		return b.Put(key, v2)
	})
}

// Get returns the segment of logID starting at first.
func (s *State) Get(logID [16]byte, first uint64) (SegmentState, error) {
	var seg SegmentState
	err := s.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketSegments).Get(segKey(logID, first))
		if v == nil {
			return fmt.Errorf("get segment %d: %w", first, ErrStateNotFound)
		}
		if err := json.Unmarshal(v, &seg); err != nil {
			return corruptError(s.path, err)
		}
		return nil
	})
	return seg, err
}

func (s *State) update(logID [16]byte, first uint64, fn func(*SegmentState)) error {
	return s.updateTx(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSegments)
		k := segKey(logID, first)
		v := b.Get(k)
		if v == nil {
			return fmt.Errorf("update segment %d: %w", first, ErrStateNotFound)
		}
		var seg SegmentState
		if err := json.Unmarshal(v, &seg); err != nil {
			return fmt.Errorf("update segment %d: %w", first, corruptError(s.path, err))
		}
		fn(&seg)
		seg.Updated = time.Now().UTC()
		nv, err := json.Marshal(&seg)
		if err != nil {
			return err
		}
		return b.Put(k, nv)
	})
}

// MarkPosting records seg with status posting: its transaction id is fixed
// but the gateway has not (yet) accepted it.
func (s *State) MarkPosting(seg SegmentState) error {
	seg.Status = StatusPosting
	return s.Put(seg)
}

// MarkSubmitted marks a segment accepted by the gateway. Call it only after
// the gateway accepted the transaction.
func (s *State) MarkSubmitted(logID [16]byte, first uint64) error {
	return s.update(logID, first, func(seg *SegmentState) {
		if seg.Status != StatusConfirmed {
			seg.Status = StatusSubmitted
		}
	})
}

// MarkConfirmed marks a segment mined at height.
func (s *State) MarkConfirmed(logID [16]byte, first uint64, height int64) error {
	return s.update(logID, first, func(seg *SegmentState) {
		seg.Status = StatusConfirmed
		seg.Height = height
	})
}

// Delete forgets a segment (e.g. a posting that the gateway never saw).
func (s *State) Delete(logID [16]byte, first uint64) error {
	return s.updateTx(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSegments).Delete(segKey(logID, first))
	})
}

// Segments returns the segments of logID ordered by first seq.
func (s *State) Segments(logID [16]byte) ([]SegmentState, error) {
	var out []SegmentState
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketSegments).Cursor()
		for k, v := c.Seek(segKey(logID, 0)); k != nil && string(k[:16]) == string(logID[:]); k, v = c.Next() {
			var seg SegmentState
			if err := json.Unmarshal(v, &seg); err != nil {
				return fmt.Errorf("read segment: %w", corruptError(s.path, err))
			}
			out = append(out, seg)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].FirstSeq < out[j].FirstSeq })
	return out, err
}

// MirrorSummary summarises a log's mirror state.
type MirrorSummary struct {
	Segments  int
	Posting   int
	Submitted int
	Confirmed int
	Bytes     int64
	// CoveredSeq is the highest seq such that every seq 1..CoveredSeq is in
	// a submitted or confirmed segment; CoveredHash is that event's hash.
	CoveredSeq  uint64
	CoveredHash Hash
	// SafeSeq is the highest seq such that every seq 1..SafeSeq is in a
	// confirmed segment ("safe up to").
	SafeSeq uint64
	// Unconfirmed lists the segments not yet confirmed (pending ranges).
	Unconfirmed []SegmentState
}

// Summary computes the mirror summary of logID.
func (s *State) Summary(logID [16]byte) (MirrorSummary, error) {
	segs, err := s.Segments(logID)
	if err != nil {
		return MirrorSummary{}, err
	}
	var m MirrorSummary
	covering, safe := true, true
	next := uint64(1)
	for _, seg := range segs {
		m.Segments++
		m.Bytes += int64(seg.Size)
		switch seg.Status {
		case StatusPosting:
			m.Posting++
		case StatusSubmitted:
			m.Submitted++
		case StatusConfirmed:
			m.Confirmed++
		}
		if seg.Status != StatusConfirmed {
			m.Unconfirmed = append(m.Unconfirmed, seg)
		}
		if seg.FirstSeq != next {
			covering, safe = false, false
		}
		if covering && seg.Status != StatusPosting {
			m.CoveredSeq, m.CoveredHash = seg.LastSeq, seg.HeadHash
		} else {
			covering = false
		}
		if safe && seg.Status == StatusConfirmed {
			m.SafeSeq = seg.LastSeq
		} else {
			safe = false
		}
		next = seg.LastSeq + 1
	}
	return m, nil
}

// SafeUpTo returns the highest seq such that all segments up to it are
// confirmed (0 if none).
func (s *State) SafeUpTo(logID [16]byte) (uint64, error) {
	m, err := s.Summary(logID)
	return m.SafeSeq, err
}
