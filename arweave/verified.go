package arweave

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/everFinance/goar/types"
	"github.com/everFinance/goar/utils"
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
func (c *Client) FetchVerifiedTx(ctx context.Context, id string, limit int64) (*VerifiedTx, error) {
	if !validID(id) {
		return nil, fmt.Errorf("fetch transaction: invalid id %q", id)
	}
	b, status, err := c.do(ctx, http.MethodGet, "/tx/"+id, nil, "", c.opt.MaxResponseBytes)
	if errors.Is(err, ErrNotFound) {
		// Gateways serve no /tx/{id} for a bundled data item (an upload
		// through a bundler): check it as an item.
		return c.fetchVerifiedItem(ctx, id, limit, err)
	}
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

// fetchVerifiedItem is FetchVerifiedTx for an id /tx/{id} does not serve:
// the signed fields come from GraphQL, the data from GET /{id}, and
// VerifySigned checks the item's own signature by its owner (nothing of
// it is taken on the gateway's word but the block height). notFound is
// returned when GraphQL does not know the id either.
func (c *Client) fetchVerifiedItem(ctx context.Context, id string, limit int64, notFound error) (*VerifiedTx, error) {
	txs, err := c.FindTxs(ctx, TxQuery{IDs: []string{id}, MaxPages: 1})
	if err != nil {
		return nil, fmt.Errorf("fetch transaction %s: %w", id, err)
	}
	var t *TxInfo
	for i := range txs {
		if txs[i].ID == id {
			t = &txs[i]
		}
	}
	if t == nil {
		return nil, fmt.Errorf("fetch transaction %s: %w", id, notFound)
	}
	size := t.DataSize
	if size <= 0 || size > limit {
		return nil, fmt.Errorf("fetch transaction %s: %w: data size %d", id, ErrTxSignature, size)
	}
	data, err := c.FetchDataLimit(ctx, id, size)
	if err != nil {
		return nil, fmt.Errorf("fetch transaction %s: %w", id, err)
	}
	if int64(len(data)) != size {
		return nil, fmt.Errorf("fetch transaction %s: %w: %d bytes served, %d reported", id, ErrTxSignature, len(data), size)
	}
	if err := VerifySigned(*t, data); err != nil {
		return nil, fmt.Errorf("fetch transaction %s: %w", id, err)
	}
	owner, err := AddressOf(t.OwnerKey)
	if err != nil {
		return nil, fmt.Errorf("fetch transaction %s: %w", id, err)
	}
	return &VerifiedTx{ID: id, Owner: owner, Tags: t.Tags, Data: data, Height: t.Height, Pending: t.Pending}, nil
}
