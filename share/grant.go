package share

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/fsutil"
	"github.com/unlimitedcontext/ucl/internal/mirror"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/proof"
)

// The errors of sharing, returned by the engine's Share* methods (their
// codes and classes are in package ucl's errors.go).
var (
	// ErrBadAddress is returned when a grantee is not an Arweave address
	// (43 characters of base64url).
	ErrBadAddress = errors.New("ucl: malformed Arweave address")
	// ErrNoGranteeKey is returned when no RSA public key is known for a
	// grantee: the gateway knows no transaction from the address, or the
	// key given does not hash to it.
	ErrNoGranteeKey = errors.New("ucl: no known public key for the address")
	// ErrEmptyScope is returned by the engine's ShareGrant when the scope
	// names nothing or matches no live chunk; nothing is written.
	ErrEmptyScope = errors.New("ucl: share scope matches no live chunk")
	// ErrUnknownGrant is returned by Revoke (the engine's ShareRevoke)
	// when the id is not an active grant of this store.
	ErrUnknownGrant = errors.New("ucl: no active share grant with that id")
	// ErrShareRejected is returned by the engine's SharePull when a grant
	// or the grantor's log did not verify; the result lists what was
	// rejected and what else was received.
	ErrShareRejected = errors.New("ucl: a share failed verification")
)

// RevokeNote says what a revoke cannot do.
const RevokeNote = "note: the revoke stops this grant from now on (later tombstones of its chunks are no longer sent); " +
	"what was already shared stays readable by the recipient, who holds its keys."

// Given is a grant this store made (an element of ShareList's result).
type Given struct {
	Grant    log.ID   `json:"grant"`
	Seq      uint64   `json:"seq"`
	Time     int64    `json:"time_ms"`
	Grantee  string   `json:"grantee"`
	Sessions []string `json:"sessions,omitempty"`
	Chunks   int      `json:"chunks"`
	Note     string   `json:"note,omitempty"`
	Follow   bool     `json:"follow,omitempty"`
	// Status is active, revoked, or withheld: a grant made by an older
	// version whose body carries the key of a chunk a rotation shredded
	// since, never sent (grant again).
	Status string `json:"status"`
	// Followed counts the chunks disclosed since the grant because it
	// follows its session.
	Followed int `json:"followed,omitempty"`
	// Sent: the grant is disclosed to the grantee (its disclosure posted
	// by a push); false until the next sync.
	Sent bool `json:"sent"`
}

// Received is a grant another wallet made to this one, as of the last
// pull (an element of ShareList's and SharePull's results, and the head
// of a grant in the shared area).
type Received struct {
	Grant   log.ID   `json:"grant"`
	Grantor string   `json:"grantor"`
	LogID   string   `json:"log_id"`
	Seq     uint64   `json:"seq"`
	Time    int64    `json:"time_ms"`
	Note    string   `json:"note,omitempty"`
	Follow  bool     `json:"follow,omitempty"`
	Status  string   `json:"status"` // active or revoked
	Chunks  []string `json:"chunks"` // granted (or followed) and still live
	Hidden  []string `json:"hidden,omitempty"`
	TxIDs   []string `json:"tx_ids"`
	// Checkpoint says whether the grantor's log was checked against a
	// checkpoint the grantor anchored.
	Checkpoint proof.LogCheck `json:"checkpoint"`
}

// Env is what sharing works on: the grantor's log, its identity and the
// store directory that holds the disclosure bookkeeping (share-push.json)
// and the shared area (shared/).
type Env struct {
	Dir     string
	Log     *log.Log
	Address string   // this store's wallet address
	LogID   [16]byte // this store's log id
	// Warn receives what a push leaves out and why (nil: dropped).
	Warn func(string)
}

func (e Env) path(name string) string { return filepath.Join(e.Dir, name) }

func (e Env) warn(msg string) {
	if e.Warn != nil {
		e.Warn(msg)
	}
}

// Chunk is a chunk to grant: its id and the seq of the event that holds
// its current text.
type Chunk struct {
	ID  string
	Seq uint64
}

// Grant is a grant to make: the grantee's address and RSA key, the
// chunks, and the session a following grant follows.
type Grant struct {
	To      string
	Key     *rsa.PublicKey
	Session string
	Chunks  []Chunk
	Note    string
	Follow  bool
}

// NewGrant returns the share_grant event of g (v3): a fresh share key
// wrapped to the grantee and bound to this grantor, its log and the
// grant's event id (drawn here), and the chunks' events in log order.
// The caller appends it; the next push discloses it.
func NewGrant(env Env, g Grant) (log.Entry, error) {
	shareKey, err := crypto.NewKey()
	if err != nil {
		return log.Entry{}, err
	}
	// The grant's event id is drawn here: with the grantor's address and
	// log id it binds the share key (crypto.ShareBinding), so a copy of the
	// grant re-signed by another wallet does not unwrap at the grantee.
	var gid log.ID
	if _, err := rand.Read(gid[:]); err != nil {
		return log.Entry{}, err
	}
	wrapped, err := crypto.WrapBoundShareKey(g.Key, shareKey, Binding(env, gid))
	if err != nil {
		return log.Entry{}, err
	}
	b := &log.ShareGrant{Grantee: g.To, ShareKey: wrapped, Note: g.Note, OwnKey: shareKey, Follow: g.Follow}
	if g.Session != "" {
		b.Sessions = []string{g.Session}
	}
	// The grant names each chunk's event (v3), not its DEK: the DEKs go
	// to the grantee in the push's disclosure, and only for content that
	// still exists then (a rotation may shred a chunk tombstoned before
	// that push, and the grant must not keep a key to it).
	cs := append([]Chunk(nil), g.Chunks...)
	sort.Slice(cs, func(i, j int) bool { return cs[i].Seq < cs[j].Seq })
	for _, c := range cs {
		b.Chunks, b.Seqs = append(b.Chunks, c.ID), append(b.Seqs, c.Seq)
	}
	return log.Entry{ID: gid, Body: b}, nil
}

// Binding is what the grant gid of env's store binds its share key to.
func Binding(env Env, gid log.ID) crypto.ShareBinding {
	return crypto.ShareBinding{Grantor: env.Address, LogID: env.LogID, Grant: gid}
}

// grantAt reads the grant with event id id.
func grantAt(l *log.Log, id log.ID) (*log.Event, *log.ShareGrant, error) {
	seq, ok, err := l.Lookup(id)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, fmt.Errorf("grant %s: %w", id, ErrUnknownGrant)
	}
	raw, err := l.Raw(seq)
	if err != nil {
		return nil, nil, err
	}
	ev, err := l.Decrypt(raw)
	if err != nil {
		return nil, nil, err
	}
	g, ok := ev.Body.(*log.ShareGrant)
	if !ok {
		return nil, nil, fmt.Errorf("event %s is a %s, not a grant: %w", id, ev.Type, ErrUnknownGrant)
	}
	return ev, g, nil
}

// Revoke returns the share_revoke event of the active grant with event
// id grant (hex), and its grantee. What the grantee already received
// stays readable by it (RevokeNote).
func Revoke(ctx context.Context, env Env, grant, reason string) (log.Entry, string, error) {
	id, err := log.ParseID(grant)
	if err != nil {
		return log.Entry{}, "", fmt.Errorf("grant id %q: %w", grant, ErrUnknownGrant)
	}
	_, g, err := grantAt(env.Log, id)
	if err != nil {
		return log.Entry{}, "", err
	}
	given, err := GivenShares(ctx, env)
	if err != nil {
		return log.Entry{}, "", err
	}
	for _, gs := range given {
		if gs.Grant == id && gs.Status == "revoked" {
			return log.Entry{}, "", fmt.Errorf("grant %s is already revoked: %w", id, ErrUnknownGrant)
		}
	}
	return log.Entry{Body: &log.ShareRevoke{Grant: id, Grantee: g.Grantee, Reason: reason}}, g.Grantee, nil
}

// GivenShares lists the grants of env's log, with their state: revoked,
// sent (disclosed by a push), withheld.
func GivenShares(ctx context.Context, env Env) ([]Given, error) {
	l := env.Log
	var out []Given
	at := map[log.ID]int{}
	// Headers say the type: only grants and revokes are decrypted.
	err := l.Records(ctx, 1, 0, func(r *log.Record) error {
		if r.Header.Type != log.TypeShareGrant && r.Header.Type != log.TypeShareRevoke {
			return nil
		}
		ev, err := l.Decrypt(r.Raw)
		if errors.Is(err, log.ErrShredded) && r.Header.Type == log.TypeStore {
			// Tombstoned and erased by a key rotation before any push
			// disclosed it: gone, for the grantee too.
			return nil
		}
		if err != nil {
			return err
		}
		switch b := ev.Body.(type) {
		case *log.ShareGrant:
			at[ev.ID] = len(out)
			out = append(out, Given{Grant: ev.ID, Seq: ev.Seq, Time: ev.Time, Grantee: b.Grantee,
				Sessions: b.Sessions, Chunks: len(b.Chunks), Note: b.Note, Follow: b.Follow, Status: "active"})
		case *log.ShareRevoke:
			if i, ok := at[b.Grant]; ok {
				out[i].Status = "revoked"
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	st, err := loadSharePush(env)
	if err != nil {
		return nil, err
	}
	for i := range out {
		for _, g := range st.Grants {
			if g.ID == out[i].Grant && len(g.TxIDs) > 0 {
				out[i].Sent, out[i].Followed = true, len(g.Followed)
			}
			if g.ID == out[i].Grant && g.Withheld && out[i].Status == "active" {
				out[i].Status = "withheld"
			}
		}
	}
	return out, nil
}

// sharePushFile records what Push has disclosed to grantees.
const sharePushFile = "share-push.json"

// sharePush is the grantor's disclosure bookkeeping. Losing it (a store
// rebuilt from Arweave) only makes the next push disclose again what was
// disclosed: the grantee ignores repeats.
type sharePush struct {
	Scanned uint64          `json:"scanned"` // events 1..Scanned were looked at
	Grants  []sharePushItem `json:"grants"`
}

type sharePushItem struct {
	ID        log.ID `json:"id"`
	Seq       uint64 `json:"seq"`
	Grantee   string `json:"grantee"`
	Disclosed uint64 `json:"disclosed"` // events up to this seq are dealt with
	Closed    bool   `json:"closed"`    // revoked, its revoke disclosed
	Follow    bool   `json:"follow,omitempty"`
	// Followed are the chunks disclosed because the grant follows its
	// sessions (their tombstones are disclosed too).
	Followed []followedChunk `json:"followed,omitempty"`
	// Granted are the granted chunks as read at the first push that saw
	// the grant: a key rotation may shred some later (tombstoned), and
	// their tombstones must still reach the grantee.
	Granted []followedChunk `json:"granted,omitempty"`
	TxIDs   []string        `json:"tx_ids,omitempty"`
	// Withheld: a grant of the v1/v2 format (its body carries its chunks'
	// DEKs) found, at its first disclosure, to name a chunk a key
	// rotation had shredded; it is never disclosed (Closed is set too).
	Withheld bool `json:"withheld,omitempty"`
}

func loadSharePush(env Env) (*sharePush, error) {
	st := &sharePush{}
	b, err := os.ReadFile(env.path(sharePushFile))
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, st); err != nil {
		// Rescanning costs a repeat disclosure, never a lost one.
		return &sharePush{}, nil
	}
	return st, nil
}

func saveSharePush(env Env, st *sharePush) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(env.path(sharePushFile), b, 0o600)
}

// disclose posts, for every grant among events 1..covered, the DEKs its
// grantee needs and does not have: the grant itself, then tombstones that
// remove granted chunks and the grant's revoke. Only mirrored events are
// disclosed (the grantee reads them from the segments). It returns how
// many disclosures it posted. The engine's push calls it after mirroring
// events 1..covered, with the vault key open.
func Disclose(ctx context.Context, env Env, cl mirror.Gateway, covered uint64) (int, error) {
	l := env.Log
	st, err := loadSharePush(env)
	if err != nil {
		return 0, err
	}
	if covered <= st.Scanned {
		return 0, nil
	}
	type found struct {
		seq  uint64
		hash log.Hash
		body log.Body
	}
	var later []found // tombstones and revokes after st.Scanned
	known := map[log.ID]int{}
	for i, g := range st.Grants {
		known[g.ID] = i
	}
	// Headers say the type: store events are decrypted only while some
	// grant follows its sessions.
	following := false
	for _, g := range st.Grants {
		following = following || (g.Follow && !g.Closed)
	}
	err = l.Records(ctx, st.Scanned+1, covered, func(r *log.Record) error {
		switch r.Header.Type {
		case log.TypeShareGrant, log.TypeTombstone, log.TypeShareRevoke:
		case log.TypeStore:
			if !following {
				return nil
			}
		default:
			return nil
		}
		ev, err := l.Decrypt(r.Raw)
		if errors.Is(err, log.ErrShredded) && r.Header.Type == log.TypeStore {
			// Tombstoned and erased by a key rotation before any push
			// disclosed it: gone, for the grantee too.
			return nil
		}
		if err != nil {
			return err
		}
		switch b := ev.Body.(type) {
		case *log.ShareGrant:
			if _, ok := known[ev.ID]; !ok {
				known[ev.ID] = len(st.Grants)
				st.Grants = append(st.Grants, sharePushItem{ID: ev.ID, Seq: ev.Seq, Grantee: b.Grantee, Follow: b.Follow})
			}
			following = following || b.Follow
			later = append(later, found{ev.Seq, ev.Hash, b})
		case *log.Tombstone, *log.ShareRevoke:
			later = append(later, found{ev.Seq, ev.Hash, b})
		case *log.Store:
			// What following needs, without the content.
			t := b.Time
			if t == 0 {
				t = ev.Time
			}
			later = append(later, found{ev.Seq, ev.Hash, &log.Store{ChunkID: b.ChunkID, Session: b.Session, Time: t}})
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("disclose shares: %w", err)
	}
	posted := 0
	logID := env.LogID
	for i := range st.Grants {
		it := &st.Grants[i]
		if it.Closed || it.Disclosed >= covered {
			continue
		}
		gev, g, err := grantAt(l, it.ID)
		if err != nil {
			return posted, fmt.Errorf("disclose shares: %w", err)
		}
		if len(g.OwnKey) != log.ShareKeySize {
			// A grant without the grantor's copy of its key cannot be
			// disclosed; nothing else depends on it.
			it.Closed = true
			continue
		}
		// Granted chunks, read once a tombstone needs them. A granted chunk
		// a key rotation shredded (it was tombstoned) cannot be read: what
		// tombstone matching needs of it comes from it.Granted, recorded
		// at an earlier push, else only its id is known (g.Chunks) and
		// a tombstone matches it by id or by a granted session.
		var chunks []*log.Store
		var erased []string // shredded granted chunks known by id only
		readChunks := func() error {
			if chunks != nil {
				return nil
			}
			chunks = []*log.Store{}
			for _, f := range it.Followed {
				chunks = append(chunks, &log.Store{ChunkID: f.ID, Session: f.Session, Time: f.Time})
			}
			have := map[string]bool{}
			var granted []followedChunk
			for _, seq := range grantSeqs(g) {
				raw, err := l.Raw(seq)
				if err != nil {
					return err
				}
				ev, err := l.Decrypt(raw)
				if errors.Is(err, log.ErrShredded) {
					continue
				}
				if err != nil {
					return err
				}
				if sb := ev.Store(); sb != nil {
					c := *sb
					if c.Time == 0 {
						c.Time = ev.Time
					}
					chunks = append(chunks, &c)
					have[c.ChunkID] = true
					granted = append(granted, followedChunk{ID: c.ChunkID, Session: c.Session, Time: c.Time})
				}
			}
			for _, f := range it.Granted {
				if !have[f.ID] {
					chunks = append(chunks, &log.Store{ChunkID: f.ID, Session: f.Session, Time: f.Time})
					have[f.ID] = true
				}
			}
			for _, id := range g.Chunks {
				if !have[id] {
					erased = append(erased, id)
				}
			}
			if len(it.Granted) == 0 {
				it.Granted = granted
			}
			return nil
		}
		if len(it.Granted) == 0 {
			// Record the granted chunks while they can be read, for the
			// pushes after a rotation shreds some of them.
			if err := readChunks(); err != nil {
				return posted, fmt.Errorf("disclose shares: %w", err)
			}
		}
		var seqs []uint64
		var last log.Hash
		if it.Disclosed < gev.Seq {
			// The grant's first disclosure: with a v3 grant, the DEKs of
			// its chunks whose content exists (one a rotation shredded
			// is not sent: its tombstone is, below). A v1/v2 grant
			// carries its chunks' DEKs in its body: if a rotation has
			// shredded one of them, disclosing the grant would hand the
			// grantee a key to that chunk's ciphertext, so it is withheld.
			live, shredded, err := grantedLive(l, g)
			if err != nil {
				return posted, fmt.Errorf("disclose shares: %w", err)
			}
			if len(g.Seqs) == 0 && shredded > 0 {
				it.Closed, it.Withheld = true, true
				env.warn(fmt.Sprintf("grant %s to %s is not sent: it was made by an older version and carries the key of %d chunk(s) "+
					"a key rotation shredded since; grant again (a new grant sends only what exists)", it.ID, it.Grantee, shredded))
				if err := saveSharePush(env, st); err != nil {
					return posted, err
				}
				continue
			}
			if len(g.Seqs) != 0 {
				seqs = live
			}
			seqs, last = append(seqs, gev.Seq), gev.Hash
		}
		closed := false
		for _, f := range later {
			if f.seq <= gev.Seq || f.seq <= it.Disclosed || closed {
				continue
			}
			switch b := f.body.(type) {
			case *log.Tombstone:
				if err := readChunks(); err != nil {
					return posted, fmt.Errorf("disclose shares: %w", err)
				}
				match := false
				for _, c := range chunks {
					if projections.TombstoneMatches(b, c.ChunkID, c.Session, c.Time) {
						match = true
						break
					}
				}
				for _, id := range erased {
					match = match || inStrings(b.Chunks, id) || (b.Session != "" && inStrings(g.Sessions, b.Session))
				}
				if match {
					seqs, last = append(seqs, f.seq), f.hash
				}
			case *log.ShareRevoke:
				if b.Grant == it.ID {
					seqs, last, closed = append(seqs, f.seq), f.hash, true
				}
			case *log.Store:
				if g.Follow && inStrings(g.Sessions, b.Session) {
					if err := readChunks(); err != nil {
						return posted, fmt.Errorf("disclose shares: %w", err)
					}
					seqs, last = append(seqs, f.seq), f.hash
					chunks = append(chunks, b)
					it.Followed = append(it.Followed, followedChunk{ID: b.ChunkID, Session: b.Session, Time: b.Time})
				}
			}
		}
		if len(seqs) > 0 {
			w, err := crypto.NewWrapper(g.OwnKey)
			if err != nil {
				return posted, err
			}
			d := mirror.Disclosure{Grant: it.ID, ShareKey: g.ShareKey}
			for _, seq := range seqs {
				raw, err := l.Raw(seq)
				if err != nil {
					return posted, err
				}
				dek, err := l.DEK(raw)
				if err != nil {
					return posted, err
				}
				k := mirror.DisclosedKey{Seq: seq}
				err = w.Wrap(k.Wrapped[:], dek)
				clear(dek)
				if err != nil {
					return posted, err
				}
				d.Keys = append(d.Keys, k)
			}
			id, err := mirror.PostDisclosure(ctx, cl, mirror.DisclosureUpload{LogID: logID, Grantee: it.Grantee, LastHash: last, D: d})
			if err != nil {
				return posted, fmt.Errorf("disclose grant %s to %s: %w", it.ID, it.Grantee, err)
			}
			posted++
			it.TxIDs = append(it.TxIDs, id)
		}
		it.Disclosed, it.Closed = covered, closed
		if err := saveSharePush(env, st); err != nil {
			return posted, err
		}
	}
	st.Scanned = covered
	return posted, saveSharePush(env, st)
}

// grantSeqs returns the events of a grant's chunks: listed (v3) or those
// its keys are for (v1, v2).
func grantSeqs(g *log.ShareGrant) []uint64 {
	if len(g.Seqs) != 0 {
		return g.Seqs
	}
	seqs := make([]uint64, len(g.Keys))
	for i, k := range g.Keys {
		seqs[i] = k.Seq
	}
	return seqs
}

// grantedLive returns the events of a grant's chunks whose content exists
// (a DEK can be had for them), ascending, and how many a key rotation
// shredded.
func grantedLive(l *log.Log, g *log.ShareGrant) (live []uint64, shredded int, err error) {
	for _, seq := range grantSeqs(g) {
		raw, err := l.Raw(seq)
		if err != nil {
			return nil, 0, err
		}
		dek, err := l.DEK(raw)
		if errors.Is(err, log.ErrShredded) {
			shredded++
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		clear(dek)
		live = append(live, seq)
	}
	sort.Slice(live, func(i, j int) bool { return live[i] < live[j] })
	return live, shredded, nil
}

// followedChunk is what tombstone matching needs of a followed chunk.
type followedChunk struct {
	ID      string `json:"id"`
	Session string `json:"session,omitempty"`
	Time    int64  `json:"time_ms"`
}

func inStrings(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
