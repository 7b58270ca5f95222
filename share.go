package ucl

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/fsutil"
	"github.com/unlimitedcontext/ucl/internal/mirror"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
)

// Sharing (DESIGN.md §4). A grant is a share_grant event in the grantor's
// own log: a fresh share key, RSA-OAEP-wrapped to the grantee, and the
// granted chunks with their events (v3; v1/v2 grants carried the chunks'
// DEKs in the body). The grantee cannot read the grantor's log (its bodies
// are sealed under the grantor's vault key), so Push discloses to the
// grantee, in signed uploads tagged UC-Grantee (the disclosure format is in
// the internal/mirror package doc), the DEK of the grant event itself with
// those of its chunks whose content still exists, then of every later
// tombstone that removes a granted chunk and of the revoke. A chunk
// tombstoned and shredded by a key rotation before the grant's first push
// is never keyed to the grantee (it learns the id, hidden); an old-format
// grant carrying such a chunk's DEK is withheld, never disclosed. SharePull (sharepull.go) is the grantee's side.
//
// The share key is bound to the grantor (crypto.ShareBinding: the RSA-OAEP
// label names the grantor's address, log id and the grant's event id, drawn
// before the grant is appended). Anyone can re-post a grantor's public
// segments and disclosures under their own signature; the grantee unwraps
// with the signer it verified, so such a copy yields no key and is
// rejected. Grants of the unbound v1 format are refused at the grantee.
//
// A grant that follows its session (share_grant v2 flag) also covers the
// chunks stored in the session after it: each push discloses their DEKs
// under the grant's share key, in the same disclosures, until the revoke.
// They are not written as follow-up grant events in the log: the grant
// event records the intent, and the disclosures, signed by the wallet, are
// the record of what was sent.

var (
	// ErrBadAddress is returned when a grantee is not an Arweave address
	// (43 characters of base64url).
	ErrBadAddress = errors.New("ucl: malformed Arweave address")
	// ErrNoGranteeKey is returned when no RSA public key is known for a
	// grantee: the gateway knows no transaction from the address, or the
	// key given does not hash to it.
	ErrNoGranteeKey = errors.New("ucl: no known public key for the address")
	// ErrEmptyScope is returned by ShareGrant when the scope names nothing
	// or matches no live chunk; nothing is written.
	ErrEmptyScope = errors.New("ucl: share scope matches no live chunk")
	// ErrUnknownGrant is returned by ShareRevoke when the id is not an
	// active grant of this store.
	ErrUnknownGrant = errors.New("ucl: no active share grant with that id")
	// ErrShareRejected is returned by SharePull when a grant or the
	// grantor's log did not verify; the result lists what was rejected and
	// what else was received.
	ErrShareRejected = errors.New("ucl: a share failed verification")
)

// ShareRevokeNote says what a revoke cannot do.
const ShareRevokeNote = "note: the revoke stops this grant from now on (later tombstones of its chunks are no longer sent); " +
	"what was already shared stays readable by the recipient, who holds its keys."

// ShareGrantRequest names a grantee and a scope. Scope selectors combine
// like a tombstone's: chunks and documents are added; a session and a
// content-time range [Since, Until) select the live chunks matching both.
type ShareGrantRequest struct {
	To string `json:"to"` // the grantee's Arweave address
	// Key is the grantee's public key as a JWK (a wallet file or its public
	// half: "n" is used). Empty: the key is taken from the gateway (the
	// owner of any transaction of the address).
	Key       string   `json:"key,omitempty"`
	Gateway   string   `json:"gateway,omitempty"`
	Session   string   `json:"session,omitempty"`
	Chunks    []string `json:"chunks,omitempty"`
	Documents []string `json:"documents,omitempty"`
	Since     string   `json:"since,omitempty"`
	Until     string   `json:"until,omitempty"`
	Note      string   `json:"note,omitempty"`
	// Follow also grants the chunks stored in Session after the grant,
	// until it is revoked: each push discloses them to the grantee.
	Follow bool `json:"follow,omitempty"`
}

// ShareGrantResult is the appended grant.
type ShareGrantResult struct {
	Grant    log.ID   `json:"grant"`
	Seq      uint64   `json:"seq"`
	Hash     log.Hash `json:"hash"`
	Grantee  string   `json:"grantee"`
	KeyFrom  string   `json:"key_from"` // "gateway" or "given"
	Sessions []string `json:"sessions,omitempty"`
	Chunks   []string `json:"chunks"`
	Note     string   `json:"note,omitempty"`
	Follow   bool     `json:"follow,omitempty"`
}

// ShareRevokeRequest names a grant to revoke.
type ShareRevokeRequest struct {
	Grant  string `json:"grant"` // the grant event id (hex)
	Reason string `json:"reason,omitempty"`
}

// ShareRevokeResult is the appended revoke.
type ShareRevokeResult struct {
	Seq     uint64   `json:"seq"`
	ID      log.ID   `json:"id"`
	Hash    log.Hash `json:"hash"`
	Grant   log.ID   `json:"grant"`
	Grantee string   `json:"grantee"`
	Note    string   `json:"note"`
}

// ShareListRequest lists grants.
type ShareListRequest struct{}

// GivenShare is a grant this store made.
type GivenShare struct {
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

// ReceivedShare is a grant another wallet made to this one, as of the
// last pull.
type ReceivedShare struct {
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
	Checkpoint RebuildCheckpoint `json:"checkpoint"`
}

// ShareListResult lists given and received grants.
type ShareListResult struct {
	Given    []GivenShare    `json:"given"`
	Received []ReceivedShare `json:"received"`
}

// openEnd stands for "no end" in a scope given only a start.
const openEnd = 1<<63 - 1

// validAddress reports whether a is an Arweave address: base64url without
// padding of a 32-byte hash.
func validAddress(a string) bool {
	if len(a) != 43 {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(a)
	return err == nil && len(b) == 32
}

// granteeKey returns the grantee's RSA key: from the JWK given, else from
// the gateway; either way checked against the address.
func granteeKey(ctx context.Context, req ShareGrantRequest, gateway string) (*rsa.PublicKey, string, error) {
	if req.Key != "" {
		var jwk struct {
			N string `json:"n"`
		}
		if err := json.Unmarshal([]byte(req.Key), &jwk); err != nil || jwk.N == "" {
			return nil, "", fmt.Errorf("read grantee key: not a JWK with a modulus: %w", ErrBadRequest)
		}
		pk, err := arweave.PublicKeyFromOwner(jwk.N, req.To)
		if err != nil {
			return nil, "", fmt.Errorf("grantee key: %v: %w", err, ErrNoGranteeKey)
		}
		return pk, "given", nil
	}
	cl, err := newClient(gateway, nil)
	if err != nil {
		return nil, "", err
	}
	info, err := cl.FetchPublicKey(ctx, req.To)
	switch {
	case errors.Is(err, arweave.ErrNotFound):
		return nil, "", fmt.Errorf("%v: %w", err, ErrNoGranteeKey)
	case errors.Is(err, arweave.ErrOwnerMismatch):
		return nil, "", fmt.Errorf("%v: %w", err, ErrNoGranteeKey)
	case err != nil:
		return nil, "", err
	}
	return info.Key, "gateway", nil
}

// ShareGrant grants the live chunks of a scope to an Arweave address. The
// grant is mirrored, and disclosed to the grantee, by the next Push.
func (s *Store) ShareGrant(ctx context.Context, req ShareGrantRequest) (*ShareGrantResult, error) {
	if err := s.needKeys(); err != nil {
		return nil, err
	}
	if !validAddress(req.To) {
		return nil, fmt.Errorf("grantee %q: %w", req.To, ErrBadAddress)
	}
	ts := &log.Tombstone{Chunks: append([]string(nil), req.Chunks...), Session: req.Session}
	var err error
	if ts.From, err = parseTime("since", req.Since); err != nil {
		return nil, err
	}
	if ts.To, err = parseTime("until", req.Until); err != nil {
		return nil, err
	}
	if ts.From != 0 && ts.To == 0 {
		ts.To = openEnd
	}
	if ts.To != 0 && ts.To <= ts.From {
		return nil, badRequest("bad time range")
	}
	if len(ts.Chunks) == 0 && len(req.Documents) == 0 && ts.Session == "" && ts.To == 0 {
		return nil, fmt.Errorf("grant: %w: no session, chunk, document or time range given", ErrEmptyScope)
	}
	if req.Follow && req.Session == "" {
		return nil, badRequest("following needs a session to follow")
	}
	pub, from, err := granteeKey(ctx, req, s.gatewayFor(req.Gateway))
	if err != nil {
		return nil, err
	}
	s.lockProj()
	defer s.projMu.Unlock()
	set, err := s.caughtUpLocked(ctx, nil)
	if err != nil {
		return nil, err
	}
	if ts.Chunks, err = documentChunks(set, req.Documents, ts.Chunks); err != nil {
		if errors.Is(err, ErrNoDocument) {
			return nil, fmt.Errorf("grant: %w: %w", err, ErrEmptyScope)
		}
		return nil, err
	}
	ids, err := set.Timelines.Matches(ts)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		d := *ts
		if d.To == openEnd {
			d.From, d.To = 0, 0 // the open end is no date to print
		}
		what := describeTargets(&d)
		if d.From != ts.From {
			what = strings.TrimPrefix(strings.TrimSpace(what+" and content time from "+req.Since+" on"), "and ")
		}
		return nil, fmt.Errorf("grant %s: %w", what, ErrEmptyScope)
	}
	shareKey, err := crypto.NewKey()
	if err != nil {
		return nil, err
	}
	// The grant's event id is drawn here: with the grantor's address and
	// log id it binds the share key (crypto.ShareBinding), so a copy of the
	// grant re-signed by another wallet does not unwrap at the grantee.
	var gid log.ID
	if _, err := rand.Read(gid[:]); err != nil {
		return nil, err
	}
	wrapped, err := crypto.WrapBoundShareKey(pub, shareKey, s.shareBinding(gid))
	if err != nil {
		return nil, err
	}
	g := &log.ShareGrant{Grantee: req.To, ShareKey: wrapped, Note: req.Note, OwnKey: shareKey, Follow: req.Follow}
	if req.Session != "" {
		g.Sessions = []string{req.Session}
	}
	// The grant names each chunk's event (v3), not its DEK: the DEKs go
	// to the grantee in the push's disclosure, and only for content that
	// still exists then (a rotation may shred a chunk tombstoned before
	// that push, and the grant must not keep a key to it).
	type granted struct {
		id  string
		seq uint64
	}
	var gs []granted
	for _, id := range ids {
		c, ok, err := set.Timelines.Chunk(id)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("grant: chunk %s vanished: %w", id, ErrEmptyScope)
		}
		gs = append(gs, granted{id, c.Seq})
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].seq < gs[j].seq })
	for _, c := range gs {
		g.Chunks, g.Seqs = append(g.Chunks, c.id), append(g.Seqs, c.seq)
	}
	r, err := s.st.Log.Append(ctx, log.Entry{ID: gid, Body: g})
	if err != nil {
		return nil, err
	}
	s.notifyAppend()
	return &ShareGrantResult{Grant: r.ID, Seq: r.Seq, Hash: r.Hash, Grantee: req.To, KeyFrom: from,
		Sessions: g.Sessions, Chunks: ids, Note: req.Note, Follow: req.Follow}, nil
}

// shareBinding is what this store's grant gid binds its share key to.
func (s *Store) shareBinding(gid log.ID) crypto.ShareBinding {
	return crypto.ShareBinding{Grantor: s.st.Meta.WalletAddress, LogID: s.st.Meta.LogIDBytes(), Grant: gid}
}

// grantAt reads the grant with event id id.
func (s *Store) grantAt(id log.ID) (*log.Event, *log.ShareGrant, error) {
	seq, ok, err := s.st.Log.Lookup(id)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, fmt.Errorf("grant %s: %w", id, ErrUnknownGrant)
	}
	raw, err := s.st.Log.Raw(seq)
	if err != nil {
		return nil, nil, err
	}
	ev, err := s.st.Log.Decrypt(raw)
	if err != nil {
		return nil, nil, err
	}
	g, ok := ev.Body.(*log.ShareGrant)
	if !ok {
		return nil, nil, fmt.Errorf("event %s is a %s, not a grant: %w", id, ev.Type, ErrUnknownGrant)
	}
	return ev, g, nil
}

// ShareRevoke appends a revoke of a grant. What the grantee already
// received stays readable by it (ShareRevokeNote).
func (s *Store) ShareRevoke(ctx context.Context, req ShareRevokeRequest) (*ShareRevokeResult, error) {
	if err := s.needKeys(); err != nil {
		return nil, err
	}
	id, err := log.ParseID(req.Grant)
	if err != nil {
		return nil, fmt.Errorf("grant id %q: %w", req.Grant, ErrUnknownGrant)
	}
	_, g, err := s.grantAt(id)
	if err != nil {
		return nil, err
	}
	given, err := s.givenShares(ctx)
	if err != nil {
		return nil, err
	}
	for _, gs := range given {
		if gs.Grant == id && gs.Status == "revoked" {
			return nil, fmt.Errorf("grant %s is already revoked: %w", id, ErrUnknownGrant)
		}
	}
	r, err := s.st.Log.Append(ctx, log.Entry{Body: &log.ShareRevoke{Grant: id, Grantee: g.Grantee, Reason: req.Reason}})
	if err != nil {
		return nil, err
	}
	s.notifyAppend()
	return &ShareRevokeResult{Seq: r.Seq, ID: r.ID, Hash: r.Hash, Grant: id, Grantee: g.Grantee, Note: ShareRevokeNote}, nil
}

// givenShares scans the log for grants and revokes.
func (s *Store) givenShares(ctx context.Context) ([]GivenShare, error) {
	var out []GivenShare
	at := map[log.ID]int{}
	// Headers say the type: only grants and revokes are decrypted.
	err := s.st.Log.Records(ctx, 1, 0, func(r *log.Record) error {
		if r.Header.Type != log.TypeShareGrant && r.Header.Type != log.TypeShareRevoke {
			return nil
		}
		ev, err := s.st.Log.Decrypt(r.Raw)
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
			out = append(out, GivenShare{Grant: ev.ID, Seq: ev.Seq, Time: ev.Time, Grantee: b.Grantee,
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
	st, err := s.loadSharePush()
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

// ShareList lists the grants this store made (from its log) and those it
// received (as of the last SharePull).
func (s *Store) ShareList(ctx context.Context, req ShareListRequest) (*ShareListResult, error) {
	if err := s.needKeys(); err != nil {
		return nil, err
	}
	given, err := s.givenShares(ctx)
	if err != nil {
		return nil, err
	}
	s.sharedMu.Lock() // a pull swaps the area under it
	area, err := loadSharedArea(s.sharedDir())
	s.sharedMu.Unlock()
	if err != nil {
		return nil, err
	}
	res := &ShareListResult{Given: given, Received: []ReceivedShare{}}
	if res.Given == nil {
		res.Given = []GivenShare{}
	}
	for _, gl := range area {
		for _, g := range gl.Grants {
			res.Received = append(res.Received, g.ReceivedShare)
		}
	}
	return res, nil
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

func (s *Store) loadSharePush() (*sharePush, error) {
	st := &sharePush{}
	b, err := os.ReadFile(s.st.Path(sharePushFile))
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

func (s *Store) saveSharePush(st *sharePush) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(s.st.Path(sharePushFile), b, 0o600)
}

// disclose posts, for every grant among events 1..covered, the DEKs its
// grantee needs and does not have: the grant itself, then tombstones that
// remove granted chunks and the grant's revoke. Only mirrored events are
// disclosed (the grantee reads them from the segments). Called by Push
// under s.mirror.
func (s *Store) disclose(ctx context.Context, cl mirror.Gateway, covered uint64) (int, error) {
	if s.st.Keys == nil {
		return 0, nil
	}
	st, err := s.loadSharePush()
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
	err = s.st.Log.Records(ctx, st.Scanned+1, covered, func(r *log.Record) error {
		switch r.Header.Type {
		case log.TypeShareGrant, log.TypeTombstone, log.TypeShareRevoke:
		case log.TypeStore:
			if !following {
				return nil
			}
		default:
			return nil
		}
		ev, err := s.st.Log.Decrypt(r.Raw)
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
	logID := s.st.Meta.LogIDBytes()
	for i := range st.Grants {
		it := &st.Grants[i]
		if it.Closed || it.Disclosed >= covered {
			continue
		}
		gev, g, err := s.grantAt(it.ID)
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
				raw, err := s.st.Log.Raw(seq)
				if err != nil {
					return err
				}
				ev, err := s.st.Log.Decrypt(raw)
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
			live, shredded, err := s.grantedLive(g)
			if err != nil {
				return posted, fmt.Errorf("disclose shares: %w", err)
			}
			if len(g.Seqs) == 0 && shredded > 0 {
				it.Closed, it.Withheld = true, true
				s.opts.Warn(fmt.Sprintf("grant %s to %s is not sent: it was made by an older version and carries the key of %d chunk(s) "+
					"a key rotation shredded since; grant again (a new grant sends only what exists)", it.ID, it.Grantee, shredded))
				if err := s.saveSharePush(st); err != nil {
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
				raw, err := s.st.Log.Raw(seq)
				if err != nil {
					return posted, err
				}
				dek, err := s.dekOf(raw)
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
		if err := s.saveSharePush(st); err != nil {
			return posted, err
		}
	}
	st.Scanned = covered
	return posted, s.saveSharePush(st)
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
func (s *Store) grantedLive(g *log.ShareGrant) (live []uint64, shredded int, err error) {
	for _, seq := range grantSeqs(g) {
		raw, err := s.st.Log.Raw(seq)
		if err != nil {
			return nil, 0, err
		}
		dek, err := s.dekOf(raw)
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

// dekOf returns the data key of one of this log's events: wrapped in its
// header, or, once a key rotation wiped that epoch, in the newest rekey
// event naming it. Every DEK a grant or a disclosure carries comes from
// here; a shredded event has none (log.ErrShredded).
func (s *Store) dekOf(raw []byte) ([]byte, error) {
	return s.st.Log.DEK(raw)
}
