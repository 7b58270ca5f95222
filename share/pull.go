package share

import (
	"bytes"
	"context"
	"crypto/rsa"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/fsutil"
	"github.com/unlimitedcontext/ucl/internal/mirror"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/proof"
)

// areaDir is the per-grantor area of received shares (DIR/shared).
const areaDir = "shared"

// Rejected is a disclosure or a grant that did not verify.
type Rejected struct {
	TxID    string `json:"tx_id,omitempty"`
	Grantor string `json:"grantor,omitempty"`
	Grant   string `json:"grant,omitempty"`
	Reason  string `json:"reason"`
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
	Received
	ShareKey []byte        `json:"share_key"`
	Keys     []receivedKey `json:"keys"`
}

type receivedKey struct {
	Seq     uint64 `json:"seq"`
	Wrapped []byte `json:"wrapped"`
}

// Fetched is what a pull found for this wallet: each grantor's log
// verified, with the grants it received, and what was rejected.
type Fetched struct {
	logs     []*receivedLog
	Rejected []Rejected
}

// Fetch finds the disclosures addressed to the wallet me (priv its key),
// verifies each grantor's log like a rebuild does and decrypts what the
// grants disclose. A grant or a grantor's log that does not verify is
// left out and listed in Rejected; the error is for the lookup itself.
// Nothing is written but temporary Merkle trees under env.Dir.
func Fetch(ctx context.Context, env Env, cl mirror.Gateway, priv *rsa.PrivateKey, me string) (*Fetched, error) {
	found, rejected, err := mirror.FetchDisclosures(ctx, cl, me)
	if err != nil {
		return nil, err
	}
	f := &Fetched{}
	for _, r := range rejected {
		f.Rejected = append(f.Rejected, Rejected{TxID: r.TxID, Reason: r.Err.Error()})
	}
	for i := 0; i < len(found); {
		j := i
		for j < len(found) && found[j].Grantor == found[i].Grantor && found[j].Meta.LogID == found[i].Meta.LogID {
			j++
		}
		rl, rej := receiveLog(ctx, env, cl, priv, me, found[i:j])
		f.Rejected = append(f.Rejected, rej...)
		if rl != nil && len(rl.Grants) > 0 {
			f.logs = append(f.logs, rl)
		}
		i = j
	}
	return f, nil
}

// Replaced is what Replace made of the shared area.
type Replaced struct {
	Grants []Received // in the area now, by grantor, log id and seq
	// Kept counts the grants kept as the last pull verified them because
	// this pull rejected what it found of them.
	Kept int
	// Rebuild: the shared sequence did not only grow (or there was none),
	// so the shared projections must be rebuilt from scratch: the text of
	// chunks hidden since the last pull must not linger in the old files'
	// free pages.
	Rebuild bool
}

// Replace writes what f received as the shared area of env.Dir, keeping
// the last verified state of each grant f rejected (a grant whose
// disclosures did not verify this time). The caller serialises it with
// every reader of the area.
func Replace(env Env, f *Fetched, priv *rsa.PrivateKey) (*Replaced, error) {
	dir := env.path(areaDir)
	logs := f.logs
	res := &Replaced{Grants: []Received{}}
	// The chain of what was shared before: kept projections are reused
	// only if the new area extends it. A damaged old area is only replaced.
	oldSrc := &Source{}
	if oldArea, err := loadArea(dir); err == nil {
		if src, err := buildSource(oldArea, priv); err == nil {
			oldSrc = src
			logs, res.Kept = keepRejected(logs, oldArea, f.Rejected)
		}
	}
	if err := writeArea(dir, logs); err != nil {
		return nil, fmt.Errorf("pull shares: %w", err)
	}
	for _, rl := range logs {
		for _, g := range rl.Grants {
			res.Grants = append(res.Grants, g.Received)
		}
	}
	newSrc, err := buildSource(sortedLogs(logs), priv)
	if err != nil {
		return res, err
	}
	res.Rebuild = len(oldSrc.items) == 0 || !newSrc.extends(oldSrc)
	return res, nil
}

// Area lists the grants of the shared area of env.Dir, as of the last
// pull (no keys needed).
func Area(env Env) ([]Received, error) {
	area, err := loadArea(env.path(areaDir))
	if err != nil {
		return nil, err
	}
	var out []Received
	for _, rl := range area {
		for _, g := range rl.Grants {
			out = append(out, g.Received)
		}
	}
	return out, nil
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
func receiveLog(ctx context.Context, env Env, cl mirror.Gateway, priv *rsa.PrivateKey, me string, ds []mirror.FoundDisclosure) (*receivedLog, []Rejected) {
	grantor, logID := ds[0].Grantor, ds[0].Meta.LogID
	var rejected []Rejected
	reject := func(tx string, grant log.ID, err error) {
		r := Rejected{TxID: tx, Grantor: grantor, Reason: err.Error()}
		if !grant.IsZero() {
			r.Grant = grant.String()
		}
		rejected = append(rejected, r)
	}
	type grantIn struct {
		id      log.ID
		wrapped []byte // the share key, RSA-wrapped
		w       *crypto.Wrapper
		keys    map[uint64][][40]byte // candidates: a forged one fails the AEAD
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
			sk, err := crypto.UnwrapBoundShareKey(priv, d.D.ShareKey, crypto.ShareBinding{Grantor: grantor, LogID: logID, Grant: d.D.Grant})
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
	rejectAll := func(err error) (*receivedLog, []Rejected) {
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
	cp, err := checkGrantorLog(ctx, env.Dir, cl, grantor, logID, hashes)
	if err != nil {
		return rejectAll(fmt.Errorf("grantor's log: %w", err))
	}
	// Each disclosure is used only if every key in it opens its event
	// (the AEAD over the header the chain vouches for): one altered or
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
		g, err := receiveGrant(rl, gi.id, gi.wrapped, gi.w, gi.keys, me)
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
func checkGrantorLog(ctx context.Context, storeDir string, cl mirror.Gateway, grantor string, logID [16]byte, hashes []log.Hash) (proof.LogCheck, error) {
	dir, err := os.MkdirTemp(storeDir, "shared-tree-")
	if err != nil {
		return proof.LogCheck{}, err
	}
	defer os.RemoveAll(dir)
	tree, err := log.OpenTree(dir)
	if err != nil {
		return proof.LogCheck{}, err
	}
	defer tree.Close()
	if err := tree.Append(hashes); err != nil {
		return proof.LogCheck{}, err
	}
	return proof.CheckLog(ctx, cl, grantor, logID, tree, uint64(len(hashes)))
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
	// the event, the AEAD for the key.
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
	rg := &receivedGrant{Received: Received{Grant: id, Seq: gev.Seq, Time: gev.Time, Note: g.Note, Follow: g.Follow,
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

// writeArea replaces the shared area with logs: built beside it,
// then swapped in by renames, so a crash leaves the old area or the new
// one (loadArea falls back to the old one if the swap was cut).
func writeArea(dir string, logs []*receivedLog) error {
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

// loadArea reads the shared area (no keys needed), sorted by grantor
// and log id, with each log's events.
func loadArea(dir string) ([]*receivedLog, error) {
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
func keepRejected(logs, old []*receivedLog, rejected []Rejected) ([]*receivedLog, int) {
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

// sortedLogs orders logs as loadArea does: by grantor, then log id.
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
