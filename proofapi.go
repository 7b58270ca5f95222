package ucl

import (
	"context"
	"encoding/hex"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/internal/mirror"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/proof"
)

// The audit methods: anchoring, listing and proving checkpoints (package
// proof holds the formats and the checks).

// CheckpointView is one anchored checkpoint.
type CheckpointView struct {
	Size    uint64 `json:"size"`
	Root    string `json:"root"` // hex
	TxID    string `json:"tx"`
	Prev    string `json:"prev,omitempty"`
	Height  int64  `json:"height,omitempty"`
	Pending bool   `json:"pending,omitempty"`
	// Anchored is set in a push result when this push posted it.
	Anchored bool `json:"anchored,omitempty"`
}

func viewOf(c mirror.CheckpointTx) CheckpointView {
	return CheckpointView{Size: c.Size, Root: hex.EncodeToString(c.Root), TxID: c.ID, Prev: c.Prev, Height: c.Height, Pending: c.Pending}
}

// proofLog is the seam package proof works on: the log, its id and the
// Merkle tree caught up with it.
func (s *Store) proofLog() proof.Log {
	return proof.Log{ID: s.st.Meta.LogID, Log: s.st.Log, Tree: s.merkle}
}

// merkle returns the store's Merkle tree, opened on first use and caught
// up with the log.
func (s *Store) merkle(ctx context.Context) (*log.Tree, error) {
	return s.tree.Tree(ctx, s.st.Path(proof.MerkleDir), s.st.Log)
}

// anchor anchors a checkpoint of the first size events after a push (see
// proof.Anchor).
func (s *Store) anchor(ctx context.Context, cl mirror.Gateway, w *arweave.Wallet, size uint64) (*CheckpointView, error) {
	c, anchored, err := proof.Anchor(ctx, s.proofLog(), cl, w, size)
	if err != nil {
		return nil, err
	}
	v := viewOf(c)
	v.Anchored = anchored
	return &v, nil
}

// CheckpointsRequest lists the anchored checkpoints of the store's log.
type CheckpointsRequest struct {
	Gateway string `json:"gateway,omitempty"`
}

// CheckpointsResult lists anchored checkpoints by tree size.
type CheckpointsResult struct {
	LogID       string           `json:"log_id"`
	Owner       string           `json:"owner"`
	Checkpoints []CheckpointView `json:"checkpoints"`
}

// Checkpoints lists the checkpoints this store's wallet anchored for its
// log, as the gateway reports them (unverified), ordered by tree size.
func (s *Store) Checkpoints(ctx context.Context, req CheckpointsRequest) (*CheckpointsResult, error) {
	w, err := s.wallet()
	if err != nil {
		return nil, err
	}
	cl, err := newClient(s.gatewayFor(req.Gateway), nil)
	if err != nil {
		return nil, err
	}
	cps, err := mirror.FindCheckpoints(ctx, cl, w.Address(), s.st.Meta.LogIDBytes())
	if err != nil {
		return nil, err
	}
	out := &CheckpointsResult{LogID: s.st.Meta.LogID, Owner: w.Address(), Checkpoints: []CheckpointView{}}
	for _, c := range cps {
		out.Checkpoints = append(out.Checkpoints, viewOf(c))
	}
	return out, nil
}

// ProveRequest asks for an audit proof of one event.
type ProveRequest struct {
	Seq     uint64 `json:"seq"`
	Gateway string `json:"gateway,omitempty"`
}

// Prove builds a self-contained proof (log.Proof) that event Seq is in the
// log as anchored by the newest checkpoint that covers it (proof.Prove);
// proof.ErrNotAnchored when none does yet.
func (s *Store) Prove(ctx context.Context, req ProveRequest) (*log.Proof, error) {
	head, _ := s.st.Log.Head()
	if req.Seq == 0 || req.Seq > head {
		return nil, badRequest("no event %d in a log of %d events", req.Seq, head)
	}
	w, err := s.wallet()
	if err != nil {
		return nil, err
	}
	cl, err := newClient(s.gatewayFor(req.Gateway), nil)
	if err != nil {
		return nil, err
	}
	return proof.Prove(ctx, s.proofLog(), cl, w.Address(), req.Seq, head)
}

// VerifyProof verifies a proof file against the gateway req.Gateway (the
// default one if empty) without a store and without trusting the gateway
// (proof.Verify says what is checked); proof.ErrProofRejected when it does
// not verify.
func VerifyProof(ctx context.Context, req proof.VerifyRequest) (*proof.VerifyResult, error) {
	cl, err := newClient(req.Gateway, nil)
	if err != nil {
		return nil, err
	}
	return proof.Verify(ctx, cl, arweaveOptions(), req)
}
