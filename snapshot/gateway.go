package snapshot

import (
	"context"
	"errors"

	"github.com/unlimitedcontext/ucl/log"
)

// ErrNoWallet is returned by Push when the gateway has no wallet to sign
// the parts with.
var ErrNoWallet = errors.New("snapshot: no wallet to sign with")

// Gateway is what publishing needs of Arweave. Snapshot code speaks no
// Arweave itself: the engine hands it an adapter over its Arweave client
// (internal/snapgw), which owns the transaction format and ucl's common
// tags. The conformance test of that adapter runs against arlocal.
type Gateway interface {
	// Owner returns the address of the wallet that signs, "" when there
	// is none.
	Owner() string
	// Sign signs data as one transaction carrying ucl's common tags for
	// u (UC-Kind snapshot) followed by u.Tags, and returns it unposted:
	// Push signs every part before it posts the first.
	Sign(ctx context.Context, data []byte, u Upload) (Signed, error)
	// Post posts a transaction Sign returned.
	Post(ctx context.Context, s Signed) error
	// Find returns the snapshot transactions of logID that owner signed:
	// only those whose owner key hashes to owner and whose common tags
	// parse and name logID, in any order.
	Find(ctx context.Context, owner string, logID [16]byte) ([]Found, error)
	// Fetch returns the data of transaction id.
	Fetch(ctx context.Context, id string) ([]byte, error)
}

// Tag is one transaction tag.
type Tag struct {
	Name, Value string
}

// Upload describes one part's transaction: its common ucl tags, then
// Tags.
type Upload struct {
	ContentType   string
	SchemaVersion string
	LogID         [16]byte
	FirstSeq      uint64
	LastSeq       uint64
	HeadHash      log.Hash
	Tags          []Tag
}

// Signed is a signed transaction not posted yet.
type Signed interface {
	TxID() string
}

// Found is a snapshot transaction on the gateway: what its common tags
// say, and all its tags.
type Found struct {
	ID       string
	LastSeq  uint64
	HeadHash log.Hash
	Tags     []Tag
	Pending  bool // not mined yet
	DataSize int64
}
