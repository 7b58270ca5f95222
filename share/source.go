package share

import (
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"sync"

	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/log"
)

// Source feeds the shared projections: the live granted chunks of
// the shared area as one sequence of store events, grantors by address,
// then logs by id, then the grantor's seq order. Each event keeps its
// header and body but gets the sequence's own seq, and the sequence has
// its own chain: hash n = SHA-256(hash n-1 ‖ grantor ‖ the event's hash in
// the grantor's log). The same area gives the same sequence, so the same
// projection digests on any device; any change to it changes the hashes
// from that point and the projector rebuilds. The chain needs no key:
// events are decrypted only when the projector reads them, so opening
// caught-up shared projections costs no decryption.
type Source struct {
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

func (s *Source) Head() (uint64, log.Hash) {
	if len(s.items) == 0 {
		return 0, log.Hash{}
	}
	return uint64(len(s.items)), s.items[len(s.items)-1].hash
}

func (s *Source) HashAt(seq uint64) (log.Hash, error) {
	if seq == 0 {
		return log.Hash{}, nil
	}
	if seq > uint64(len(s.items)) {
		return log.Hash{}, fmt.Errorf("shared event %d: %w", seq, log.ErrNotFound)
	}
	return s.items[seq-1].hash, nil
}

func (s *Source) Events(ctx context.Context, from, to uint64, fn func(*log.Event) error) error {
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
func (s *Source) EventAt(seq uint64) (*log.Event, error) {
	if seq == 0 || seq > uint64(len(s.items)) {
		return nil, fmt.Errorf("shared event %d: %w", seq, log.ErrNotFound)
	}
	return s.event(seq)
}

func (s *Source) event(seq uint64) (*log.Event, error) {
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

// Owner returns the grantor of a shared chunk ("" if none).
func (s *Source) Owner(id string) string { return s.owner[id] }

// Len returns the number of shared chunks.
func (s *Source) Len() int { return len(s.items) }

// extends reports whether s is old with events added at the end (the
// same chain up to old's head).
func (s *Source) extends(old *Source) bool {
	n := len(old.items)
	if n > len(s.items) {
		return false
	}
	return n == 0 || s.items[n-1].hash == old.items[n-1].hash
}

// LoadSource reads the shared area of env.Dir as the shared projections'
// source; nil when nothing is shared. key returns this wallet's private
// key, asked only when the area holds something.
func LoadSource(env Env, key func() (*rsa.PrivateKey, error)) (*Source, error) {
	area, err := loadArea(env.path(areaDir))
	if err != nil || len(area) == 0 {
		return nil, err
	}
	priv, err := key()
	if err != nil {
		return nil, err
	}
	return buildSource(area, priv)
}

// buildSource lays out the live granted chunks of the area (their
// ids come from what the pull recorded). A chunk granted twice (two grants
// of one session) is projected once.
func buildSource(area []*receivedLog, priv *rsa.PrivateKey) (*Source, error) {
	src := &Source{owner: map[string]string{}, priv: priv}
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
			orig := log.HashRaw(raw)
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
