package mirror

import (
	"context"

	"github.com/unlimitedcontext/ucl/arweave"
)

// Gateway is all the mirror asks of Arweave: the transport (package
// arweave) provides it, and *arweave.Client satisfies it as is. Uploads of
// segment batches go through an arweave.Uploader (SyncConfig.Uploader);
// everything else here. TestGatewayConformance holds an implementation to
// the behaviour the mirror relies on.
type Gateway interface {
	// Address is the address of the wallet that signs uploads, "" for a
	// read-only gateway.
	Address() string
	// Upload signs data with tags as one L1 transaction, posts it and
	// returns its id.
	Upload(ctx context.Context, data []byte, tags []arweave.Tag) (string, error)
	// FindTxs lists every transaction (or bundled item) matching q, with
	// the signed fields VerifySigned needs, following pages to the end.
	FindTxs(ctx context.Context, q arweave.TxQuery) ([]arweave.TxInfo, error)
	// FetchDataLimit returns the data of id, failing with ErrTooLarge past
	// limit bytes and ErrNotFound when the gateway has none.
	FetchDataLimit(ctx context.Context, id string, limit int64) ([]byte, error)
	// FetchVerifiedTx fetches L1 transaction id and its data (at most limit
	// bytes) and checks its signature, owner and data root itself.
	FetchVerifiedTx(ctx context.Context, id string, limit int64) (*arweave.VerifiedTx, error)
	// Status reports whether id is unknown, pending or confirmed (and at
	// which height).
	Status(ctx context.Context, id string) (arweave.TxStatus, error)
}

var _ Gateway = (*arweave.Client)(nil)

// pageSize is GraphQL's page cap.
const pageSize = 100

// FindSegments returns the uploads of kind for logID signed by owner (an
// address), in gateway order, following at most maxPages pages (0: the
// gateway's default).
func FindSegments(ctx context.Context, g Gateway, owner string, logID [16]byte, kind Kind, maxPages int) ([]arweave.TxInfo, error) {
	return g.FindTxs(ctx, arweave.TxQuery{
		MaxPages: maxPages,
		Owners:   []string{owner},
		Tags: []arweave.Tag{
			{Name: TagAppName, Value: AppName},
			{Name: TagLogID, Value: LogIDHex(logID)},
			{Name: TagKind, Value: string(kind)},
		},
	})
}

// FindGrants returns grant uploads addressed to grantee (an address), from
// any owner.
func FindGrants(ctx context.Context, g Gateway, grantee string) ([]arweave.TxInfo, error) {
	return g.FindTxs(ctx, arweave.TxQuery{Tags: []arweave.Tag{
		{Name: TagAppName, Value: AppName},
		{Name: TagKind, Value: string(KindGrant)},
		{Name: TagGrantee, Value: grantee},
	}})
}

// BundleTags are the tags of the L1 transaction carrying a bundle of
// segments (after Bundle-Format and Bundle-Version): pass them to
// arweave.NewBundleUploader.
func BundleTags() []arweave.Tag {
	return []arweave.Tag{
		{Name: TagAppName, Value: AppName},
		{Name: TagAppVersion, Value: AppVersion},
	}
}

// Uploads returns the uploader of mode: one L1 transaction per segment, or
// with bundle one ANS-104 bundle per batch (tagged BundleTags).
func Uploads(c *arweave.Client, bundle bool) arweave.Uploader {
	if bundle {
		return arweave.NewBundleUploader(c, BundleTags())
	}
	return arweave.NewL1Uploader(c)
}
