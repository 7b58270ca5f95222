package ucl

import (
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"sync"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections/projstd"
	"github.com/unlimitedcontext/ucl/query"
)

// sharedProjectionsDir holds the projections of the shared chunks. They
// are derived from the shared area like the own projections from the log,
// and are rebuilt when the area changes.
const sharedProjectionsDir = "shared-projections"

// sharedSource feeds the shared projections: the live granted chunks of
// the shared area as one sequence of store events, grantors by address,
// then logs by id, then the grantor's seq order. Each event keeps its
// header and body but gets the sequence's own seq, and the sequence has
// its own chain: hash n = SHA-256(hash n-1 ‖ grantor ‖ the event's hash in
// the grantor's log). The same area gives the same sequence, so the same
// projection digests on any device; any change to it changes the hashes
// from that point and the projector rebuilds. The chain needs no key:
// events are decrypted only when the projector reads them, so opening
// caught-up shared projections costs no decryption.
type sharedSource struct {
	items []sharedItem
	owner map[string]string // chunk id -> grantor
	priv  *rsa.PrivateKey
	// mu serialises event: it unwraps share keys on first use, and reads
	// (EventAt) run side by side.
	mu sync.Mutex
}

type sharedItem struct {
	grantor string
	raw     []byte
	hash    log.Hash // in the shared sequence
	wrapped []byte   // the DEK under the share key
	key     *sharedKey
}

// sharedKey is a grant's share key, unwrapped with the wallet on first use.
type sharedKey struct {
	wrapped []byte
	bind    crypto.ShareBinding // what the pull verified it is bound to
	w       *crypto.Wrapper
}

func (s *sharedSource) Head() (uint64, log.Hash) {
	if len(s.items) == 0 {
		return 0, log.Hash{}
	}
	return uint64(len(s.items)), s.items[len(s.items)-1].hash
}

func (s *sharedSource) HashAt(seq uint64) (log.Hash, error) {
	if seq == 0 {
		return log.Hash{}, nil
	}
	if seq > uint64(len(s.items)) {
		return log.Hash{}, fmt.Errorf("shared event %d: %w", seq, log.ErrNotFound)
	}
	return s.items[seq-1].hash, nil
}

func (s *sharedSource) Events(ctx context.Context, from, to uint64, fn func(*log.Event) error) error {
	if to == 0 || to > uint64(len(s.items)) {
		to = uint64(len(s.items))
	}
	for seq := max(from, 1); seq <= to; seq++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		ev, err := s.event(seq)
		if err != nil {
			return err
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	return nil
}

// event decrypts item seq as the shared sequence's event seq.
// EventAt reads one shared event (the timelines read chunk content back
// through it).
func (s *sharedSource) EventAt(seq uint64) (*log.Event, error) {
	if seq == 0 || seq > uint64(len(s.items)) {
		return nil, fmt.Errorf("shared event %d: %w", seq, log.ErrNotFound)
	}
	return s.event(seq)
}

func (s *sharedSource) event(seq uint64) (*log.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := &s.items[seq-1]
	if it.key.w == nil {
		sk, err := crypto.UnwrapBoundShareKey(s.priv, it.key.wrapped, it.key.bind)
		if err != nil {
			return nil, fmt.Errorf("shared area: a grant of %s: %w", it.grantor, err)
		}
		w, err := crypto.NewWrapper(sk)
		clear(sk)
		if err != nil {
			return nil, err
		}
		it.key.w = w
	}
	dek := make([]byte, crypto.KeySize)
	defer clear(dek)
	if err := it.key.w.Unwrap(dek, it.wrapped); err != nil {
		return nil, fmt.Errorf("shared area: %s: %w", it.grantor, err)
	}
	ev, err := log.DecryptWithDEK(it.raw, dek)
	if err != nil {
		return nil, fmt.Errorf("shared area: %s: %w", it.grantor, err)
	}
	if ed := ev.Edit(); ed != nil {
		// A chunk edited before its grant: the grantee holds only this
		// version, so it is that chunk's store here.
		st := ed.Store
		ev.Body, ev.Type = &st, log.TypeStore
	}
	if ev.Store() == nil {
		return nil, fmt.Errorf("shared area: %s event %d: %w: not a store event", it.grantor, ev.Seq, log.ErrMalformed)
	}
	ev.Seq, ev.Hash = seq, it.hash
	if seq > 1 {
		ev.Prev = s.items[seq-2].hash
	} else {
		ev.Prev = log.Hash{}
	}
	return ev, nil
}

// extends reports whether s is old with events added at the end (the
// same chain up to old's head).
func (s *sharedSource) extends(old *sharedSource) bool {
	n := len(old.items)
	if n > len(s.items) {
		return false
	}
	return n == 0 || s.items[n-1].hash == old.items[n-1].hash
}

// buildSharedSource lays out the live granted chunks of the area (their
// ids come from what the pull recorded). A chunk granted twice (two grants
// of one session) is projected once.
func buildSharedSource(area []*receivedLog, w *arweave.Wallet) (*sharedSource, error) {
	src := &sharedSource{owner: map[string]string{}, priv: w.PrivateKey()}
	var prev log.Hash
	for _, rl := range area {
		type item struct {
			seq     uint64
			id      string
			wrapped []byte
			key     *sharedKey
		}
		var items []item
		for _, g := range rl.Grants {
			if len(g.Chunks) != len(g.Keys) {
				return nil, fmt.Errorf("shared area: grant %s of %s: %w: %d chunks, %d keys", g.Grant, rl.Grantor, log.ErrMalformed, len(g.Chunks), len(g.Keys))
			}
			k := &sharedKey{wrapped: g.ShareKey, bind: crypto.ShareBinding{Grantor: rl.Grantor, Grant: g.Grant}}
			lid, err := hex.DecodeString(rl.LogID)
			if err != nil || len(lid) != len(k.bind.LogID) {
				return nil, fmt.Errorf("shared area: log id %q of %s: %w", rl.LogID, rl.Grantor, log.ErrMalformed)
			}
			copy(k.bind.LogID[:], lid)
			for i, gk := range g.Keys {
				items = append(items, item{gk.Seq, g.Chunks[i], gk.Wrapped, k})
			}
		}
		sort.SliceStable(items, func(i, j int) bool { return items[i].seq < items[j].seq })
		for i, it := range items {
			if i > 0 && items[i-1].seq == it.seq {
				continue
			}
			if _, dup := src.owner[it.id]; dup {
				continue
			}
			raw, ok := rl.raws[it.seq]
			if !ok {
				return nil, fmt.Errorf("shared area: %s event %d: %w", rl.Grantor, it.seq, log.ErrNotFound)
			}
			src.owner[it.id] = rl.Grantor
			orig := sha256.Sum256(raw)
			h := sha256.New()
			h.Write(prev[:])
			h.Write([]byte(rl.Grantor))
			h.Write(orig[:])
			copy(prev[:], h.Sum(nil))
			src.items = append(src.items, sharedItem{grantor: rl.Grantor, raw: raw, hash: prev, wrapped: it.wrapped, key: it.key})
		}
	}
	return src, nil
}

// sharedSetLocked opens the shared projections over the shared area and
// catches them up; nil when nothing is shared with this store.
func (s *Store) sharedSetLocked(ctx context.Context, p Progress) (*projstd.Set, *sharedSource, error) {
	if s.shared != nil {
		return s.shared, s.sharedSrc, nil
	}
	area, err := loadSharedArea(s.sharedDir())
	if err != nil || len(area) == 0 {
		return nil, nil, err
	}
	w, err := s.wallet()
	if err != nil {
		return nil, nil, err
	}
	src, err := buildSharedSource(area, w)
	if err != nil {
		return nil, nil, err
	}
	o, err := s.projOptionsLocked()
	if err != nil {
		return nil, nil, err
	}
	set, err := projstd.Open(s.st.Path(sharedProjectionsDir), src, o)
	if err != nil {
		return nil, nil, err
	}
	set.OnNotice(func(n projstd.Notice) { s.opts.Warn("shared: " + n.String()) })
	if err := set.CatchUp(ctx, p.stage("project shared")); err != nil {
		set.Close()
		return nil, nil, fmt.Errorf("catch up shared projections: %w", err)
	}
	s.shared, s.sharedSrc = set, src
	return set, src, nil
}

func (s *Store) closeSharedLocked() error {
	if s.shared == nil {
		return nil
	}
	err := s.shared.Close()
	s.shared, s.sharedSrc = nil, nil
	return err
}

// sharedEngineLocked is a query engine over the shared projections (nil
// when nothing is shared): its results say origin shared and whose.
func (s *Store) sharedEngineLocked(ctx context.Context, p Progress) (*query.Engine, error) {
	set, src, err := s.sharedSetLocked(ctx, p)
	if err != nil || set == nil {
		return nil, err
	}
	qs := query.Sources{Chunks: set.Timelines}
	if set.FTS != nil {
		qs.Text = set.FTS
	}
	if set.Vectors != nil {
		qs.Vectors = set.Vectors
	}
	if set.Summary != nil {
		qs.Sessions = set.Summary
	}
	owner := src.owner
	return query.New(qs, query.Options{Owner: func(id string) string { return owner[id] }}), nil
}

// searchSharedLocked adds the shared results of q to r (own results),
// when q asks for shared or all origins: merged by score, then chunk id,
// and cut to q's K.
func (s *Store) searchSharedLocked(ctx context.Context, q query.Request, p Progress, r *query.Response) error {
	if q.Origin == query.OriginOwn {
		return nil
	}
	s.sharedMu.Lock()
	defer s.sharedMu.Unlock()
	e, err := s.sharedEngineLocked(ctx, p)
	if err != nil && q.Origin != query.OriginShared {
		// What others shared must not stop searches of one's own memory:
		// the shared area is a copy a pull fetches again.
		s.opts.Warn(fmt.Sprintf("shared memory left out of the search: %v (a new pull fetches it again)", err))
		return nil
	}
	if err != nil || e == nil {
		return err
	}
	q.Origin = query.OriginAny // the shared engine serves only shared chunks
	sr, err := e.Search(ctx, q)
	if err != nil {
		return fmt.Errorf("search shared: %w", err)
	}
	r.Results = append(r.Results, sr.Results...)
	sort.SliceStable(r.Results, func(i, j int) bool {
		a, b := r.Results[i], r.Results[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if a.ChunkID != b.ChunkID {
			return a.ChunkID < b.ChunkID
		}
		return a.From < b.From
	})
	k := q.K
	if k <= 0 {
		k = query.DefaultK
	}
	if k > query.MaxK {
		k = query.MaxK
	}
	if len(r.Results) > k {
		r.Results = r.Results[:k]
	}
	return nil
}

// contextPlan is which engine assembles a context, and with what.
type contextPlan struct {
	engine *query.Engine
	req    query.ContextRequest
}

// sharedContextLocked brings shared memory into a context: only it for
// origin shared; beside one's own (competing by score) for all. As in
// searches, a shared area that cannot be read leaves one's own context
// working, with a warning.
func (s *Store) sharedContextLocked(ctx context.Context, own *query.Engine, req query.ContextRequest, p Progress) (contextPlan, error) {
	plan := contextPlan{engine: own, req: req}
	if req.Origin == query.OriginOwn {
		return plan, nil
	}
	se, err := s.sharedEngineLocked(ctx, p)
	if err != nil && req.Origin != query.OriginShared {
		s.opts.Warn(fmt.Sprintf("shared memory left out of the context: %v (a new pull fetches it again)", err))
		return plan, nil
	}
	if err != nil || se == nil {
		return plan, err
	}
	if req.Origin == query.OriginShared {
		plan.engine = se
		plan.req.Origin = query.OriginAny
		return plan, nil
	}
	plan.req.Also = se
	return plan, nil
}
