package ucl

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/fsutil"
	"github.com/unlimitedcontext/ucl/internal/mirror"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
)

// The grantee's side of sharing. SharePull finds the disclosures addressed
// to this wallet, verifies each grantor's log like a rebuild does (every
// segment's transaction signature and owner, the segments' Merkle roots,
// the hash chain, and the newest checkpoint the grantor anchored), decrypts
// only what the grants disclose, and replaces the shared area (a grant
// whose disclosures this pull rejected keeps its last verified state):
//
//	DIR/shared/<grantor address>/<log id>.json    what was received (receivedLog)
//	DIR/shared/<grantor address>/<log id>.events  the granted events, as the
//	                                              grantor's log has them:
//	                                              uvarint(len) ‖ raw, by seq
//
// The area is only ever written whole by a pull (built beside, then
// swapped in), never by anything else, and the grantor's events never
// enter this store's own log. Keys stay wrapped on disk: the share key
// under this wallet's RSA key, the DEKs under the share key.

// sharedDirName is the per-grantor area of received shares.
const sharedDirName = "shared"

func (s *Store) sharedDir() string { return s.st.Path(sharedDirName) }

// SharePullRequest fetches shares addressed to this store's wallet.
type SharePullRequest struct {
	Gateway  string   `json:"gateway,omitempty"`
	Progress Progress `json:"-"`
}

// RejectedShare is a disclosure or a grant that did not verify.
type RejectedShare struct {
	TxID    string `json:"tx_id,omitempty"`
	Grantor string `json:"grantor,omitempty"`
	Grant   string `json:"grant,omitempty"`
	Reason  string `json:"reason"`
}

// SharePullResult is what a pull received.
type SharePullResult struct {
	Address  string          `json:"address"` // this wallet, the grantee
	Grants   []ReceivedShare `json:"grants"`
	Chunks   int             `json:"chunks"` // shared chunks now searchable
	Rejected []RejectedShare `json:"rejected,omitempty"`
	// Kept counts the grants kept as the last pull verified them because
	// this pull rejected what it found of them.
	Kept int `json:"kept,omitempty"`
	// Digests are the shared projections' digests: the same grants give
	// the same digests on any device.
	Digests map[string]string `json:"digests,omitempty"`
}

// receivedLog is what one grantor's log shared with this wallet.
type receivedLog struct {
	Grantor string          `json:"grantor"`
	LogID   string          `json:"log_id"`
	Grants  []receivedGrant `json:"grants"`
	raws    map[uint64][]byte
}

// receivedGrant is one grant, with what is needed to decrypt its live
// chunks again: the share key as wrapped to this wallet and each live
// chunk's DEK under the share key.
type receivedGrant struct {
	ReceivedShare
	ShareKey []byte        `json:"share_key"`
	Keys     []receivedKey `json:"keys"`
}

type receivedKey struct {
	Seq     uint64 `json:"seq"`
	Wrapped []byte `json:"wrapped"`
}

// SharePull fetches and verifies the grants addressed to this store's
// wallet and makes their live chunks searchable (origin shared). A grant
// or a grantor's log that does not verify is left out and reported
// (ErrShareRejected, with the result); the rest is received.
func (s *Store) SharePull(ctx context.Context, req SharePullRequest) (*SharePullResult, error) {
	if err := s.needKeys(); err != nil {
		return nil, err
	}
	w, err := s.wallet()
	if err != nil {
		return nil, err
	}
	cl, err := newClient(s.gatewayFor(req.Gateway), w)
	if err != nil {
		return nil, err
	}
	found, rejected, err := mirror.FetchDisclosures(ctx, cl, w.Address())
	if err != nil {
		return nil, fmt.Errorf("pull shares: %w", err)
	}
	res := &SharePullResult{Address: w.Address(), Grants: []ReceivedShare{}}
	for _, r := range rejected {
		res.Rejected = append(res.Rejected, RejectedShare{TxID: r.TxID, Reason: r.Err.Error()})
	}
	var logs []*receivedLog
	for i := 0; i < len(found); {
		j := i
		for j < len(found) && found[j].Grantor == found[i].Grantor && found[j].Meta.LogID == found[i].Meta.LogID {
			j++
		}
		rl, rej := s.receiveLog(ctx, cl, w, found[i:j])
		res.Rejected = append(res.Rejected, rej...)
		if rl != nil && len(rl.Grants) > 0 {
			logs = append(logs, rl)
		}
		i = j
	}
	// The area and the shared projections change under projMu: searches
	// read them under it, and two pulls do not write the area at once.
	s.lockProj()
	defer s.projMu.Unlock()
	s.sharedMu.Lock()
	defer s.sharedMu.Unlock()
	// The chain of what was shared before: kept projections are reused
	// only if the new area extends it. A damaged old area is only replaced.
	oldSrc := &sharedSource{}
	if oldArea, err := loadSharedArea(s.sharedDir()); err == nil {
		if src, err := buildSharedSource(oldArea, w); err == nil {
			oldSrc = src
			logs, res.Kept = keepRejected(logs, oldArea, res.Rejected)
		}
	}
	if err := writeSharedArea(s.sharedDir(), logs); err != nil {
		return nil, fmt.Errorf("pull shares: %w", err)
	}
	for _, rl := range logs {
		for _, g := range rl.Grants {
			res.Grants = append(res.Grants, g.ReceivedShare)
		}
	}
	if err := s.closeSharedLocked(); err != nil {
		return res, err
	}
	// Unless the shared sequence only grew, the projections are rebuilt
	// from scratch: the text of chunks hidden since the last pull must not
	// linger in the old files' free pages.
	newSrc, err := buildSharedSource(sortedLogs(logs), w)
	if err != nil {
		return res, err
	}
	if len(oldSrc.items) == 0 || !newSrc.extends(oldSrc) {
		if err := os.RemoveAll(s.st.Path(sharedProjectionsDir)); err != nil {
			return res, err
		}
	}
	set, src, err := s.sharedSetLocked(ctx, req.Progress)
	if err != nil {
		return res, err
	}
	if set != nil {
		res.Chunks = len(src.items)
		// The next process opens the vectors from this graph instead of
		// replaying every insert (see flushVectorsAfter).
		if set.Vectors != nil {
			if err := set.Vectors.Flush(); err != nil {
				return res, err
			}
		}
		if res.Digests, err = set.Projector.Digests(); err != nil {
			return res, err
		}
	}
	if len(res.Rejected) > 0 {
		return res, fmt.Errorf("pull shares: %d rejected (first: %s): %w", len(res.Rejected), res.Rejected[0].Reason, ErrShareRejected)
	}
	return res, nil
}

// verifyChainRecord is the rebuild's chain check of one record.
func verifyChainRecord(prev mirror.Hash, r mirror.Record) error {
	h, err := log.DecodeHeader(r.Raw)
	if err != nil {
		return err
	}
	if h.Seq != r.Seq {
		return fmt.Errorf("%w: header says seq %d", log.ErrChainBroken, h.Seq)
	}
	if h.Prev != log.Hash(prev) {
		return fmt.Errorf("%w: prev is not the hash of seq %d", log.ErrChainBroken, r.Seq-1)
	}
	return nil
}

// receiveLog verifies one grantor's log and decrypts what its disclosures
// give this wallet.
func (s *Store) receiveLog(ctx context.Context, cl mirror.Gateway, w *arweave.Wallet, ds []mirror.FoundDisclosure) (*receivedLog, []RejectedShare) {
	grantor, logID := ds[0].Grantor, ds[0].Meta.LogID
	var rejected []RejectedShare
	reject := func(tx string, grant log.ID, err error) {
		r := RejectedShare{TxID: tx, Grantor: grantor, Reason: err.Error()}
		if !grant.IsZero() {
			r.Grant = grant.String()
		}
		rejected = append(rejected, r)
	}
	type grantIn struct {
		id      log.ID
		wrapped []byte // the share key, RSA-wrapped
		w       *crypto.Wrapper
		keys    map[uint64][][40]byte // candidates: a forged one fails AES-GCM
		txs     []string
		ds      []mirror.FoundDisclosure
	}
	grants := map[log.ID]*grantIn{}
	var order []*grantIn
	var maxSeq uint64
	for _, d := range ds {
		id := log.ID(d.D.Grant)
		gi := grants[id]
		if gi == nil {
			// Bound to the grantor that signed the disclosure (and the
			// segments Rebuild checks below), its log and the grant: a
			// re-signed copy fails here.
			sk, err := crypto.UnwrapBoundShareKey(w.PrivateKey(), d.D.ShareKey, crypto.ShareBinding{Grantor: grantor, LogID: logID, Grant: d.D.Grant})
			if errors.Is(err, crypto.ErrUnboundShareKey) {
				err = fmt.Errorf("%w: refused, since another wallet could re-sign it as its own; the grantor can revoke it and grant again", err)
			}
			if err != nil {
				reject(d.TxID, id, err)
				continue
			}
			wr, err := crypto.NewWrapper(sk)
			clear(sk)
			if err != nil {
				reject(d.TxID, id, err)
				continue
			}
			gi = &grantIn{id: id, wrapped: d.D.ShareKey, w: wr, keys: map[uint64][][40]byte{}}
			grants[id] = gi
			order = append(order, gi)
		} else if !bytes.Equal(gi.wrapped, d.D.ShareKey) {
			reject(d.TxID, id, fmt.Errorf("%w: a second share key for one grant", mirror.ErrDisclosure))
			continue
		}
		gi.ds = append(gi.ds, d)
		maxSeq = max(maxSeq, d.D.Keys[len(d.D.Keys)-1].Seq)
	}
	if len(order) == 0 {
		return nil, rejected
	}
	rejectAll := func(err error) (*receivedLog, []RejectedShare) {
		for _, gi := range order {
			for _, d := range gi.ds {
				reject(d.TxID, gi.id, err)
			}
		}
		return nil, rejected
	}
	// The grantor's log, verified like a rebuild: signatures, owner,
	// Merkle roots, chain, then the anchored checkpoint.
	rl := &receivedLog{Grantor: grantor, LogID: mirror.LogIDHex(logID), raws: map[uint64][]byte{}}
	var hashes []log.Hash
	_, err := mirror.Rebuild(ctx, mirror.RebuildOptions{
		Gateway: cl, Owner: grantor, LogID: logID, VerifyRecord: verifyChainRecord,
	}, func(r mirror.Record) error {
		hashes = append(hashes, log.Hash(r.Hash()))
		if r.Seq <= maxSeq {
			rl.raws[r.Seq] = r.Raw
		}
		return nil
	})
	if err != nil {
		return rejectAll(fmt.Errorf("grantor's log: %w", err))
	}
	if len(hashes) == 0 {
		return rejectAll(fmt.Errorf("the grantor has no segments of log %s", rl.LogID))
	}
	if uint64(len(hashes)) < maxSeq {
		return rejectAll(fmt.Errorf("grantor's log ends at %d, before the disclosed event %d", len(hashes), maxSeq))
	}
	cp, err := s.checkGrantorLog(ctx, cl, grantor, logID, hashes)
	if err != nil {
		return rejectAll(fmt.Errorf("grantor's log: %w", err))
	}
	// Each disclosure is used only if every key in it opens its event
	// (AES-GCM over the header the chain vouches for): one altered or
	// forged by the grantor is rejected whole, the others still count.
	for _, gi := range order {
		for _, d := range gi.ds {
			var bad error
			for _, k := range d.D.Keys {
				raw, ok := rl.raws[k.Seq]
				if !ok {
					bad = fmt.Errorf("disclosed event %d is not in the grantor's log", k.Seq)
					break
				}
				if err := openDisclosed(raw, gi.w, k.Wrapped); err != nil {
					bad = fmt.Errorf("disclosed event %d: %w", k.Seq, err)
					break
				}
			}
			if bad != nil {
				reject(d.TxID, gi.id, bad)
				continue
			}
			gi.txs = append(gi.txs, d.TxID)
			for _, k := range d.D.Keys {
				gi.keys[k.Seq] = append(gi.keys[k.Seq], k.Wrapped)
			}
		}
	}
	keep := map[uint64]bool{}
	for _, gi := range order {
		if len(gi.txs) == 0 {
			continue
		}
		g, err := receiveGrant(rl, gi.id, gi.wrapped, gi.w, gi.keys, w.Address())
		if err != nil {
			reject(strings.Join(gi.txs, ","), gi.id, err)
			continue
		}
		g.Grantor, g.LogID, g.TxIDs, g.Checkpoint = grantor, rl.LogID, gi.txs, cp
		for _, k := range g.Keys {
			keep[k.Seq] = true
		}
		rl.Grants = append(rl.Grants, *g)
	}
	for seq := range rl.raws {
		if !keep[seq] {
			delete(rl.raws, seq)
		}
	}
	sort.Slice(rl.Grants, func(i, j int) bool { return rl.Grants[i].Seq < rl.Grants[j].Seq })
	return rl, rejected
}

// openDisclosed checks that a disclosed key opens raw.
func openDisclosed(raw []byte, w *crypto.Wrapper, wk [40]byte) error {
	dek := make([]byte, crypto.KeySize)
	defer clear(dek)
	if err := w.Unwrap(dek, wk[:]); err != nil {
		return err
	}
	_, err := log.DecryptWithDEK(raw, dek)
	return err
}

// checkGrantorLog checks the fetched log against the newest checkpoint the
// grantor anchored (the rebuild's check).
func (s *Store) checkGrantorLog(ctx context.Context, cl mirror.Gateway, grantor string, logID [16]byte, hashes []log.Hash) (RebuildCheckpoint, error) {
	dir, err := os.MkdirTemp(s.st.Dir, "shared-tree-")
	if err != nil {
		return RebuildCheckpoint{}, err
	}
	defer os.RemoveAll(dir)
	tree, err := log.OpenTree(dir)
	if err != nil {
		return RebuildCheckpoint{}, err
	}
	defer tree.Close()
	if err := tree.Append(hashes); err != nil {
		return RebuildCheckpoint{}, err
	}
	return checkRebuilt(ctx, cl, grantor, logID, tree, uint64(len(hashes)))
}

// receiveGrant decrypts one grant and what was disclosed with it: the
// grant event (which must name this wallet and carry the share key the
// disclosure did), its chunks, and later tombstones and its revoke.
func receiveGrant(rl *receivedLog, id log.ID, wrapped []byte, w *crypto.Wrapper, keys map[uint64][][40]byte, me string) (*receivedGrant, error) {
	open1 := func(seq uint64, wk [40]byte) (*log.Event, error) {
		raw, ok := rl.raws[seq]
		if !ok {
			return nil, fmt.Errorf("event %d is not in the grantor's log", seq)
		}
		dek := make([]byte, crypto.KeySize)
		defer clear(dek)
		if err := w.Unwrap(dek, wk[:]); err != nil {
			return nil, fmt.Errorf("event %d: data key: %w", seq, err)
		}
		return log.DecryptWithDEK(raw, dek)
	}
	// open tries each disclosed key of seq: the grantor's chain vouches for
	// the event, AES-GCM for the key.
	open := func(seq uint64, wks [][40]byte) (*log.Event, error) {
		var first error
		for _, wk := range wks {
			ev, err := open1(seq, wk)
			if err == nil {
				return ev, nil
			}
			if first == nil {
				first = err
			}
		}
		if first == nil {
			first = fmt.Errorf("event %d: no key disclosed", seq)
		}
		return nil, first
	}
	seqs := make([]uint64, 0, len(keys))
	for seq := range keys {
		seqs = append(seqs, seq)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	var gev *log.Event
	var g *log.ShareGrant
	for _, seq := range seqs {
		h, err := log.DecodeHeader(rl.raws[seq])
		if err == nil && h.ID == id {
			if gev, err = open(seq, keys[seq]); err != nil {
				return nil, fmt.Errorf("grant: %w", err)
			}
			break
		}
	}
	if gev == nil {
		return nil, fmt.Errorf("grant %s: its event is not among the disclosed ones", id)
	}
	g, ok := gev.Body.(*log.ShareGrant)
	switch {
	case !ok:
		return nil, fmt.Errorf("grant %s: event %d is a %s", id, gev.Seq, gev.Type)
	case g.Grantee != me:
		return nil, fmt.Errorf("grant %s: addressed to %s, not this wallet", id, g.Grantee)
	case !bytes.Equal(g.ShareKey, wrapped):
		return nil, fmt.Errorf("grant %s: %w: the disclosure's share key is not the grant's", id, mirror.ErrDisclosure)
	}
	granted := map[string]bool{}
	for _, c := range g.Chunks {
		granted[c] = true
	}
	type chunk struct {
		seq     uint64
		id      string
		session string
		time    int64
		wrapped []byte
	}
	var chunks []chunk
	// A chunk edited before the grant is granted as it reads now: its key
	// is the edit event's.
	addChunk := func(seq uint64, wk [40]byte) error {
		ev, err := open1(seq, wk)
		if err != nil {
			return fmt.Errorf("grant %s: %w", id, err)
		}
		sb := ev.Chunk()
		if sb == nil || !granted[sb.ChunkID] || ev.Seq >= gev.Seq {
			return fmt.Errorf("grant %s: event %d is not a granted chunk", id, seq)
		}
		chunks = append(chunks, chunk{seq, sb.ChunkID, sb.Session, sb.Time, append([]byte(nil), wk[:]...)})
		return nil
	}
	for _, k := range g.Keys {
		if err := addChunk(k.Seq, k.Wrapped); err != nil {
			return nil, err
		}
	}
	rg := &receivedGrant{ReceivedShare: ReceivedShare{Grant: id, Seq: gev.Seq, Time: gev.Time, Note: g.Note, Follow: g.Follow,
		Status: "active", Chunks: []string{}}, ShareKey: wrapped}
	hidden := map[string]bool{}
	// A v3 grant lists its chunks' events; their DEKs come in the
	// disclosures. One not disclosed was tombstoned and shredded before
	// the grant was first pushed: the grantee knows only its id, hidden.
	inGrant := map[uint64]bool{}
	for i, seq := range g.Seqs {
		inGrant[seq] = true
		if _, ok := keys[seq]; !ok {
			rg.Hidden = append(rg.Hidden, g.Chunks[i])
			continue
		}
		var err error
		for _, wk := range keys[seq] { // the key that opens it
			if err = addChunk(seq, wk); err == nil {
				break
			}
		}
		if err != nil {
			return nil, err
		}
	}
	for _, seq := range seqs {
		if seq < gev.Seq && len(g.Seqs) != 0 && !inGrant[seq] {
			return nil, fmt.Errorf("grant %s: event %d is not a granted chunk", id, seq)
		}
	}
	for _, seq := range seqs {
		if seq <= gev.Seq {
			continue
		}
		ev, err := open(seq, keys[seq])
		if err != nil {
			return nil, fmt.Errorf("grant %s: %w", id, err)
		}
		switch b := ev.Body.(type) {
		case *log.Store:
			// A chunk stored later in a followed session, disclosed before
			// the revoke; anything else is not this grant's to give.
			if !g.Follow || rg.Status == "revoked" || !inStrings(g.Sessions, b.Session) {
				return nil, fmt.Errorf("grant %s: event %d is not in the grant's scope", id, seq)
			}
			k := keys[seq][0]
			for _, c := range keys[seq] { // the key that opened it
				if openDisclosed(rl.raws[seq], w, c) == nil {
					k = c
					break
				}
			}
			chunks = append(chunks, chunk{seq, b.ChunkID, b.Session, b.Time, append([]byte(nil), k[:]...)})
		case *log.Tombstone:
			for _, c := range chunks {
				if projections.TombstoneMatches(b, c.id, c.session, c.time) {
					hidden[c.id] = true
				}
			}
		case *log.ShareRevoke:
			if b.Grant == id {
				rg.Status = "revoked"
			}
		}
	}
	for _, c := range chunks {
		if hidden[c.id] {
			rg.Hidden = append(rg.Hidden, c.id)
			continue
		}
		rg.Chunks = append(rg.Chunks, c.id)
		rg.Keys = append(rg.Keys, receivedKey{Seq: c.seq, Wrapped: c.wrapped})
	}
	return rg, nil
}

// writeSharedArea replaces the shared area with logs: built beside it,
// then swapped in by renames, so a crash leaves the old area or the new
// one (loadSharedArea falls back to the old one if the swap was cut).
func writeSharedArea(dir string, logs []*receivedLog) error {
	tmp, old := dir+".new", dir+".old"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	for _, rl := range logs {
		gd := filepath.Join(tmp, rl.Grantor)
		if err := os.MkdirAll(gd, 0o700); err != nil {
			return err
		}
		b, err := json.MarshalIndent(rl, "", "  ")
		if err != nil {
			return err
		}
		if err := fsutil.WriteFileAtomic(filepath.Join(gd, rl.LogID+".json"), b, 0o400); err != nil {
			return err
		}
		seqs := make([]uint64, 0, len(rl.raws))
		for seq := range rl.raws {
			seqs = append(seqs, seq)
		}
		sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
		var ev []byte
		for _, seq := range seqs {
			ev = binary.AppendUvarint(ev, uint64(len(rl.raws[seq])))
			ev = append(ev, rl.raws[seq]...)
		}
		if err := fsutil.WriteFileAtomic(filepath.Join(gd, rl.LogID+".events"), ev, 0o400); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return err
	}
	if err := fsutil.SyncDir(tmp); err != nil {
		return err
	}
	if err := os.RemoveAll(old); err != nil {
		return err
	}
	if err := os.Rename(dir, old); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return err
	}
	if err := fsutil.SyncDir(filepath.Dir(dir)); err != nil {
		return err
	}
	return os.RemoveAll(old)
}

// loadSharedArea reads the shared area (no keys needed), sorted by grantor
// and log id, with each log's events.
func loadSharedArea(dir string) ([]*receivedLog, error) {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(dir + ".old"); err == nil {
			dir += ".old" // a swap cut short: the previous area is whole
		}
	}
	grantors, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read shared area: %w", err)
	}
	var out []*receivedLog
	for _, gd := range grantors { // ReadDir sorts by name
		if !gd.IsDir() {
			continue
		}
		files, err := os.ReadDir(filepath.Join(dir, gd.Name()))
		if err != nil {
			return nil, fmt.Errorf("read shared area: %w", err)
		}
		for _, f := range files {
			if !strings.HasSuffix(f.Name(), ".json") {
				continue
			}
			p := filepath.Join(dir, gd.Name(), f.Name())
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("read shared area: %w", err)
			}
			rl := &receivedLog{}
			if err := json.Unmarshal(b, rl); err != nil {
				return nil, fmt.Errorf("read shared area %s: %v: %w", p, err, log.ErrMalformed)
			}
			evs, err := os.ReadFile(strings.TrimSuffix(p, ".json") + ".events")
			if err != nil {
				return nil, fmt.Errorf("read shared area: %w", err)
			}
			rl.raws = map[uint64][]byte{}
			for len(evs) > 0 {
				n, k := binary.Uvarint(evs)
				if k <= 0 || n < log.HeaderSize || n > uint64(len(evs)-k) {
					return nil, fmt.Errorf("read shared area %s: %w: bad framing", p, log.ErrMalformed)
				}
				raw := evs[k : k+int(n)]
				h, err := log.DecodeHeader(raw)
				if err != nil {
					return nil, fmt.Errorf("read shared area %s: %w", p, err)
				}
				rl.raws[h.Seq] = raw
				evs = evs[k+int(n):]
			}
			out = append(out, rl)
		}
	}
	return out, nil
}

// keepRejected adds to logs the grants of the old area that this pull did
// not receive because what it found of them was rejected (a tampered
// disclosure, a grantor's log that no longer verifies): a rejected pull
// keeps the last verified state of a grant instead of wiping it. A grant
// that is simply no longer found is dropped, as before. An old grant whose
// events differ from the ones this pull verified (a forked grantor log) is
// not kept.
func keepRejected(logs, old []*receivedLog, rejected []RejectedShare) ([]*receivedLog, int) {
	if len(rejected) == 0 {
		return logs, 0
	}
	hit := func(grantor string, grant log.ID) bool {
		for _, r := range rejected {
			if r.Grantor == "" || (r.Grantor == grantor && (r.Grant == "" || r.Grant == grant.String())) {
				return true
			}
		}
		return false
	}
	kept := 0
	for _, o := range old {
		var cur *receivedLog
		for _, rl := range logs {
			if rl.Grantor == o.Grantor && rl.LogID == o.LogID {
				cur = rl
			}
		}
	grants:
		for _, g := range o.Grants {
			if !hit(o.Grantor, g.Grant) {
				continue
			}
			if cur != nil {
				for _, ng := range cur.Grants {
					if ng.Grant == g.Grant {
						continue grants
					}
				}
				for _, k := range g.Keys {
					if raw, ok := cur.raws[k.Seq]; ok && !bytes.Equal(raw, o.raws[k.Seq]) {
						continue grants
					}
				}
			}
			if cur == nil {
				cur = &receivedLog{Grantor: o.Grantor, LogID: o.LogID, raws: map[uint64][]byte{}}
				logs = append(logs, cur)
			}
			for _, k := range g.Keys {
				cur.raws[k.Seq] = o.raws[k.Seq]
			}
			cur.Grants = append(cur.Grants, g)
			sort.Slice(cur.Grants, func(i, j int) bool { return cur.Grants[i].Seq < cur.Grants[j].Seq })
			kept++
		}
	}
	return logs, kept
}

// sortedLogs orders logs as loadSharedArea does: by grantor, then log id.
func sortedLogs(logs []*receivedLog) []*receivedLog {
	out := append([]*receivedLog(nil), logs...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Grantor != out[j].Grantor {
			return out[i].Grantor < out[j].Grantor
		}
		return out[i].LogID < out[j].LogID
	})
	return out
}
