// Package snapgw adapts an Arweave client to snapshot.Gateway: the one
// place where snapshot publishing meets the Arweave transport. The
// transaction format stays in package arweave and ucl's common tags in
// internal/mirror; the snapshot package sees only the Gateway interface.
package snapgw

import (
	"context"
	"fmt"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/internal/mirror"
	"github.com/unlimitedcontext/ucl/snapshot"
)

// Gateway is a snapshot.Gateway over an *arweave.Client, posting through
// a bundler when it has one.
type Gateway struct {
	c *arweave.Client
	b *arweave.Bundler
}

var _ snapshot.Gateway = Gateway{}

// New returns the gateway of c; c needs a wallet for Sign and Post only.
func New(c *arweave.Client) Gateway { return Gateway{c: c} }

// NewBundled returns the gateway of c whose parts are posted through b,
// each one a data item signed by c's wallet (the bundler pays).
func NewBundled(c *arweave.Client, b *arweave.Bundler) Gateway { return Gateway{c: c, b: b} }

// Owner returns the address of the client's wallet, "" without one.
func (g Gateway) Owner() string {
	if w := g.c.Wallet(); w != nil {
		return w.Address()
	}
	return ""
}

// signed is a transaction or data item signed by Sign.
type signed struct {
	tx   *arweave.SignedTx
	item *arweave.DataItem
}

func (s signed) TxID() string {
	if s.item != nil {
		return s.item.ID
	}
	return s.tx.ID
}

// Sign signs data with the common tags of u (in mirror.SegmentMeta's
// order, Content-Type and UC-Schema-Version taken from u) followed by
// u.Tags.
func (g Gateway) Sign(ctx context.Context, data []byte, u snapshot.Upload) (snapshot.Signed, error) {
	tags := mirror.SegmentMeta{Kind: mirror.KindSnapshot, LogID: u.LogID, FirstSeq: u.FirstSeq, LastSeq: u.LastSeq, HeadHash: u.HeadHash}.Tags()
	for i := range tags {
		switch tags[i].Name {
		case mirror.TagContentType:
			tags[i].Value = u.ContentType
		case mirror.TagSchemaVersion:
			tags[i].Value = u.SchemaVersion
		}
	}
	for _, t := range u.Tags {
		tags = append(tags, arweave.Tag{Name: t.Name, Value: t.Value})
	}
	if g.b != nil {
		it, err := g.c.SignDataItem(data, tags)
		if err != nil {
			return nil, err
		}
		return signed{item: it}, nil
	}
	tx, err := g.c.SignTx(ctx, data, tags)
	if err != nil {
		return nil, err
	}
	return signed{tx: tx}, nil
}

// Post posts a transaction of Sign.
func (g Gateway) Post(ctx context.Context, s snapshot.Signed) error {
	st, ok := s.(signed)
	if !ok {
		return fmt.Errorf("post snapshot part: %T was not signed by this gateway", s)
	}
	if st.item != nil {
		if g.b == nil {
			return fmt.Errorf("post snapshot part %s: a data item needs a bundler", st.item.ID)
		}
		return g.b.Post(ctx, st.item)
	}
	return g.c.PostTx(ctx, st.tx)
}

// Find returns the snapshot transactions of logID that owner signed. A
// transaction is left out when the gateway reports another owner, its
// owner key does not hash to owner, or its common tags do not parse or
// name another kind or log.
func (g Gateway) Find(ctx context.Context, owner string, logID [16]byte) ([]snapshot.Found, error) {
	txs, err := mirror.FindSegments(ctx, g.c, owner, logID, mirror.KindSnapshot, 0)
	if err != nil {
		return nil, err
	}
	var out []snapshot.Found
	for _, t := range txs {
		if t.Owner != owner || arweave.VerifyOwner(t.OwnerKey, owner) != nil {
			continue
		}
		meta, err := mirror.ParseTags(t.Tags)
		if err != nil || meta.Kind != mirror.KindSnapshot || meta.LogID != logID {
			continue
		}
		f := snapshot.Found{ID: t.ID, LastSeq: meta.LastSeq, HeadHash: meta.HeadHash, Pending: t.Pending, DataSize: t.DataSize}
		for _, tg := range t.Tags {
			f.Tags = append(f.Tags, snapshot.Tag{Name: tg.Name, Value: tg.Value})
		}
		out = append(out, f)
	}
	return out, nil
}

// Fetch returns the data of transaction id.
func (g Gateway) Fetch(ctx context.Context, id string) ([]byte, error) {
	return g.c.FetchData(ctx, id)
}
