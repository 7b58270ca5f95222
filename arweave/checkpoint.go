package arweave

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"

	"github.com/everFinance/goar/types"
	"github.com/everFinance/goar/utils"
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

var (
	// ErrTxSignature is returned when a fetched transaction's id, RSA-PSS
	// signature, owner address or data root does not verify.
	ErrTxSignature = errors.New("arweave: transaction does not verify")
	// ErrTxPending is returned by FetchVerifiedTx when the gateway holds
	// the transaction as pending and does not serve its fields yet (a
	// node's 202 answer): it cannot be checked until it is mined.
	ErrTxPending = errors.New("arweave: transaction pending, its fields not served yet")
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
func (a CheckpointAnchor) Tags() []Tag {
	tags := []Tag{
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
		tags = append(tags, Tag{Name: TagPrevCheckpoint, Value: a.Prev})
	}
	return tags
}

// PostCheckpoint signs and posts a checkpoint as its own L1 transaction and
// returns its id.
func PostCheckpoint(ctx context.Context, c *Client, a CheckpointAnchor) (string, error) {
	if len(a.Root) != 32 || a.NoteKey == "" || len(a.Data) == 0 || len(a.Data) > maxCheckpointBytes {
		return "", fmt.Errorf("post checkpoint: %w: incomplete anchor", ErrTags)
	}
	id, err := c.Upload(ctx, a.Data, a.Tags())
	if err != nil {
		return "", fmt.Errorf("post checkpoint of size %d: %w", a.Size, err)
	}
	return id, nil
}

// CheckpointTx is an anchored checkpoint as GraphQL lists it (unverified).
type CheckpointTx struct {
	TxInfo
	Size    uint64
	Root    []byte
	Prev    string
	NoteKey string
}

// ParseCheckpointTags reads a checkpoint transaction's tags.
func ParseCheckpointTags(logID [16]byte, tags []Tag) (CheckpointTx, error) {
	get := map[string]string{}
	for _, t := range tags {
		if _, dup := get[t.Name]; !dup {
			get[t.Name] = t.Value
		}
	}
	var ct CheckpointTx
	if get[TagAppName] != AppName || get[TagKind] != string(KindCheckpoint) || get[TagLogID] != LogIDHex(logID) {
		return ct, fmt.Errorf("parse checkpoint tags: %w: not a checkpoint of log %s", ErrTags, LogIDHex(logID))
	}
	size, err := strconv.ParseUint(get[TagTreeSize], 10, 64)
	if err != nil || strconv.FormatUint(size, 10) != get[TagTreeSize] {
		return ct, fmt.Errorf("parse checkpoint tags: %w: %s %q", ErrTags, TagTreeSize, get[TagTreeSize])
	}
	root, err := hex.DecodeString(get[TagRoot])
	if err != nil || len(root) != 32 {
		return ct, fmt.Errorf("parse checkpoint tags: %w: %s %q", ErrTags, TagRoot, get[TagRoot])
	}
	if prev := get[TagPrevCheckpoint]; prev != "" && !validID(prev) {
		return ct, fmt.Errorf("parse checkpoint tags: %w: %s %q", ErrTags, TagPrevCheckpoint, prev)
	}
	if get[TagNoteKey] == "" {
		return ct, fmt.Errorf("parse checkpoint tags: %w: no %s", ErrTags, TagNoteKey)
	}
	ct.Size, ct.Root, ct.Prev, ct.NoteKey = size, root, get[TagPrevCheckpoint], get[TagNoteKey]
	return ct, nil
}

// FindCheckpoints lists the checkpoints of logID anchored by owner (an
// address), ordered by tree size (ties by height, pending last). Entries
// whose tags do not parse are left out: they are not checkpoints.
func FindCheckpoints(ctx context.Context, c *Client, owner string, logID [16]byte) ([]CheckpointTx, error) {
	txs, err := c.FindSegments(ctx, owner, logID, KindCheckpoint)
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

// VerifiedTx is a transaction whose signature, owner and data were checked
// here, trusting nothing the gateway says about them.
type VerifiedTx struct {
	ID      string
	Owner   string // address: base64url(SHA-256(owner modulus))
	Tags    []Tag
	Data    []byte
	Height  int64 // block height, 0 when pending (the one fact taken from the gateway)
	Pending bool
}

// FetchVerifiedTx fetches transaction id (GET /tx/{id}) and its data
// (GET /{id}, at most limit bytes), and checks that the id is the hash of
// the signature, that the RSA-PSS signature verifies under the owner key
// over the transaction (tags and data root included), and that the data
// hashes to the signed data root. The owner address is computed from the
// key, not taken from the gateway.
func FetchVerifiedTx(ctx context.Context, c *Client, id string, limit int64) (*VerifiedTx, error) {
	if !validID(id) {
		return nil, fmt.Errorf("fetch transaction: invalid id %q", id)
	}
	b, status, err := c.do(ctx, http.MethodGet, "/tx/"+id, nil, "", c.opt.MaxResponseBytes)
	if err != nil {
		return nil, fmt.Errorf("fetch transaction %s: %w", id, err)
	}
	if status == http.StatusAccepted {
		return nil, fmt.Errorf("fetch transaction %s: %w", id, ErrTxPending)
	}
	var tx types.Transaction
	if err := json.Unmarshal(b, &tx); err != nil {
		return nil, fmt.Errorf("fetch transaction %s: %w: %v", id, ErrTxSignature, err)
	}
	if tx.ID != id {
		return nil, fmt.Errorf("fetch transaction %s: %w: the gateway answered for %q", id, ErrTxSignature, tx.ID)
	}
	if tx.Format != 2 {
		return nil, fmt.Errorf("fetch transaction %s: %w: format %d", id, ErrTxSignature, tx.Format)
	}
	// The data is signed through the data root; the transaction's own data
	// field may be left out by the gateway, so the signature is checked
	// without it.
	tx.Data = ""
	if err := utils.VerifyTransaction(tx); err != nil {
		return nil, fmt.Errorf("fetch transaction %s: %w: signature: %v", id, ErrTxSignature, err)
	}
	owner, err := AddressOf(tx.Owner)
	if err != nil {
		return nil, fmt.Errorf("fetch transaction %s: %w", id, err)
	}
	tags, err := utils.TagsDecode(tx.Tags)
	if err != nil {
		return nil, fmt.Errorf("fetch transaction %s: %w: tags: %v", id, ErrTxSignature, err)
	}
	size, err := strconv.ParseInt(tx.DataSize, 10, 64)
	if err != nil || size <= 0 || size > limit {
		return nil, fmt.Errorf("fetch transaction %s: %w: data size %q", id, ErrTxSignature, tx.DataSize)
	}
	data, err := c.FetchDataLimit(ctx, id, size)
	if err != nil {
		return nil, fmt.Errorf("fetch transaction %s: %w", id, err)
	}
	root, err := utils.Base64Decode(tx.DataRoot)
	if err != nil || int64(len(data)) != size || !bytes.Equal(arweaveChunks(data).DataRoot, root) {
		return nil, fmt.Errorf("fetch transaction %s: %w: the data does not match the signed data root", id, ErrTxSignature)
	}
	vt := &VerifiedTx{ID: id, Owner: owner, Tags: tags, Data: data}
	st, err := c.Status(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("fetch transaction %s: %w", id, err)
	}
	vt.Pending = st.State != StateConfirmed
	vt.Height = st.Height
	return vt, nil
}
