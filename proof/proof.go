package proof

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/mirror"
	"github.com/unlimitedcontext/ucl/log"
)

var (
	// ErrNotAnchored is returned by Prove when no anchored checkpoint of
	// this log covers the event yet.
	ErrNotAnchored = errors.New("proof: no anchored checkpoint covers the event")
	// ErrCheckpointDiverged is returned when this store's log does not
	// match a checkpoint its wallet anchored for the same log id (a fork or
	// a replaced log): nothing is anchored or proven from it.
	ErrCheckpointDiverged = errors.New("proof: the log does not match an anchored checkpoint")
	// ErrProofRejected is returned by Verify when the proof or its
	// anchoring does not verify; the message names the check that failed.
	ErrProofRejected = errors.New("proof: proof rejected")
	// ErrHistoryRewritten is returned (with ErrProofRejected) when a later
	// checkpoint anchored by the same wallet is not consistent with the
	// proof's: the log was rewritten after the proof.
	ErrHistoryRewritten = errors.New("proof: anchored history rewritten")
	// ErrCheckpointHidden is returned by Verify when a checkpoint
	// transaction the owner signed names, as its previous checkpoint
	// (UC-Prev-Checkpoint), one the gateway does not list: the gateway
	// hides part of the anchored history, so the proof cannot be checked
	// against all of it. The message names the hidden transaction.
	ErrCheckpointHidden = errors.New("proof: the gateway hides an anchored checkpoint")
)

// MerkleDir is the Merkle tree's directory in a store (derived data).
const MerkleDir = "merkle"

// maxCheckpointData bounds a checkpoint transaction's data (a note and a
// consistency proof of at most 64 nodes is far below it).
const maxCheckpointData = 64 << 10

// Merkle is a store's Merkle tree, opened on first use and caught up
// with the log before each use. Its zero value is ready; it is safe for
// concurrent use.
type Merkle struct {
	mu   sync.Mutex
	tree *log.Tree
}

// Tree returns the tree of the store directory's MerkleDir dir, opened on
// first use, caught up with l.
func (m *Merkle) Tree(ctx context.Context, dir string, l *log.Log) (*log.Tree, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tree == nil {
		t, err := log.OpenTree(dir)
		if err != nil {
			return nil, err
		}
		m.tree = t
	}
	if err := m.tree.CatchUp(ctx, l); err != nil {
		return nil, err
	}
	return m.tree, nil
}

// Close closes the tree if it was opened; Tree opens it again.
func (m *Merkle) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tree == nil {
		return nil
	}
	err := m.tree.Close()
	m.tree = nil
	return err
}

// Log is what anchoring and proving need of a store: its log, its id
// (hex) and its Merkle tree caught up with the log.
type Log struct {
	ID   string
	Log  *log.Log
	Tree func(context.Context) (*log.Tree, error)
}

// Anchor anchors a checkpoint of lg's first size events (after a push
// mirrored them) signed by w, unless w already anchored that size: then it
// returns that checkpoint with anchored false. The previous checkpoint
// comes from GraphQL, so a rebuilt store continues the chain; one whose
// root disagrees with this log is ErrCheckpointDiverged. A new one is
// returned pending.
func Anchor(ctx context.Context, lg Log, cl mirror.Gateway, w *arweave.Wallet, size uint64) (c mirror.CheckpointTx, anchored bool, err error) {
	fail := func(err error) (mirror.CheckpointTx, bool, error) {
		return mirror.CheckpointTx{}, false, fmt.Errorf("anchor checkpoint: %w", err)
	}
	tree, err := lg.Tree(ctx)
	if err != nil {
		return fail(err)
	}
	logID, err := logIDBytes(lg.ID)
	if err != nil {
		return fail(err)
	}
	cps, err := mirror.FindCheckpoints(ctx, cl, w.Address(), logID)
	if err != nil {
		return fail(err)
	}
	var prev *mirror.CheckpointTx
	for i := range cps {
		if cps[i].Size <= size {
			prev = &cps[i]
		}
	}
	var prevSize uint64
	var prevID string
	if prev != nil {
		root, err := tree.Root(prev.Size)
		if err != nil {
			return fail(err)
		}
		if !bytes.Equal(root, prev.Root) {
			return fail(fmt.Errorf("%w: checkpoint %s of %d events has root %x, this log's is %x",
				ErrCheckpointDiverged, prev.ID, prev.Size, prev.Root, root))
		}
		if prev.Size == size {
			return *prev, false, nil
		}
		prevSize, prevID = prev.Size, prev.ID
	}
	root, err := tree.Root(size)
	if err != nil {
		return fail(err)
	}
	var cons [][]byte
	if prevSize > 0 {
		if cons, err = tree.ConsistencyProof(prevSize, size); err != nil {
			return fail(err)
		}
	}
	skey, vkey, err := crypto.NoteKey(w.PrivateKey(), w.Address())
	if err != nil {
		return fail(err)
	}
	note, err := log.SignCheckpoint(log.Checkpoint{Origin: log.CheckpointOrigin(lg.ID), Size: size, Root: root}, skey)
	if err != nil {
		return fail(err)
	}
	data := log.Anchor{Note: note, PrevSize: prevSize, Consistency: cons}.Encode()
	id, err := mirror.PostCheckpoint(ctx, cl, mirror.CheckpointAnchor{
		LogID: logID, Size: size, Root: root, Prev: prevID, NoteKey: vkey, Data: data})
	if err != nil {
		return fail(err)
	}
	c = mirror.CheckpointTx{Size: size, Root: root, Prev: prevID, NoteKey: vkey}
	c.ID, c.Pending = id, true
	return c, true, nil
}

// Prove builds a self-contained proof (log.Proof) that event seq of lg
// (whose head is head) is in the log as anchored by the newest checkpoint
// owner anchored that covers it. The checkpoint note is taken from its
// transaction (checked like a verifier would); the inclusion path is read
// from the Merkle tree, O(log n) nodes.
func Prove(ctx context.Context, lg Log, cl mirror.Gateway, owner string, seq, head uint64) (*log.Proof, error) {
	logID, err := logIDBytes(lg.ID)
	if err != nil {
		return nil, fmt.Errorf("prove seq %d: %w", seq, err)
	}
	cps, err := mirror.FindCheckpoints(ctx, cl, owner, logID)
	if err != nil {
		return nil, fmt.Errorf("prove seq %d: %w", seq, err)
	}
	var cp *mirror.CheckpointTx
	for i := range cps {
		if cps[i].Size >= seq && cps[i].Size <= head {
			cp = &cps[i]
		}
	}
	if cp == nil {
		return nil, fmt.Errorf("prove seq %d: %w (push to anchor one)", seq, ErrNotAnchored)
	}
	tree, err := lg.Tree(ctx)
	if err != nil {
		return nil, fmt.Errorf("prove seq %d: %w", seq, err)
	}
	root, err := tree.Root(cp.Size)
	if err != nil {
		return nil, fmt.Errorf("prove seq %d: %w", seq, err)
	}
	if !bytes.Equal(root, cp.Root) {
		return nil, fmt.Errorf("prove seq %d: %w: checkpoint %s of %d events has root %x, this log's is %x",
			seq, ErrCheckpointDiverged, cp.ID, cp.Size, cp.Root, root)
	}
	vt, err := cl.FetchVerifiedTx(ctx, cp.ID, maxCheckpointData)
	if err != nil {
		return nil, fmt.Errorf("prove seq %d: %w", seq, err)
	}
	a, err := log.DecodeAnchor(vt.Data)
	if err != nil {
		return nil, fmt.Errorf("prove seq %d: checkpoint %s: %w", seq, cp.ID, err)
	}
	p, err := log.ProveEvent(lg.Log, tree, seq, cp.Size)
	if err != nil {
		return nil, err
	}
	p.LogID, p.Checkpoint, p.NoteKey = lg.ID, string(a.Note), cp.NoteKey
	p.CheckpointTx, p.Owner, p.AnchoredAt = cp.ID, vt.Owner, vt.Height
	if _, err := p.Verify(); err != nil {
		return nil, fmt.Errorf("prove seq %d: %w", seq, err)
	}
	return p, nil
}

// logIDBytes decodes a hex log id.
func logIDBytes(id string) ([16]byte, error) {
	var out [16]byte
	b, err := hex.DecodeString(id)
	if err != nil || len(b) != 16 {
		return out, fmt.Errorf("log id %q: want 32 hex digits", id)
	}
	copy(out[:], b)
	return out, nil
}

// VerifyRequest is a proof file to verify against a gateway. It needs no
// store and no key.
type VerifyRequest struct {
	Proof   []byte `json:"-"`
	Gateway string `json:"gateway,omitempty"`
}

// VerifyResult is what a verified proof established.
type VerifyResult struct {
	Seq          uint64 `json:"seq"`
	LogID        string `json:"log_id"`
	Type         string `json:"type"`
	EventID      string `json:"event_id"`
	EventHash    string `json:"event_hash"`
	Time         string `json:"time"` // append time, RFC 3339
	Owner        string `json:"owner"`
	TreeSize     uint64 `json:"tree_size"`
	Root         string `json:"root"`
	CheckpointTx string `json:"checkpoint_tx"`
	Height       int64  `json:"height"` // 0: not yet mined
	// Later counts the later anchored checkpoints the proof's was found
	// consistent with; NewestSize is the largest of them.
	Later      int    `json:"later_checkpoints"`
	NewestSize uint64 `json:"newest_size"`
	// The gateway's view: the newest checkpoint of the log it lists for the
	// owner (its transaction, size and block height, 0 when pending).
	// Checkpoints newer than the newest one a gateway lists cannot be
	// detected if it hides them; the ones between are (the later
	// checkpoints' UC-Prev-Checkpoint links must all be listed).
	GatewayNewestTx     string `json:"gateway_newest_tx"`
	GatewayNewestSize   uint64 `json:"gateway_newest_size"`
	GatewayNewestHeight int64  `json:"gateway_newest_height"`
	// Answered lists the gateways (and GraphQL endpoint) that answered,
	// when several are configured some may have failed and been passed over.
	Answered []string `json:"answered,omitempty"`
	// Gateways is each configured gateway's own newest checkpoint (when
	// there are several); Disagree is set when they differ, which
	// Sentence then says.
	Gateways []GatewayCheckpoint `json:"gateways,omitempty"`
	Disagree bool                `json:"gateways_disagree,omitempty"`
	Sentence string              `json:"sentence"`
}

func rejected(format string, a ...any) error {
	return fmt.Errorf("verify proof: %w: "+format, append([]any{ErrProofRejected}, a...)...)
}

// Verify verifies a proof file through cl (the client of req.Gateway; opts
// build one client per gateway to compare them) without a store and
// without trusting
// the gateway: the proof itself (note signature, header, inclusion); the
// anchoring transaction's own RSA-PSS signature, that its owner key hashes
// to the proof's owner, its data (the note) and tags; that the note key is
// the one the owner's signed transaction publishes; and that every later
// checkpoint the same owner anchored for the log (each itself checked the
// same way) is consistent with the proof's, chained through the
// consistency proofs their transactions carry, and that the
// UC-Prev-Checkpoint link of each of them names a checkpoint the gateway
// lists (else ErrCheckpointHidden: the gateway left one out).
func Verify(ctx context.Context, cl *arweave.Client, opts arweave.Options, req VerifyRequest) (*VerifyResult, error) {
	p, err := log.DecodeProof(req.Proof)
	if err != nil {
		return nil, rejected("%w", err)
	}
	ev, err := p.Verify()
	if err != nil {
		return nil, rejected("%w", err)
	}
	logID, err := hex.DecodeString(p.LogID)
	if err != nil || len(logID) != 16 {
		return nil, rejected("log id %q", p.LogID)
	}
	var lid [16]byte
	copy(lid[:], logID)
	if !arweave.ValidID(p.CheckpointTx) {
		return nil, rejected("checkpoint transaction id %q", p.CheckpointTx)
	}
	if !strings.HasPrefix(p.NoteKey, p.Owner+"+") {
		return nil, rejected("the note key is not named after the owner %s", p.Owner)
	}
	check := func(id string) (*arweave.VerifiedTx, mirror.CheckpointTx, log.Checkpoint, log.Anchor, error) {
		var ct mirror.CheckpointTx
		vt, err := cl.FetchVerifiedTx(ctx, id, maxCheckpointData)
		if err != nil {
			if errors.Is(err, arweave.ErrTxSignature) {
				return nil, ct, log.Checkpoint{}, log.Anchor{}, rejected("checkpoint transaction: %w", err)
			}
			return nil, ct, log.Checkpoint{}, log.Anchor{}, fmt.Errorf("verify proof: %w", err)
		}
		if vt.Owner != p.Owner {
			return nil, ct, log.Checkpoint{}, log.Anchor{}, rejected("checkpoint transaction %s is signed by %s, not by the proof's owner %s", id, vt.Owner, p.Owner)
		}
		if ct, err = mirror.ParseCheckpointTags(lid, vt.Tags); err != nil {
			return nil, ct, log.Checkpoint{}, log.Anchor{}, rejected("transaction %s: %w", id, err)
		}
		if ct.NoteKey != p.NoteKey {
			return nil, ct, log.Checkpoint{}, log.Anchor{}, rejected("transaction %s publishes note key %q, the proof's is %q", id, ct.NoteKey, p.NoteKey)
		}
		a, err := log.DecodeAnchor(vt.Data)
		if err != nil {
			return nil, ct, log.Checkpoint{}, log.Anchor{}, rejected("transaction %s: %w", id, err)
		}
		c, err := log.OpenCheckpoint(a.Note, ct.NoteKey)
		if err != nil {
			return nil, ct, log.Checkpoint{}, log.Anchor{}, rejected("transaction %s: %w", id, err)
		}
		if c.Origin != log.CheckpointOrigin(p.LogID) || c.Size != ct.Size || !bytes.Equal(c.Root, ct.Root) {
			return nil, ct, log.Checkpoint{}, log.Anchor{}, rejected("transaction %s: its tags (size %d, root %x) disagree with its checkpoint (%s, size %d, root %x)",
				id, ct.Size, ct.Root, c.Origin, c.Size, c.Root)
		}
		return vt, ct, c, a, nil
	}
	vt, _, _, a, err := check(p.CheckpointTx)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(a.Note, []byte(p.Checkpoint)) {
		return nil, rejected("transaction %s anchors another checkpoint note than the proof's", p.CheckpointTx)
	}
	if p.AnchoredAt != 0 && vt.Height != 0 && p.AnchoredAt != vt.Height {
		// The height is not signed by anything: the gateway's answer is
		// what was checked, and a proof claiming another is refused.
		return nil, rejected("the proof says its checkpoint was anchored at block height %d (anchored_height); the gateway has transaction %s at height %d",
			p.AnchoredAt, p.CheckpointTx, vt.Height)
	}
	res := &VerifyResult{Seq: p.Seq, LogID: p.LogID, Type: ev.Header.Type.String(), EventID: ev.Header.ID.String(),
		EventHash: ev.Hash.String(), Time: time.UnixMilli(ev.Header.Time).UTC().Format(time.RFC3339Nano), Owner: p.Owner,
		TreeSize: p.TreeSize, Root: hex.EncodeToString(ev.Checkpoint.Root), CheckpointTx: p.CheckpointTx, Height: vt.Height,
		NewestSize: p.TreeSize}

	// Every later checkpoint, in size order, must extend the one before it:
	// by induction each is consistent with the proof's.
	cps, err := mirror.FindCheckpoints(ctx, cl, p.Owner, lid)
	if err != nil {
		return nil, fmt.Errorf("verify proof: %w", err)
	}
	start := log.ChainLink{ID: p.CheckpointTx, Checkpoint: ev.Checkpoint}
	listed := map[string]bool{p.CheckpointTx: true}
	for _, c := range cps {
		listed[c.ID] = true
	}
	var links []log.ChainLink
	var prevs []string // each link's UC-Prev-Checkpoint, from its signed tags
	for _, c := range cps {
		if c.Size < p.TreeSize || c.ID == p.CheckpointTx {
			continue
		}
		_, ct, cp, an, err := check(c.ID)
		if err != nil {
			return nil, err
		}
		links = append(links, log.ChainLink{ID: c.ID, Checkpoint: cp, Anchor: an})
		prevs = append(prevs, ct.Prev)
	}
	// A checkpoint the gateway leaves out is still named by the next one's
	// signed UC-Prev-Checkpoint tag: a link to an unlisted transaction is a
	// gap. It is checked first: the next anchor's consistency proof starts
	// at the hidden checkpoint's size, and the chain check would call that
	// a rewritten history.
	for i, l := range links {
		if prevs[i] != "" && !listed[prevs[i]] {
			return nil, fmt.Errorf("verify proof: %w: checkpoint %s (%d events), signed by %s, names %s as the previous checkpoint, which the gateway %s does not list",
				ErrCheckpointHidden, l.ID, l.Checkpoint.Size, p.Owner, prevs[i], req.Gateway)
		}
	}
	if err := log.VerifyChain(start, links); err != nil {
		return nil, fmt.Errorf("verify proof: %w: %w: %w", ErrProofRejected, ErrHistoryRewritten, err)
	}
	if n := len(cps); n > 0 {
		res.GatewayNewestTx, res.GatewayNewestSize, res.GatewayNewestHeight = cps[n-1].ID, cps[n-1].Size, cps[n-1].Height
	}
	res.Later = len(links)
	res.NewestSize = p.TreeSize
	if len(links) > 0 {
		res.NewestSize = links[len(links)-1].Checkpoint.Size
	}
	where := "pending in Arweave transaction " + res.CheckpointTx
	if res.Height > 0 {
		where = fmt.Sprintf("anchored in Arweave transaction %s, block height %d", res.CheckpointTx, res.Height)
	}
	later := "no later checkpoint anchored"
	if res.Later > 0 {
		later = fmt.Sprintf("consistent with %d later checkpoint(s), up to %d events", res.Later, res.NewestSize)
	}
	view := "The gateway lists no checkpoint of the log."
	if res.GatewayNewestTx != "" {
		at := "pending"
		if res.GatewayNewestHeight > 0 {
			at = fmt.Sprintf("block height %d", res.GatewayNewestHeight)
		}
		view = fmt.Sprintf("The gateway's newest checkpoint is %s (%d events, %s); the later checkpoints link to listed ones without a gap.",
			res.GatewayNewestTx, res.GatewayNewestSize, at)
	}
	res.Sentence = fmt.Sprintf("event %d of log %s, a %s by %s, is in the log as %s (checkpoint of %d events; %s). %s",
		res.Seq, res.LogID, res.Type, res.Owner, where, res.TreeSize, later, view)
	res.Answered = cl.Answered()
	if len(cl.Endpoints().Gateways) > 1 {
		res.Sentence += " Answered by " + strings.Join(res.Answered, ", ") + "."
	}
	res.Gateways, res.Disagree = CompareGateways(ctx, cl.Endpoints(), opts, p.Owner, lid)
	if res.Disagree {
		res.Sentence += " Warning: " + Disagreement(res.Gateways) + "."
	}
	return res, nil
}

// LogCheck is what a log fetched from Arweave (a rebuild's, a grantor's)
// learned from the wallet's anchored checkpoints: the newest one the log
// covers, checked (transaction signature by the wallet, note signature,
// root) against the log's Merkle root. It covers the segments whatever
// their transport (L1 or bundled), since the root commits to every event
// hash.
type LogCheck struct {
	// Verified is set when the log's first Size events match a
	// checkpoint signed by the wallet.
	Verified bool   `json:"verified"`
	Size     uint64 `json:"size,omitempty"`
	TxID     string `json:"tx,omitempty"`
	Height   int64  `json:"height,omitempty"`
	// Reason says why nothing was verified (no checkpoint, or not one the
	// gateway would serve yet).
	Reason string `json:"reason,omitempty"`
}

// CheckLog compares a fetched log (its tree) with the newest
// checkpoint of at most head events that owner anchored for logID. A
// checkpoint whose transaction verifies but whose root differs is
// ErrCheckpointDiverged; one whose transaction does not verify is
// arweave.ErrTxSignature. A checkpoint the gateway serves only as pending
// is passed over for an older one.
func CheckLog(ctx context.Context, cl mirror.Gateway, owner string, logID [16]byte, tree *log.Tree, head uint64) (LogCheck, error) {
	cps, err := mirror.FindCheckpoints(ctx, cl, owner, logID)
	if err != nil {
		return LogCheck{Reason: err.Error()}, nil
	}
	for i := len(cps) - 1; i >= 0; i-- {
		c := cps[i]
		if c.Size > head || c.Size == 0 {
			continue
		}
		vt, err := cl.FetchVerifiedTx(ctx, c.ID, maxCheckpointData)
		switch {
		case errors.Is(err, arweave.ErrTxPending):
			continue
		case errors.Is(err, arweave.ErrTxSignature):
			return LogCheck{}, fmt.Errorf("check checkpoint %s: %w", c.ID, err)
		case err != nil:
			return LogCheck{Reason: err.Error()}, nil
		}
		if vt.Owner != owner {
			return LogCheck{}, fmt.Errorf("check checkpoint %s: %w: signed by %s, not %s", c.ID, arweave.ErrTxSignature, vt.Owner, owner)
		}
		ct, err := mirror.ParseCheckpointTags(logID, vt.Tags)
		if err != nil {
			return LogCheck{}, fmt.Errorf("check checkpoint %s: %w", c.ID, err)
		}
		a, err := log.DecodeAnchor(vt.Data)
		if err != nil {
			return LogCheck{}, fmt.Errorf("check checkpoint %s: %w", c.ID, err)
		}
		if !strings.HasPrefix(ct.NoteKey, owner+"+") {
			return LogCheck{}, fmt.Errorf("check checkpoint %s: %w: note key not named after %s", c.ID, log.ErrBadProof, owner)
		}
		cp, err := log.OpenCheckpoint(a.Note, ct.NoteKey)
		if err != nil {
			return LogCheck{}, fmt.Errorf("check checkpoint %s: %w", c.ID, err)
		}
		if cp.Origin != log.CheckpointOrigin(hex.EncodeToString(logID[:])) || cp.Size != ct.Size || !bytes.Equal(cp.Root, ct.Root) {
			return LogCheck{}, fmt.Errorf("check checkpoint %s: %w: its tags disagree with its note", c.ID, log.ErrBadProof)
		}
		root, err := tree.Root(cp.Size)
		if err != nil {
			return LogCheck{}, fmt.Errorf("check checkpoint %s: %w", c.ID, err)
		}
		if !bytes.Equal(root, cp.Root) {
			return LogCheck{}, fmt.Errorf("%w: checkpoint %s of %d events, signed by the wallet, has root %x; the rebuilt log's is %x",
				ErrCheckpointDiverged, c.ID, cp.Size, cp.Root, root)
		}
		return LogCheck{Verified: true, Size: cp.Size, TxID: c.ID, Height: vt.Height}, nil
	}
	return LogCheck{Reason: "no checkpoint anchored for the rebuilt events"}, nil
}
