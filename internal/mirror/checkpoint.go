package mirror

import (
	"context"
	"encoding/hex"
	"fmt"
	"github.com/unlimitedcontext/ucl/arweave"
	"sort"
	"strconv"
)

// Checkpoint tags (DESIGN.md §13). Do not change: verifiers search for them.
const (
	TagTreeSize       = "UC-Tree-Size"
	TagRoot           = "UC-Root"
	TagPrevCheckpoint = "UC-Prev-Checkpoint"
	TagNoteKey        = "UC-Note-Key"

	KindCheckpoint        Kind = "checkpoint"
	CheckpointContentType      = "text/plain; charset=utf-8"
	maxCheckpointBytes         = 64 << 10
)

// CheckpointAnchor is one checkpoint to anchor: what its tags say, and its
// data (log.Anchor's encoding: the signed note and a consistency proof
// from Prev).
type CheckpointAnchor struct {
	LogID   [16]byte
	Size    uint64
	Root    []byte
	Prev    string // tx id of the previous anchored checkpoint, "" for the first
	NoteKey string // the note verifier key
	Data    []byte
}

// Tags returns the anchor's tags. The note key is among them so that the
// wallet's transaction signature binds it to the wallet.
func (a CheckpointAnchor) Tags() []arweave.Tag {
	tags := []arweave.Tag{
		{Name: TagAppName, Value: AppName},
		{Name: TagAppVersion, Value: AppVersion},
		{Name: TagContentType, Value: CheckpointContentType},
		{Name: TagKind, Value: string(KindCheckpoint)},
		{Name: TagLogID, Value: LogIDHex(a.LogID)},
		{Name: TagTreeSize, Value: strconv.FormatUint(a.Size, 10)},
		{Name: TagRoot, Value: hex.EncodeToString(a.Root)},
		{Name: TagNoteKey, Value: a.NoteKey},
	}
	if a.Prev != "" {
		tags = append(tags, arweave.Tag{Name: TagPrevCheckpoint, Value: a.Prev})
	}
	return tags
}

// PostCheckpoint signs and posts a checkpoint as its own L1 transaction and
// returns its id.
func PostCheckpoint(ctx context.Context, c Gateway, a CheckpointAnchor) (string, error) {
	if len(a.Root) != 32 || a.NoteKey == "" || len(a.Data) == 0 || len(a.Data) > maxCheckpointBytes {
		return "", fmt.Errorf("post checkpoint: %w: incomplete anchor", arweave.ErrTags)
	}
	id, err := c.Upload(ctx, a.Data, a.Tags())
	if err != nil {
		return "", fmt.Errorf("post checkpoint of size %d: %w", a.Size, err)
	}
	return id, nil
}

// CheckpointTx is an anchored checkpoint as GraphQL lists it (unverified).
type CheckpointTx struct {
	arweave.TxInfo
	Size    uint64
	Root    []byte
	Prev    string
	NoteKey string
}

// ParseCheckpointTags reads a checkpoint transaction's tags.
func ParseCheckpointTags(logID [16]byte, tags []arweave.Tag) (CheckpointTx, error) {
	get := map[string]string{}
	for _, t := range tags {
		if _, dup := get[t.Name]; !dup {
			get[t.Name] = t.Value
		}
	}
	var ct CheckpointTx
	if get[TagAppName] != AppName || get[TagKind] != string(KindCheckpoint) || get[TagLogID] != LogIDHex(logID) {
		return ct, fmt.Errorf("parse checkpoint tags: %w: not a checkpoint of log %s", arweave.ErrTags, LogIDHex(logID))
	}
	size, err := strconv.ParseUint(get[TagTreeSize], 10, 64)
	if err != nil || strconv.FormatUint(size, 10) != get[TagTreeSize] {
		return ct, fmt.Errorf("parse checkpoint tags: %w: %s %q", arweave.ErrTags, TagTreeSize, get[TagTreeSize])
	}
	root, err := hex.DecodeString(get[TagRoot])
	if err != nil || len(root) != 32 {
		return ct, fmt.Errorf("parse checkpoint tags: %w: %s %q", arweave.ErrTags, TagRoot, get[TagRoot])
	}
	if prev := get[TagPrevCheckpoint]; prev != "" && !arweave.ValidID(prev) {
		return ct, fmt.Errorf("parse checkpoint tags: %w: %s %q", arweave.ErrTags, TagPrevCheckpoint, prev)
	}
	if get[TagNoteKey] == "" {
		return ct, fmt.Errorf("parse checkpoint tags: %w: no %s", arweave.ErrTags, TagNoteKey)
	}
	ct.Size, ct.Root, ct.Prev, ct.NoteKey = size, root, get[TagPrevCheckpoint], get[TagNoteKey]
	return ct, nil
}

// FindCheckpoints lists the checkpoints of logID anchored by owner (an
// address), ordered by tree size (ties by height, pending last). Entries
// whose tags do not parse are left out: they are not checkpoints.
func FindCheckpoints(ctx context.Context, c Gateway, owner string, logID [16]byte) ([]CheckpointTx, error) {
	txs, err := FindSegments(ctx, c, owner, logID, KindCheckpoint, 0)
	if err != nil {
		return nil, fmt.Errorf("find checkpoints: %w", err)
	}
	out := make([]CheckpointTx, 0, len(txs))
	for _, tx := range txs {
		ct, err := ParseCheckpointTags(logID, tx.Tags)
		if err != nil || tx.Owner != owner {
			continue
		}
		ct.TxInfo = tx
		out = append(out, ct)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Size != b.Size {
			return a.Size < b.Size
		}
		if a.Pending != b.Pending {
			return !a.Pending
		}
		return a.Height < b.Height
	})
	return out, nil
}
