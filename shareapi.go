package ucl

import (
	"context"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/internal/mirror"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections/projstd"
	"github.com/unlimitedcontext/ucl/query"
	"github.com/unlimitedcontext/ucl/share"
)

// The sharing methods (DESIGN.md §4): grants in this store's own log, their
// disclosure to grantees by Push, and the grantee's pull. Package share
// holds the formats and the work; this file resolves scopes, appends, and
// keeps the projections of what others shared.

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

// ShareListResult lists given and received grants.
type ShareListResult struct {
	Given    []share.Given    `json:"given"`
	Received []share.Received `json:"received"`
}

// SharePullRequest fetches shares addressed to this store's wallet.
type SharePullRequest struct {
	Gateway  string   `json:"gateway,omitempty"`
	Progress Progress `json:"-"`
}

// SharePullResult is what a pull received.
type SharePullResult struct {
	Address  string           `json:"address"` // this wallet, the grantee
	Grants   []share.Received `json:"grants"`
	Chunks   int              `json:"chunks"` // shared chunks now searchable
	Rejected []share.Rejected `json:"rejected,omitempty"`
	// Kept counts the grants kept as the last pull verified them because
	// this pull rejected what it found of them.
	Kept int `json:"kept,omitempty"`
	// Digests are the shared projections' digests: the same grants give
	// the same digests on any device.
	Digests map[string]string `json:"digests,omitempty"`
}

// shareEnv is the seam package share works on: the log, this store's
// wallet address and log id, and its directory (the disclosure
// bookkeeping and the shared area live there).
func (s *Store) shareEnv() share.Env {
	return share.Env{Dir: s.st.Dir, Log: s.st.Log, Address: s.st.Meta.WalletAddress,
		LogID: s.st.Meta.LogIDBytes(), Warn: s.opts.Warn}
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
			return nil, "", fmt.Errorf("grantee key: %v: %w", err, share.ErrNoGranteeKey)
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
		return nil, "", fmt.Errorf("%v: %w", err, share.ErrNoGranteeKey)
	case errors.Is(err, arweave.ErrOwnerMismatch):
		return nil, "", fmt.Errorf("%v: %w", err, share.ErrNoGranteeKey)
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
		return nil, fmt.Errorf("grantee %q: %w", req.To, share.ErrBadAddress)
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
		return nil, fmt.Errorf("grant: %w: no session, chunk, document or time range given", share.ErrEmptyScope)
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
			return nil, fmt.Errorf("grant: %w: %w", err, share.ErrEmptyScope)
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
		return nil, fmt.Errorf("grant %s: %w", what, share.ErrEmptyScope)
	}
	gr := share.Grant{To: req.To, Key: pub, Session: req.Session, Note: req.Note, Follow: req.Follow}
	for _, id := range ids {
		c, ok, err := set.Timelines.Chunk(id)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("grant: chunk %s vanished: %w", id, share.ErrEmptyScope)
		}
		gr.Chunks = append(gr.Chunks, share.Chunk{ID: id, Seq: c.Seq})
	}
	e, err := share.NewGrant(s.shareEnv(), gr)
	if err != nil {
		return nil, err
	}
	r, err := s.st.Log.Append(ctx, e)
	if err != nil {
		return nil, err
	}
	s.notifyAppend()
	g := e.Body.(*log.ShareGrant)
	return &ShareGrantResult{Grant: r.ID, Seq: r.Seq, Hash: r.Hash, Grantee: req.To, KeyFrom: from,
		Sessions: g.Sessions, Chunks: ids, Note: req.Note, Follow: req.Follow}, nil
}

// ShareRevoke appends a revoke of a grant. What the grantee already
// received stays readable by it (share.RevokeNote).
func (s *Store) ShareRevoke(ctx context.Context, req ShareRevokeRequest) (*ShareRevokeResult, error) {
	if err := s.needKeys(); err != nil {
		return nil, err
	}
	e, grantee, err := share.Revoke(ctx, s.shareEnv(), req.Grant, req.Reason)
	if err != nil {
		return nil, err
	}
	r, err := s.st.Log.Append(ctx, e)
	if err != nil {
		return nil, err
	}
	s.notifyAppend()
	return &ShareRevokeResult{Seq: r.Seq, ID: r.ID, Hash: r.Hash, Grant: e.Body.(*log.ShareRevoke).Grant, Grantee: grantee, Note: share.RevokeNote}, nil
}

// ShareList lists the grants this store made (from its log) and those it
// received (as of the last SharePull).
func (s *Store) ShareList(ctx context.Context, req ShareListRequest) (*ShareListResult, error) {
	if err := s.needKeys(); err != nil {
		return nil, err
	}
	given, err := share.GivenShares(ctx, s.shareEnv())
	if err != nil {
		return nil, err
	}
	s.sharedMu.Lock() // a pull swaps the area under it
	received, err := share.Area(s.shareEnv())
	s.sharedMu.Unlock()
	if err != nil {
		return nil, err
	}
	res := &ShareListResult{Given: given, Received: received}
	if res.Given == nil {
		res.Given = []share.Given{}
	}
	if res.Received == nil {
		res.Received = []share.Received{}
	}
	return res, nil
}

// SharePull fetches and verifies the grants addressed to this store's
// wallet and makes their live chunks searchable (origin shared). A grant
// or a grantor's log that does not verify is left out and reported
// (share.ErrShareRejected, with the result); the rest is received.
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
	f, err := share.Fetch(ctx, s.shareEnv(), cl, w.PrivateKey(), w.Address())
	if err != nil {
		return nil, fmt.Errorf("pull shares: %w", err)
	}
	res := &SharePullResult{Address: w.Address(), Grants: []share.Received{}, Rejected: f.Rejected}
	// The area and the shared projections change under projMu: searches
	// read them under it, and two pulls do not write the area at once.
	s.lockProj()
	defer s.projMu.Unlock()
	s.sharedMu.Lock()
	defer s.sharedMu.Unlock()
	rp, err := share.Replace(s.shareEnv(), f, w.PrivateKey())
	if rp == nil {
		return nil, err
	}
	res.Grants, res.Kept = rp.Grants, rp.Kept
	if err != nil {
		return res, err
	}
	if err := s.closeSharedLocked(); err != nil {
		return res, err
	}
	if rp.Rebuild {
		if err := os.RemoveAll(s.st.Path(sharedProjectionsDir)); err != nil {
			return res, err
		}
	}
	set, src, err := s.sharedSetLocked(ctx, req.Progress)
	if err != nil {
		return res, err
	}
	if set != nil {
		res.Chunks = src.Len()
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
		return res, fmt.Errorf("pull shares: %d rejected (first: %s): %w", len(res.Rejected), res.Rejected[0].Reason, share.ErrShareRejected)
	}
	return res, nil
}

// sharedProjectionsDir holds the projections of the shared chunks. They
// are derived from the shared area like the own projections from the log,
// and are rebuilt when the area changes.
const sharedProjectionsDir = "shared-projections"

// sharedSetLocked opens the shared projections over the shared area and
// catches them up; nil when nothing is shared with this store.
func (s *Store) sharedSetLocked(ctx context.Context, p Progress) (*projstd.Set, *share.Source, error) {
	if s.shared != nil {
		return s.shared, s.sharedSrc, nil
	}
	if s.shut.Load() { // as in setLocked
		return nil, nil, log.ErrClosed
	}
	src, err := share.LoadSource(s.shareEnv(), func() (*rsa.PrivateKey, error) {
		w, err := s.wallet()
		if err != nil {
			return nil, err
		}
		return w.PrivateKey(), nil
	})
	if err != nil || src == nil {
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
	return query.New(qs, query.Options{Owner: src.Owner}), nil
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

// disclose posts to the grantees what the push of events 1..covered makes
// theirs (share.Disclose); a store opened without its vault key discloses
// nothing. Push calls it under s.mirror.
func (s *Store) disclose(ctx context.Context, cl mirror.Gateway, covered uint64) (int, error) {
	if s.st.Keys == nil {
		return 0, nil
	}
	return share.Disclose(ctx, s.shareEnv(), cl, covered)
}
