package ucl

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/fsutil"
	"github.com/unlimitedcontext/ucl/internal/mirror"
	"github.com/unlimitedcontext/ucl/internal/snapgw"
	"github.com/unlimitedcontext/ucl/internal/store"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/proof"
	"github.com/unlimitedcontext/ucl/snapshot"
)

// importBatch is how many rebuilt events one log.Import call writes.
const importBatch = 4096

// RebuildOptions configure Rebuild.
type RebuildOptions struct {
	// Dir is the new store's directory: new or empty.
	Dir string
	// Gateway is the Arweave gateway (default DefaultGateway).
	Gateway string
	// Wallet is the source store's wallet; Keys its vault keyring.
	Wallet *arweave.Wallet
	Keys   *crypto.Keyring
	// LogID (32 hex digits) picks the log; "" uses the wallet's only log.
	LogID string
	// AllowPartial keeps the verified events before a gap or a bad segment.
	AllowPartial bool
	// Branch, when Arweave holds two histories for the same seqs (a fork),
	// is the segment transaction whose history to follow.
	Branch string
	// NoSnapshot projects every event instead of starting from the newest
	// published snapshot.
	NoSnapshot bool
	// Embedder configures the vector projection of the new store.
	Embedder EmbedderOptions
	// Progress reports the download and the projection.
	Progress Progress
	// Warn receives messages about what was skipped (refused snapshots).
	Warn func(msg string)
}

// RebuildSnapshot says whether a published snapshot seeded the projections.
type RebuildSnapshot struct {
	Used     bool   `json:"used"`
	Reason   string `json:"reason,omitempty"`
	Name     string `json:"name,omitempty"`
	Seq      uint64 `json:"seq,omitempty"`
	Replayed uint64 `json:"replayed,omitempty"`
}

// RebuildResult says what Rebuild did.
type RebuildResult struct {
	Dir     string `json:"dir"`
	Gateway string `json:"gateway"`
	// Answered lists the gateways that answered (some of several may have
	// failed and been passed over).
	Answered []string `json:"answered,omitempty"`
	// Gateways is each configured gateway's newest checkpoint when there
	// are several; GatewaysDisagree is set when they differ.
	Gateways         []proof.GatewayCheckpoint `json:"gateways,omitempty"`
	GatewaysDisagree bool                      `json:"gateways_disagree,omitempty"`
	LogID            string                    `json:"log_id"`
	Events           uint64                    `json:"events"`
	HeadSeq          uint64                    `json:"head_seq"`
	HeadHash         string                    `json:"head_hash"`
	Segments         int                       `json:"segments"`
	PendingSegments  int                       `json:"pending_segments"`
	Duplicates       int                       `json:"duplicates"`
	Bytes            int64                     `json:"bytes"`
	Digests          map[string]string         `json:"digests"`
	Partial          bool                      `json:"partial"`
	// Problem is what stopped a partial rebuild.
	Problem        string          `json:"problem,omitempty"`
	LogSeconds     float64         `json:"log_seconds"`
	ProjectSeconds float64         `json:"project_seconds"`
	Snapshot       RebuildSnapshot `json:"snapshot"`
	// Checkpoint is the anchored checkpoint the rebuilt log was checked
	// against.
	Checkpoint proof.LogCheck `json:"checkpoint"`
	// MirroredSeq is how far the new store's mirror state records the log
	// as on Arweave: the segments it was rebuilt from are adopted, so the
	// store does not report them as unmirrored or upload them again.
	MirroredSeq uint64 `json:"mirrored_seq"`
	// Shredded counts the events whose content a key rotation of the
	// source shredded: unreadable by design, not damage.
	Shredded uint64 `json:"shredded"`
	// PartialErr is the *mirror.GapError or *mirror.TxRejectedError that
	// stopped a partial rebuild.
	PartialErr error `json:"-"`
}

// Rebuild recovers a store from Arweave into o.Dir: it finds the wallet's
// segments, verifies owner, Merkle roots, head hashes and the hash chain,
// checks the result against the newest checkpoint the wallet anchored and
// signed (refusing a mismatch, unless o.Branch chose another history),
// writes the log in a hidden staging directory next to o.Dir (renamed into
// place only once complete, removed on failure), then builds the
// projections, from the newest valid published snapshot when there is one.
func Rebuild(ctx context.Context, o RebuildOptions) (*RebuildResult, error) {
	if o.Wallet == nil || o.Keys == nil {
		return nil, badRequest("rebuild needs the source store's wallet and vault key")
	}
	dir := filepath.Clean(o.Dir)
	if _, err := os.Stat(filepath.Join(dir, store.MetaFile)); err == nil {
		return nil, fmt.Errorf("rebuild %s: %w", dir, store.ErrExists)
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("rebuild: %s: %w", dir, ErrDirNotEmpty)
	}
	owner := o.Wallet.Address()
	cl, err := newClient(o.Gateway, nil)
	if err != nil {
		return nil, err
	}
	var logID [16]byte
	if o.LogID != "" {
		b, err := hex.DecodeString(o.LogID)
		if err != nil || len(b) != 16 {
			return nil, badRequest("bad log id %q", o.LogID)
		}
		copy(logID[:], b)
	} else if logID, err = findLogID(ctx, cl, owner); err != nil {
		return nil, err
	}

	parent, base := filepath.Dir(dir), filepath.Base(dir)
	if err := fsutil.MkdirAllSync(parent, 0o700); err != nil {
		return nil, fmt.Errorf("rebuild: %w", err)
	}
	if _, err := store.Tidy(dir); err != nil { // a crashed rebuild's staging (keys inside)
		return nil, fmt.Errorf("rebuild: %w", err)
	}
	stage, err := os.MkdirTemp(parent, "."+base+".rebuild-")
	if err != nil {
		return nil, fmt.Errorf("rebuild: %w", err)
	}
	keep := false
	defer func() {
		if !keep {
			os.RemoveAll(stage)
		}
	}()
	t0 := time.Now()
	out, err := rebuildLog(ctx, cl, o, stage, owner, logID)
	logSecs := time.Since(t0).Seconds()
	if err != nil {
		return nil, err
	}
	if out.partial != nil && out.head == 0 {
		return nil, fmt.Errorf("rebuild: nothing verified before the first problem: %w", out.partial)
	}
	if err := os.Rename(stage, dir); err != nil {
		return nil, fmt.Errorf("rebuild: move %s into place: %w", stage, err)
	}
	keep = true
	if err := fsutil.SyncDir(parent); err != nil {
		return nil, fmt.Errorf("rebuild: %w", err)
	}

	s, err := Open(dir, Options{Keys: o.Keys, Embedder: o.Embedder})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	// A published snapshot spares the projection replay (the slow part):
	// the log is always rebuilt whole (it is the source of truth and must
	// verify from seq 1) but projections start from the newest valid
	// snapshot and replay only the events after it.
	t0 = time.Now()
	snap := RebuildSnapshot{Reason: "not asked for"}
	switch {
	case out.partial != nil:
		snap.Reason = "partial rebuild"
	case !o.NoSnapshot:
		snap = s.restoreFromPublished(ctx, cl, owner, logID, o)
	}
	mirrored, err := s.adoptMirrored(ctx, cl.Endpoints().String(), out.head)
	if err != nil && o.Warn != nil {
		o.Warn(fmt.Sprintf("the mirror state was not recorded (%v); the next `sync push` adopts the segments without uploading them", err))
	}
	s.lockProj()
	defer s.projMu.Unlock()
	set, err := s.caughtUpLocked(ctx, o.Progress)
	projSecs := time.Since(t0).Seconds()
	if err != nil {
		return nil, fmt.Errorf("rebuild: the log is rebuilt in %s; project: %w", dir, err)
	}
	digests, err := set.Projector.Digests()
	if err != nil {
		return nil, err
	}
	res := &RebuildResult{Dir: dir, Gateway: cl.Gateway(), LogID: mirror.LogIDHex(logID), Events: out.head, HeadSeq: out.head,
		HeadHash: out.hash.String(), Segments: out.res.Segments, PendingSegments: out.res.Pending,
		Duplicates: out.res.Duplicates, Bytes: out.res.Bytes, Digests: digests, Partial: out.partial != nil,
		LogSeconds: logSecs, ProjectSeconds: projSecs, Snapshot: snap, PartialErr: out.partial,
		Checkpoint: out.checkpoint, MirroredSeq: mirrored}
	if out.partial != nil {
		res.Problem = out.partial.Error()
	}
	res.Answered = cl.Answered()
	res.Gateways, res.GatewaysDisagree = proof.CompareGateways(ctx, cl.Endpoints(), arweaveOptions(), owner, logID)
	if res.GatewaysDisagree && o.Warn != nil {
		o.Warn(proof.Disagreement(res.Gateways))
	}
	// The rebuilt store reads from where it was rebuilt.
	if err := rememberArweave(dir, ArweaveSettings{Gateway: cl.Endpoints().String()}); err != nil && o.Warn != nil {
		o.Warn(err.Error())
	}
	if res.Shredded, err = s.st.Log.CountShredded(ctx); err != nil {
		return nil, fmt.Errorf("rebuild: count shredded events: %w", err)
	}
	return res, nil
}

// rebuildOutcome is what rebuildLog did.
type rebuildOutcome struct {
	res        mirror.RebuildResult
	head       uint64
	hash       log.Hash
	partial    error // the *GapError or *TxRejectedError that stopped a partial rebuild
	checkpoint proof.LogCheck
}

// findLogID lists the log ids of owner's segments and picks the only one.
func findLogID(ctx context.Context, cl *arweave.Client, owner string) ([16]byte, error) {
	var id [16]byte
	txs, err := cl.FindTxs(ctx, arweave.TxQuery{Owners: []string{owner}, Tags: []arweave.Tag{
		{Name: mirror.TagAppName, Value: mirror.AppName}, {Name: mirror.TagKind, Value: string(mirror.KindSegment)}}})
	if err != nil {
		return id, fmt.Errorf("rebuild: find logs: %w", err)
	}
	count := map[[16]byte]int{}
	last := map[[16]byte]uint64{}
	for _, t := range txs {
		m, err := mirror.ParseTags(t.Tags)
		if err != nil || t.Owner != owner {
			continue
		}
		count[m.LogID]++
		last[m.LogID] = max(last[m.LogID], m.LastSeq)
	}
	switch len(count) {
	case 0:
		return id, fmt.Errorf("rebuild: %s has %w on %s", owner, ErrNoSegments, cl.Gateway())
	case 1:
		for k := range count {
			id = k
		}
		return id, nil
	}
	var ids []string
	for k, n := range count {
		ids = append(ids, fmt.Sprintf("%s (%d segments, up to seq %d)", mirror.LogIDHex(k), n, last[k]))
	}
	sort.Strings(ids)
	return id, fmt.Errorf("rebuild: %w: wallet %s has %s", ErrAmbiguousLog, owner, strings.Join(ids, ", "))
}

// rebuildLog creates a store in dir and fills its log from Arweave.
func rebuildLog(ctx context.Context, cl *arweave.Client, o RebuildOptions, dir, owner string, logID [16]byte) (rebuildOutcome, error) {
	var out rebuildOutcome
	s, err := store.Init(dir, store.InitOptions{Keys: o.Keys, Wallet: o.Wallet, LogID: mirror.LogIDHex(logID)})
	if err != nil {
		return out, err
	}
	defer s.Close()
	var batch [][]byte
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := s.Log.Import(ctx, batch)
		batch = batch[:0]
		return err
	}
	prog := o.Progress.stage("rebuild")
	res, rerr := mirror.Rebuild(ctx, mirror.RebuildOptions{
		Gateway: cl, Owner: owner, LogID: logID, AllowPartial: o.AllowPartial, Branch: o.Branch,
		VerifyRecord: func(prev mirror.Hash, r mirror.Record) error {
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
		},
		Progress: func(rp mirror.RebuildProgress) {
			if prog != nil {
				prog(uint64(rp.Segments), uint64(rp.TotalSegments))
			}
		},
	}, func(r mirror.Record) error {
		batch = append(batch, r.Raw)
		if len(batch) >= importBatch {
			return flush()
		}
		return nil
	})
	out.res = res
	if rerr == nil || o.AllowPartial {
		if err := flush(); err != nil {
			return out, fmt.Errorf("rebuild: write log: %w", err)
		}
	}
	out.head, out.hash = s.Log.Head()
	var gap *mirror.GapError
	var rej *mirror.TxRejectedError
	switch {
	case rerr == nil:
	case o.AllowPartial && (errors.As(rerr, &gap) || errors.As(rerr, &rej)):
		out.partial = rerr
	default:
		return out, rerr
	}
	if res.Found == 0 {
		return out, fmt.Errorf("rebuild: %w of log %s from %s on %s", ErrNoSegments, mirror.LogIDHex(logID), owner, cl.Gateway())
	}
	if out.head != res.LastSeq || (res.LastSeq > 0 && out.hash != log.Hash(res.HeadHash)) {
		return out, fmt.Errorf("rebuild: wrote up to seq %d, Arweave gave up to %d", out.head, res.LastSeq)
	}
	// The segments' transactions are not checked one by one (bundled data
	// items cannot be, through a gateway); the wallet-signed checkpoint
	// covers them all through its Merkle root. The tree stays as the new
	// store's.
	tree, err := log.OpenTree(s.Path(proof.MerkleDir))
	if err != nil {
		return out, fmt.Errorf("rebuild: %w", err)
	}
	defer tree.Close()
	if err := tree.CatchUp(ctx, s.Log); err != nil {
		return out, fmt.Errorf("rebuild: %w", err)
	}
	out.checkpoint, err = proof.CheckLog(ctx, cl, owner, logID, tree, out.head)
	switch {
	case errors.Is(err, proof.ErrCheckpointDiverged) && o.Branch != "":
		// The branch asked for is not the anchored history: say so.
		out.checkpoint.Reason = err.Error()
	case err != nil:
		return out, fmt.Errorf("rebuild: %w", err)
	}
	return out, nil
}

// restoreFromPublished fetches the newest published snapshot that checks
// out, imports it and restores the projections from it. Any problem is
// reported and leaves the projections to a full replay: a snapshot is an
// accelerator, never needed.
func (s *Store) restoreFromPublished(ctx context.Context, cl *arweave.Client, owner string, logID [16]byte, o RebuildOptions) RebuildSnapshot {
	warn := func(format string, a ...any) {
		if o.Warn != nil {
			o.Warn(fmt.Sprintf(format, a...))
		}
	}
	var info RebuildSnapshot
	pub, refused, err := snapshot.FetchNewest(ctx, snapgw.New(cl), owner, logID)
	for _, r := range refused {
		warn("snapshot %s refused: %s", r.Name, r.Reason)
	}
	if err != nil {
		if errors.Is(err, snapshot.ErrNoSnapshot) {
			info.Reason = "no published snapshot"
		} else {
			info.Reason = err.Error()
			warn("could not fetch snapshots (%v); projecting from the log", err)
		}
		return info
	}
	in, err := snapshot.Import(s.st.Path(store.SnapshotsDir), pub.ManifestJSON, pub.Archive)
	if err != nil {
		info.Reason = err.Error()
		return info
	}
	s.lockProj()
	defer s.projMu.Unlock()
	env, err := s.snapshotEnvLocked()
	if err != nil {
		info.Reason = err.Error()
		return info
	}
	res, err := snapshot.Restore(ctx, env, snapshot.RestoreOptions{Name: in.Name, Fallback: false, Progress: snapshot.Progress(o.Progress)})
	if err != nil {
		info.Reason = err.Error()
		warn("snapshot %s not used (%v); projecting from the log", in.Name, err)
		return info
	}
	return RebuildSnapshot{Used: true, Name: res.Snapshot, Seq: res.Seq, Replayed: res.Replayed}
}

// errNoUpload is returned by noUploader: adoption must never upload.
var errNoUpload = errors.New("ucl: segment not on the gateway (adoption uploads nothing)")

// noUploader lets a Syncer adopt what the gateway holds and refuses to
// upload anything else.
type noUploader struct{}

func (noUploader) Sign(context.Context, []arweave.Upload) (*arweave.SignedUpload, error) {
	return nil, errNoUpload
}
func (noUploader) Post(context.Context, *arweave.SignedUpload) (int, error) { return 0, errNoUpload }

// adoptMirrored records, in the mirror state of a store just rebuilt from
// Arweave, the segments already there up to head: the same scan a push
// does, with uploads refused. It returns the seq the state covers.
func (s *Store) adoptMirrored(ctx context.Context, gateway string, head uint64) (uint64, error) {
	if head == 0 {
		return 0, nil
	}
	// The scan looks for the wallet's own segments: the client needs it.
	w, err := s.wallet()
	if err != nil {
		return 0, err
	}
	cl, err := newClient(gateway, w)
	if err != nil {
		return 0, err
	}
	s.mirror.Lock()
	defer s.mirror.Unlock()
	st, err := mirror.OpenState(s.st.Path(store.MirrorFile))
	if err != nil {
		return 0, err
	}
	defer st.Close()
	logID := s.st.Meta.LogIDBytes()
	sy, err := mirror.NewSyncer(mirror.SyncConfig{LogID: logID, Records: logSource(ctx, s.st.Log), Gateway: cl, Uploader: noUploader{}, State: st})
	if err != nil {
		return 0, err
	}
	r, perr := sy.Push(ctx, head)
	if sum, err := st.Summary(logID); err == nil {
		r.CoveredSeq = sum.CoveredSeq
	}
	if perr != nil {
		return r.CoveredSeq, fmt.Errorf("adopt mirrored segments: %w", perr)
	}
	return r.CoveredSeq, nil
}
